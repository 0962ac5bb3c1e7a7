"""One class-data-sharing archive of Spark's JVM classes for a test run (issue 30).

Every Spark JVM the suite starts (the workers' sessions, and each `cdc run` a test spawns,
which inherits the environment) loads and verifies the same ~12k classes from the same jars
before it does any work: about a third of a small job's wall time on this machine. Java's
dynamic CDS (`-XX:ArchiveClassesAtExit`, JDK 13+) records the classes one JVM loaded; later
JVMs map that archive instead of parsing the jars again. A minimal Spark session plus two jobs
took 17.7 s without it and 11.6 s with it here.

The archive is made once per machine and Spark/Java version (in .pytest_cache) by running a
small `cdc` sink query (`python -m tests.support.spark_cds`: the classes a `cdc run` loads, the
Python data source, foreachBatch, the shuffle and the Delta apply), beside the first tests. It
is a pure speed-up with the same semantics: a JVM that cannot use the archive (none yet,
another classpath, a changed JDK) starts as it would without it, silently (`-Xlog:cds=off`),
and a failed build leaves the suite as it was.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _key() -> str | None:
    """What the archive depends on: the java binary and Spark's jars (names and sizes)."""
    java = shutil.which("java")
    if java is None:
        return None
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    real = Path(java).resolve()
    parts = [str(real), str(real.stat().st_size), str(real.stat().st_mtime_ns), pyspark.__version__]
    parts += sorted(f"{p.name}:{p.stat().st_size}" for p in jars.glob("*.jar"))
    parts.append(os.environ.get("SPARK_SUBMIT_OPTS", ""))  # the flags it is made with, and used with
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


class ArchiveBuild:
    """The archive's options in SPARK_SUBMIT_OPTS at once; the archive itself made on a thread.

    A JVM started before the archive exists runs without it (silently); the archive appears
    whole (a rename), so each JVM either maps all of it or none. The build runs beside the
    first tests instead of before them: nothing waits for it.
    """

    def __init__(self, cache_dir: Path) -> None:
        self.report = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        outside = os.environ.get("SPARK_SUBMIT_OPTS", "")
        if "SharedArchiveFile" in outside:  # set by whoever started us (the xdist controller)
            return
        key = _key()
        if key is None:
            self.report = "Spark class-data archive: no java on PATH; Spark starts without it"
            return
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.archive = cache_dir / f"spark-{key}.jsa"
        os.environ["SPARK_SUBMIT_OPTS"] = f"{outside} -XX:SharedArchiveFile={self.archive} {_QUIET}".strip()
        if self.archive.exists():
            self.report = f"Spark class-data archive: {self.archive}"
            return
        self._lock = open(cache_dir / "lock", "w")  # noqa: SIM115 - held until the build ends
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self.report = f"Spark class-data archive: being made by another test run ({self.archive})"
            return
        if self.archive.exists():  # made while we took the lock
            self._lock.close()
            self.report = f"Spark class-data archive: {self.archive}"
            return
        # The process starts here, before any test (a unit test's tier check refuses processes
        # started while it runs); the thread only waits for it and renames its archive.
        self._partial = self.archive.with_suffix(".partial")
        self._partial.unlink(missing_ok=True)
        env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
        env["SPARK_SUBMIT_OPTS"] = f"{outside} -XX:ArchiveClassesAtExit={self._partial} {_QUIET}".strip()
        self._log = self.archive.with_suffix(".log")
        with open(self._log, "wb") as out:
            argv = [sys.executable, "-m", "tests.support.spark_cds"]
            self._proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=out, start_new_session=True)
        self.report = "Spark class-data archive: still being made when the run ended"
        self._thread = threading.Thread(target=self._finish, name="spark-cds", daemon=True)
        self._thread.start()

    def _finish(self) -> None:
        try:
            error = self._wait()
        finally:
            self._lock.close()
        self.report = (
            f"Spark class-data archive: made {self.archive} during the run"
            if not error
            else f"Spark class-data archive: not made ({error}); Spark started without it"
        )

    def _wait(self) -> str:
        """Wait for the workload's JVM to write its loaded classes at exit; '' when it did."""
        assert self._proc is not None
        try:
            code: int | None = self._proc.wait(300)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
            code = None
        partial = self._partial
        if self._stopping.is_set():
            partial.unlink(missing_ok=True)
            return "the test run ended first"
        if code != 0 or not partial.exists() or partial.stat().st_size == 0:
            partial.unlink(missing_ok=True)
            return f"the workload exited {code}, see {self._log}"
        partial.rename(self.archive)  # whole or absent: a JVM never maps a half-written archive
        return ""

    def stop(self) -> None:
        """At the end of the test run: a build still going is ended (the next run makes it)."""
        if self._thread is None:
            return
        self._stopping.set()
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._thread.join(30)


def _workload() -> None:
    """A `cdc` sink query on the embedded log into Delta, twice: the classes a `cdc run` loads."""
    from cdc.log.embedded import EmbeddedLog
    from cdc_spark.source import register
    from tests.spark.conftest import spark_builder
    from tests.spark.events import Table, produce
    from tests.spark.helpers import run_available_now

    topic = "cds.inv.items"
    with tempfile.TemporaryDirectory() as tmp:
        t = Table(topic)
        session = spark_builder().getOrCreate()
        register(session)
        source = {"state.dir": f"{tmp}/state", "topics": topic}
        for batch in range(2):
            with EmbeddedLog(source["state.dir"]) as log:
                records = [
                    t.event("c" if batch == 0 else "u", i, {"name": f"n{i}", "qty": i}, batch * 100 + i)
                    for i in range(50)
                ]
                produce(log, topic, records, partitions=2)
            run_available_now(session, source, {"target": "delta", "path": f"{tmp}/lake"}, f"{tmp}/ckpt")
        jvm = session.sparkContext._gateway.proc  # the JVM writes the archive as it exits
        session.stop()
    jvm.stdin.close()  # the gateway ends when its stdin closes; wait for the archive to be written
    jvm.wait(240)


if __name__ == "__main__":
    _workload()

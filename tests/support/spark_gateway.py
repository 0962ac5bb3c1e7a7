"""One warm Spark JVM per pytest process for the `cdc run`s a test waits for (issue 30).

A `cdc run` spends about half of a small job's wall time starting its own Spark JVM and
warming it: loading Spark's classes, interpreting Catalyst and generating code for its first
plans. PySpark can attach to a JVM that is already running instead
(`PYSPARK_GATEWAY_PORT` / `PYSPARK_GATEWAY_SECRET`, the way notebooks and Spark's own Python
tests attach), so this module keeps one such JVM per pytest process, and `run_cdc("run", ...)`
hands it to the `cdc` process it starts. Each run still makes its own SparkContext and session
in that JVM and stops them at its end; a run that did not (it failed, or was killed at its
timeout) has its streaming queries and session stopped here before the next run. A small job
took 15 to 16 s with a JVM of its own and 8 to 10 s attached, on this machine.

Only runs whose JVM is not under test attach (`eligible`): not `--verbose` (another log4j
setup), no `spark.conf` and no non-local master in the job (JVM-level settings such as the
driver's memory or options apply only at a JVM's launch), no environment of the test's own,
and never a process a test kills or signals (`CdcProcess`, the chaos harness): a killed
driver would leave its Spark jobs running in a shared JVM. A test that asserts on the JVM's
own output passes `own_jvm=True`. The JVM's console goes to a log file, not to the run's
stderr. `CDC_TESTS_SPARK_GATEWAY=off` turns it off.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
_QUIET_LOG4J = REPO / "cdc" / "jobs" / "spark-log4j2.properties"  # what `cdc run` sets without --verbose
_STOP_TIMEOUT_S = 120
# What the JVM's Python workers and its own start-up take from the environment at launch: a run
# whose environment differs in these starts a JVM of its own.
_LAUNCH_ENV = ("JAVA_HOME", "SPARK_HOME", "SPARK_SUBMIT_OPTS", "PYSPARK_PYTHON", "PYTHONPATH", "PYTHONHASHSEED", "TZ")


def enabled() -> bool:
    return os.environ.get("CDC_TESTS_SPARK_GATEWAY", "").lower() != "off"


def eligible(args: tuple[str, ...]) -> bool:
    """Whether `cdc <args>` may run in the shared JVM (see the module's docstring)."""
    if not args or args[0] != "run" or "--verbose" in args or "-v" in args:
        return False
    jobs = [a for a in args[1:] if a.endswith((".yaml", ".yml"))]
    if len(jobs) != 1:
        return False
    try:
        spec = yaml.safe_load(Path(jobs[0]).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return False  # the run reports its own error, with a JVM of its own if it gets that far
    spark = spec.get("spark") if isinstance(spec, dict) else None
    if spark is None:
        return True
    if not isinstance(spark, dict) or spark.get("conf"):
        return False
    return str(spark.get("master", "local[2]")).startswith("local")


class SharedSparkJvm:
    """A Spark JVM started on first use and attached to by `cdc run` processes, one at a time."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self._gateway: Any = None
        self._launch_env: dict[str, str | None] = {}
        self._busy = threading.Lock()

    def acquire(self) -> dict[str, str] | None:
        """The environment that attaches a `cdc` process to this JVM, or None: start one of its own.

        None when another run holds the JVM, when the test's environment differs from the JVM's,
        or when the JVM cannot be started. Call `release()` after the process has ended.
        """
        if not self._busy.acquire(blocking=False):
            return None
        try:
            if self._gateway is not None and self._launch_env != _launch_env():
                self._busy.release()
                return None
            if self._gateway is None:
                self._start()
            params = self._gateway.gateway_parameters
            return {"PYSPARK_GATEWAY_PORT": str(params.port), "PYSPARK_GATEWAY_SECRET": params.auth_token}
        except Exception:
            self.close()
            self._busy.release()
            return None

    def release(self) -> None:
        """After a run: stop whatever it left running; a JVM that cannot be cleaned is closed."""
        try:
            if self._gateway is not None and not self._stop_leftovers():
                self.close()
        finally:
            self._busy.release()

    def close(self) -> None:
        gateway, self._gateway = self._gateway, None
        if gateway is None:
            return
        proc = getattr(gateway, "proc", None)
        with contextlib.suppress(Exception):  # a JVM that is already gone
            gateway.shutdown()
        if proc is not None:
            proc.kill()
            proc.wait(30)

    def _start(self) -> None:
        from pyspark import SparkConf
        from pyspark.java_gateway import launch_gateway

        conf = SparkConf(loadDefaults=False)
        conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_QUIET_LOG4J}")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        self._launch_env = _launch_env()

    def _stop_leftovers(self) -> bool:
        """Stop the streaming queries and session a run left; True when the JVM is clean."""
        done = threading.Event()
        clean: list[bool] = []

        def stop() -> None:
            try:
                session_class = self._gateway.jvm.org.apache.spark.sql.SparkSession
                for option in (session_class.getActiveSession(), session_class.getDefaultSession()):
                    if option.isDefined() and not option.get().sparkContext().isStopped():
                        session = option.get()
                        for query in session.streams().active():
                            query.stop()
                        session.stop()
                session_class.clearActiveSession()
                session_class.clearDefaultSession()
                clean.append(True)
            except Exception:
                clean.append(False)
            finally:
                done.set()

        threading.Thread(target=stop, name="spark-gateway-cleanup", daemon=True).start()
        return done.wait(_STOP_TIMEOUT_S) and clean == [True]


def _launch_env() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in _LAUNCH_ENV}


_shared: SharedSparkJvm | None = None


def install(log_path: Path) -> None:
    """Offer a shared JVM to this pytest process's `run_cdc` calls (started on first use)."""
    global _shared
    if enabled():
        log_path.unlink(missing_ok=True)  # this run's JVMs only
        _shared = SharedSparkJvm(log_path)


def uninstall() -> None:
    global _shared
    if _shared is not None:
        _shared.close()
        _shared = None


def shared() -> SharedSparkJvm | None:
    return _shared

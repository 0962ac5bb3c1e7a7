"""Run the `cdc` CLI as a separate process, as a user (or a supervisor) would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.support import spark_gateway

REPO = Path(__file__).resolve().parents[2]


def cdc_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "cdc.cli.main", *args]


def run_cdc(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 60, own_jvm: bool = False
) -> subprocess.CompletedProcess[str]:
    """`cdc <args>` to its end. A `cdc run` attaches to the pytest process's warm Spark JVM when
    it may (tests/support/spark_gateway.py); `own_jvm=True` for a test of the JVM's own output."""
    jvm = spark_gateway.shared() if not own_jvm and env is None and spark_gateway.eligible(args) else None
    attach = jvm.acquire() if jvm is not None else None
    try:
        return subprocess.run(
            cdc_argv(*args),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {}), **(attach or {})},
            cwd=REPO,
        )
    finally:
        if attach is not None and jvm is not None:
            jvm.release()


class CdcProcess:
    """A background `cdc` process whose output goes to a log file (read it on failure)."""

    def __init__(self, *args: str, log_path: Path, env: Mapping[str, str] | None = None) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in wait/kill
        self.proc = subprocess.Popen(
            cdc_argv(*args), stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=REPO
        )

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._log.close()

    def terminate(self, timeout: float = 30) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        finally:
            self._log.close()
        return code


def wait_for(condition: Callable[[], bool], timeout: float, what: str, proc: CdcProcess | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if proc is not None and not proc.alive():
            raise AssertionError(f"cdc exited while waiting for {what}:\n{proc.output()[-4000:]}")
        time.sleep(0.1)
    tail = proc.output()[-4000:] if proc is not None else ""
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{tail}")


def write_props(path: Path, props: Mapping[str, object]) -> Path:
    """A .properties file from a dict (values via str())."""
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def kill_group_at(
    proc: subprocess.Popen[bytes], count: Callable[[], int], at: int, timeout: float, what: Callable[[], str]
) -> int:
    """SIGKILL the process group of `proc` (started with start_new_session) once `count()` reaches `at`.

    The group runs in short slices (SIGCONT, 20 ms, SIGSTOP) and is counted while stopped, so the kill
    leaves exactly what was counted. A count of the embedded log moves in whole transactions, and the
    source task writes what it polled while the log was busy as one transaction (up to 20k records), so
    a kill lands on the first transaction boundary at or past `at`, never between. Returns the count at
    the kill; `what()` describes the run for a failure.
    """
    deadline = time.monotonic() + timeout
    try:
        while True:
            os.killpg(proc.pid, signal.SIGSTOP)
            n = count()
            if n >= at:
                return n
            assert proc.poll() is None, f"the process exited before {at} records ({n}):\n{what()}"
            assert time.monotonic() < deadline, f"{n} records of {at} after {timeout} s:\n{what()}"
            os.killpg(proc.pid, signal.SIGCONT)
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        os.killpg(proc.pid, signal.SIGCONT)
        proc.wait(30)

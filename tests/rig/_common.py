"""Process control and availability policy shared by the server rigs."""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

START_TIMEOUT = 30.0


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> NoReturn:
    """Skip locally, but fail in CI: a CI run that silently skips proves nothing."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true turns this into an error)", pytrace=False)
    pytest.skip(reason)


@functools.cache
def docker_available() -> bool:
    try:
        import docker

        return bool(docker.from_env(timeout=3).ping())
    except Exception:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_on_free_port(daemon_for: Callable[[int], Daemon], attempts: int = 5) -> tuple[int, Daemon]:
    """Start a daemon on a free port, trying another port if the chosen one was taken meanwhile.

    A port found free can be taken before the server binds it (by a server the other pytest
    worker starts, or an outgoing connection). The daemon's `ready` check must confirm it
    reached *this* server (its data directory), so a neighbour on the port is never mistaken
    for it; the daemon then exits on the bind error and the next port is tried.
    """
    for attempt in range(1, attempts + 1):
        port = free_port()
        daemon = daemon_for(port)
        try:
            daemon.start()
            return port, daemon
        except RuntimeError:
            if attempt == attempts or "in use" not in log_tail(daemon.log).lower():
                raise
    raise AssertionError("unreachable")


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def unique_name(prefix: str = "t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


@dataclass(frozen=True)
class RunAs:
    """OS account for servers that refuse to run as root (PostgreSQL)."""

    uid: int
    gid: int

    @classmethod
    def for_postgres(cls) -> RunAs | None:
        """None means "run as the current user"; as root we must drop to `postgres`."""
        if os.geteuid() != 0:
            return None
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            unavailable("running as root, but there is no 'postgres' OS user to run PostgreSQL")
        return cls(pw.pw_uid, pw.pw_gid)

    def popen_kwargs(self) -> dict[str, object]:
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def popen_kwargs(run_as: RunAs | None) -> dict[str, object]:
    return run_as.popen_kwargs() if run_as else {}


@contextmanager
def temp_dir(prefix: str, run_as: RunAs | None = None) -> Iterator[Path]:
    # Not pytest's tmp_path: that lives under a root-only 0700 directory that the
    # postgres user cannot traverse, and its long paths risk the 107-byte socket limit.
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        if run_as:
            os.chown(path, run_as.uid, run_as.gid)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_checked(argv: list[str], log: Path, run_as: RunAs | None = None, **kw: object) -> None:
    with log.open("ab") as out:
        rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, **popen_kwargs(run_as), **kw)
    if rc.returncode:
        raise RuntimeError(f"{argv[0]} exited {rc.returncode}; log {log}:\n{log_tail(log)}")


class Daemon:
    """A server process that can be stopped, SIGKILLed and restarted on the same port.

    It runs in its own session so that kill() can SIGKILL the whole process group
    (PostgreSQL's backends included) without touching pytest, and so that a ^C
    in the terminal does not reach it before the fixture teardown does.
    """

    def __init__(
        self,
        name: str,
        argv: list[str],
        log: Path,
        ready: Callable[[], bool],
        *,
        cwd: Path,
        run_as: RunAs | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
    ) -> None:
        self.name = name
        self.argv = argv
        self.log = log
        self.ready = ready
        self.cwd = cwd
        self.run_as = run_as
        self.stop_signal = stop_signal
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = START_TIMEOUT) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                start_new_session=True,
                **popen_kwargs(self.run_as),  # type: ignore[arg-type]
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                self._fail(f"exited with {self.proc.returncode} during start")
            try:
                if self.ready():
                    return
            except Exception:
                pass
            if time.monotonic() > deadline:
                self.kill()
                self._fail(f"not ready after {timeout:.0f}s")
            time.sleep(0.02)

    def _fail(self, what: str) -> NoReturn:
        raise RuntimeError(f"{self.name} {what}: {' '.join(self.argv)}\nlog {self.log}:\n{log_tail(self.log)}")

    def kill(self) -> None:
        if self.proc is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout: float = 15.0) -> None:
        if not self.alive:
            self.kill()  # reaps stragglers in the group even if the leader is gone
            return
        assert self.proc is not None
        self.proc.send_signal(self.stop_signal)
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)
        self.kill()

    def restart(self) -> None:
        self.stop()
        self.start()

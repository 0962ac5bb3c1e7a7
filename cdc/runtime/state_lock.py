"""One writer per state.dir: an flock on `<state.dir>/cdc.lock`, the owner of that rule.

Every process that writes a state.dir takes its lock first: `cdc run` (the Spark checkpoint,
and with the embedded transport the log), `cdc standalone` and `cdc worker` on the embedded
transport (the log `cdc.db`, which holds the offsets, configs and status), and `cdc offsets
reset`. Two of them on one directory would run the same connectors from the same offsets (a
MySQL source then fails with error 4052, two replicas with one server id) and interleave a
job's Spark checkpoint. A Kafka transport keeps the worker's state in the brokers' topics and
writes nothing under state.dir, so a worker on Kafka takes no lock (`writes_state_dir`).

The lock file holds the holder's pid and what it is (`cdc standalone`, `job shop`), so a
refusal names both. Commands that only read (`cdc status`, `validate`, `verify`) never take
the lock: `lock_holder` asks who holds it without writing a byte. The kernel drops an flock
when its process dies, even by SIGKILL, so a crashed writer never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from cdc.api.errors import ConfigException, ConnectException
from cdc.log.private_files import make_private_dir, open_private_file
from cdc.runtime.worker_config import WorkerConfig

LOCK_FILE = "cdc.lock"
# A reader's probe (`lock_holder`) holds a shared flock for microseconds; a writer starting at
# that instant waits this long before it believes the directory is taken.
_PROBE_GRACE_S = 0.5


@dataclass(frozen=True)
class LockHolder:
    """Who holds a state.dir: a pid and what the process is (empty when the file does not say)."""

    pid: int | None
    role: str = ""

    def describe(self) -> str:
        pid = f"pid {self.pid}" if self.pid is not None else "pid unknown"
        return f"{self.role} ({pid})" if self.role else f"another cdc process ({pid})"


class StateDirInUse(ConnectException):
    """Another process holds the state.dir's lock."""

    def __init__(self, message: str, holder: LockHolder) -> None:
        super().__init__(message)
        self.holder = holder


def job_role(name: str) -> str:
    """What a job's process writes into the lock (`cdc status` looks for its job's name there)."""
    return f"job {name}"


def _parse(data: bytes) -> LockHolder:
    lines = data.decode(errors="replace").splitlines()
    first = lines[0].strip() if lines else ""
    return LockHolder(int(first) if first.isdigit() else None, lines[1].strip() if len(lines) > 1 else "")


class StateDirLock:
    """The lock of one state.dir, taken by a process that writes there.

    `role` says what the process is (`cdc standalone`, `job_role(name)`); `key` is the setting
    that names the directory, for the advice of a refusal (`transport.state.dir` in a job file).
    """

    def __init__(self, state_dir: str | Path, role: str, key: str = "state.dir") -> None:
        self.path = Path(state_dir) / LOCK_FILE
        self.role = role
        self.key = key
        self._fd: int | None = None

    @classmethod
    def for_job(cls, state_dir: str | Path, name: str) -> StateDirLock:
        return cls(state_dir, job_role(name), "transport.state.dir")

    def acquire(self, action: str = "start it") -> StateDirLock:
        """Take the lock, or raise StateDirInUse naming the holder's pid; `action` completes the
        advice "stop it before you …"."""
        try:
            make_private_dir(self.path.parent)  # state.dir: 0700, as the embedded log makes it
            fd = open_private_file(self.path)  # 0600 (issue 17)
        except (OSError, ValueError) as e:
            # mkdir says "File exists" when state.dir (or a parent) is a file
            if isinstance(e, (FileExistsError, NotADirectoryError)):
                reason = "a file is in the way"
            else:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise ConfigException(
                f"cannot create the lock {self.path} ({reason}); set {self.key} to a writable directory", self.key
            ) from None
        deadline = time.monotonic() + _PROBE_GRACE_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                holder = _parse(os.pread(fd, 4096, 0))
                os.close(fd)
                raise StateDirInUse(self._refusal(holder, action), holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{self.role}\n".encode(), 0)
        self._fd = fd
        return self

    def _refusal(self, holder: LockHolder, action: str) -> str:
        pid = str(holder.pid) if holder.pid is not None else "?"
        if holder.role == self.role and self.role.startswith("job "):
            return (
                f"job {self.role.removeprefix('job ')!r} is running (pid {pid}, lock {self.path}); "
                f"stop it (Ctrl-C, or kill {pid}) before you {action}"
            )
        return (
            f"{self.path.parent} is in use by {holder.describe()}, which holds {self.path}: one process writes a "
            f"state.dir at a time; stop it (kill {pid}) before you {action}, or set {self.key} to a directory of "
            "this one's own"
        )

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> StateDirLock:
        return self if self._fd is not None else self.acquire()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def lock_holder(state_dir: str | Path, key: str = "state.dir") -> LockHolder | None:
    """Who holds the state.dir's lock, or None when nobody does, read without writing anything:
    no lock file, no state.dir and no pid are created, the lock file's bytes and mtime stay.

    Raises ConfigException naming `key` when state.dir is a file (nothing could ever run there)."""
    directory = Path(state_dir)
    if directory.exists() and not directory.is_dir():
        raise ConfigException(f"{key} {directory} is a file, not a directory; set {key} to a directory", key)
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):  # none (never ran), or not ours to read: nobody we can name
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a writer holds LOCK_EX: this fails while it runs
        except BlockingIOError:
            return _parse(os.pread(fd, 4096, 0))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def writes_state_dir(config: WorkerConfig) -> bool:
    """Whether a worker (`cdc standalone`, `cdc worker`) writes its state.dir: on the embedded
    transport its log, offsets, configs and status live there; on Kafka they live in topics."""
    return config.transport == "embedded"


def hold_state_dir(config: WorkerConfig, role: str) -> contextlib.AbstractContextManager[object]:
    """The worker's state.dir lock, acquired, for a `with` around the worker's life (nothing to
    hold when the worker writes no state.dir)."""
    if not writes_state_dir(config):
        return contextlib.nullcontext()
    return StateDirLock(config.get("state.dir"), role).acquire()

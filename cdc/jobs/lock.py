"""One running copy per job: an flock on `<state.dir>/<name>.lock`.

Two `cdc run`s of one job would interleave offsets and Spark checkpoints, and `cdc offsets
reset` must not race a running job. The kernel drops an flock when its process dies, even
by SIGKILL, so a crashed run never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from cdc.api.errors import ConfigException, ConnectException
from cdc.log.private_files import make_private_dir, open_private_file


class JobRunningError(ConnectException):
    """Another process holds the job's lock."""


class JobLock:
    def __init__(self, state_dir: str | Path, name: str) -> None:
        self.path = Path(state_dir) / f"{name}.lock"
        self.name = name
        self._fd: int | None = None

    def acquire(self, action: str = "start it") -> JobLock:
        try:
            make_private_dir(self.path.parent)  # state.dir: 0700, as the embedded log makes it
            fd = open_private_file(self.path)  # 0600 (issue 17)
        except OSError as e:
            # mkdir says "File exists" when state.dir (or a parent) is a file
            reason = "a file is in the way" if isinstance(e, (FileExistsError, NotADirectoryError)) else e.strerror
            raise ConfigException(
                f"cannot create the job lock {self.path} ({reason}); set transport.state.dir to a writable directory",
                "transport.state.dir",
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise JobRunningError(
                f"job {self.name!r} is running (pid {holder}, lock {self.path}); stop it (Ctrl-C, or kill {holder}) "
                f"before you {action}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> JobLock:
        return self if self._fd is not None else self.acquire()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

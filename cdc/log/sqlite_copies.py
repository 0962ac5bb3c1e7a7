"""One SQLite library at a time per log file in a process (issue 19).

Python's `sqlite3` and adbc-driver-sqlite (the Spark source's Arrow reads) each carry their own
copy of SQLite. SQLite's "How To Corrupt An SQLite Database File" (section 2.2.1, multiple
copies of SQLite in one application) says why two copies must not have one file open at once:
POSIX advisory locks belong to the process, and closing any descriptor of a file drops all of
the process's locks on it. When one copy closes its descriptor of `cdc.db`, `-wal` or `-shm`,
the other copy's locks are gone without it knowing; and since the two copies do not see each
other's connections, a copy closing its last one takes the last-connection path: it
checkpoints and deletes the `-wal` and `-shm` files the other copy is still using. Seen as
`disk I/O error`, `database is locked` and commits lost. SQLite prevents this within one copy
with its own process-wide table of open files (`unixInodeInfo`); `SqliteCopies` is that table
across the two copies:

- a `sqlite3` connection is counted from before it opens until it is closed (or collected);
- an ADBC connection is opened only while no `sqlite3` connection to the file is open in the
  process, and is counted while it is; `sqlite3` connections wait for it meanwhile (it reads
  one batch and closes, so the wait is short). The reader uses `sqlite3` otherwise.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_Key = tuple[int, int] | str


def _key(path: Path) -> _Key:
    """The file's identity (device, inode), so two spellings of one path are one file. A file
    that does not exist yet is known by its real path: create it before connecting (EmbeddedLog
    does), or it changes identity when SQLite creates it."""
    try:
        st = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return (st.st_dev, st.st_ino)


class CopyWaitTimeout(Exception):
    """An ADBC read of the file kept a `sqlite3` connection from opening for the whole timeout."""


class SqliteCopies:
    """Which SQLite library has a file open in this process (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._python: Counter[_Key] = Counter()
        self._adbc: Counter[_Key] = Counter()

    def open_python(self, path: Path, timeout_s: float) -> Callable[[], None]:
        """Count a `sqlite3` connection to `path` that is about to open; returns its release
        (call it once the connection is closed). Waits while an ADBC read of the file runs."""
        key = _key(path)
        with self._cond:
            if not self._cond.wait_for(lambda: self._adbc[key] == 0, timeout_s):
                raise CopyWaitTimeout(f"an Arrow read of {path} in this process held it for {timeout_s:.1f} s")
            self._python[key] += 1
        released = threading.Event()

        def release() -> None:
            if released.is_set():
                return
            released.set()
            with self._cond:
                self._python[key] -= 1
                if self._python[key] <= 0:
                    del self._python[key]
                self._cond.notify_all()

        return release

    @contextmanager
    def adbc(self, path: Path) -> Iterator[bool]:
        """True, and counted until the block ends, when ADBC may open `path`: no `sqlite3`
        connection to it is open in this process. False: read it through `sqlite3`."""
        key = _key(path)
        with self._cond:
            if self._python[key] > 0:
                allowed = False
            else:
                allowed = True
                self._adbc[key] += 1
        try:
            yield allowed
        finally:
            if allowed:
                with self._cond:
                    self._adbc[key] -= 1
                    if self._adbc[key] <= 0:
                        del self._adbc[key]
                    self._cond.notify_all()


# Process-wide, as SQLite's own table of open files is: the hazard is one of the process.
SQLITE_COPIES = SqliteCopies()


class CountedConnection(sqlite3.Connection):
    """A `sqlite3` connection that leaves `SQLITE_COPIES` when closed or collected."""

    _release: weakref.finalize | None = None

    def counted(self, release: Callable[[], None]) -> None:
        self._release = weakref.finalize(self, release)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._release is not None:
                self._release()


def connect_counted(
    path: Path, timeout_s: float, copies: SqliteCopies = SQLITE_COPIES, **kwargs: Any
) -> sqlite3.Connection:
    """`sqlite3.connect(path, ...)`, counted in `copies` from before it opens until it closes."""
    release = copies.open_python(path, timeout_s)
    try:
        conn = sqlite3.connect(path, timeout=timeout_s, factory=CountedConnection, **kwargs)
    except BaseException:
        release()
        raise
    conn.counted(release)
    return conn

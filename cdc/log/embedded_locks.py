"""Waiting for the embedded log's write lock: a busy log is waited for or retried, never an error
before `busy_timeout_ms` has passed (issue 19).

SQLite has one writer at a time. Its busy handler (`sqlite3.connect(timeout=...)`) waits for
the lock in most places, but it answers SQLITE_BUSY at once, without waiting, where waiting
could deadlock or where it cannot: switching a new file to WAL while another connection does
the same, upgrading a read to a write (BUSY_SNAPSHOT), WAL recovery by another connection.
Within one process its waiters also poll (sleeping up to 100 ms), so one busy thread can
starve the others. Kafka's producer treats such errors as retriable and retries them until
`delivery.timeout.ms`; here:

- a process's writers queue in arrival order (`cdc.log.embedded_group`, which also commits the
  ones that queued together in one transaction; `FairLock` is a plain lock of that order), so
  SQLite sees one writer per process and none of a worker's tasks is starved by the others;
- `retry_busy` runs an attempt again, with jittered backoff, while SQLite answers BUSY and the
  deadline has not passed, giving each attempt's busy handler only the time that is left.

A write transaction's body is retried whole after a rollback, so a retry stores nothing twice.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

SQLITE_BUSY = 5  # the primary code of BUSY, BUSY_RECOVERY, BUSY_SNAPSHOT and BUSY_TIMEOUT
_FIRST_BACKOFF_S = 0.001
_MAX_BACKOFF_S = 0.05


def is_busy(e: BaseException) -> bool:
    """True for SQLite's "database is locked" (SQLITE_BUSY and its extended codes), from Python's
    sqlite3 or from ADBC's SQLite driver (which reports it as an error with SQLite's message)."""
    if isinstance(e, sqlite3.Error):
        code = getattr(e, "sqlite_errorcode", None)
        if code is not None:
            return code & 0xFF == SQLITE_BUSY
        return "database is locked" in str(e)
    return type(e).__module__.startswith("adbc_driver") and "database is locked" in str(e)


class BusyTimeout(Exception):
    """The deadline passed while the log stayed busy; `waited_s` says how long was waited."""

    def __init__(self, waited_s: float) -> None:
        super().__init__(f"the log stayed locked for {waited_s:.1f} s")
        self.waited_s = waited_s


class Deadline:
    """The end of one operation's wait for the log (`busy_timeout_ms` from its start)."""

    def __init__(self, timeout_s: float) -> None:
        self.started = time.monotonic()
        self.at = self.started + timeout_s

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def waited(self) -> float:
        return time.monotonic() - self.started


def retry_busy(
    attempt: Callable[[], T],
    deadline: Deadline,
    conn: sqlite3.Connection | None = None,
    rng: random.Random | None = None,
) -> T:
    """`attempt()`, run again while it raises SQLite BUSY and `deadline` has not passed.

    With `conn`, each retry sets its busy timeout to the time left, so SQLite's own wait never
    runs past the deadline; the connection gets its full timeout back afterwards. Raises
    `BusyTimeout` once the deadline passes, any other error at once.
    """
    delay = _FIRST_BACKOFF_S
    restore_ms: int | None = None
    jitter = rng or random.Random()
    try:
        while True:
            try:
                return attempt()
            except Exception as e:
                if not is_busy(e):
                    raise
                left = deadline.remaining()
                if left <= 0:
                    raise BusyTimeout(deadline.waited()) from e
            time.sleep(min(left, delay * jitter.uniform(0.5, 1.5)))
            delay = min(delay * 2, _MAX_BACKOFF_S)
            if conn is not None:
                if restore_ms is None:
                    restore_ms = conn.execute("PRAGMA busy_timeout").fetchone()[0]
                conn.execute(f"PRAGMA busy_timeout={max(1, int(deadline.remaining() * 1000))}")
    finally:
        if conn is not None and restore_ms is not None:
            with contextlib.suppress(sqlite3.Error):  # a closed connection: nothing to restore
                conn.execute(f"PRAGMA busy_timeout={restore_ms}")


class FairLock:
    """A lock granted in arrival order, with a timeout: the log's writers of one process queue
    here, so a thread that writes in a loop cannot take the lock again ahead of the others."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._held = False
        self._queue: deque[object] = deque()

    def acquire(self, timeout: float) -> bool:
        with self._cond:
            if not self._held and not self._queue:
                self._held = True
                return True
            me = object()
            self._queue.append(me)
            if self._cond.wait_for(lambda: not self._held and self._queue[0] is me, timeout):
                self._queue.popleft()
                self._held = True
                return True
            self._queue.remove(me)
            self._cond.notify_all()  # the next in line may be free to go now
            return False

    def release(self) -> None:
        with self._cond:
            self._held = False
            self._cond.notify_all()

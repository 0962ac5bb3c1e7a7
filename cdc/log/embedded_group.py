"""Group commit for the embedded log: the write transactions of one process that queue behind a
commit in progress are committed together, in one SQLite transaction (one WAL fsync), as any
write-ahead log does.

SQLite has one writer at a time, and with `synchronous=FULL` (the default) every COMMIT syncs
the WAL. A worker's writers (its source tasks' poll batches with their offsets, the status and
offset stores, sink commits, the LogCleaner) would each pay a commit of their own, one after
another. Here a writer that finds a commit in progress queues; when that commit ends, the first
in the queue becomes the group's leader: it takes every queued writer, runs their transaction
bodies in arrival order inside one BEGIN IMMEDIATE ... COMMIT on its own connection, and then
wakes them. Each writer returns, and its caller signals completion (a producer's delivery
callbacks, a source task's offsets), only after the COMMIT that holds its rows, so the
durability of what was signalled is exactly that of a transaction of its own.

- Order: bodies run in arrival order and offsets are assigned inside the transaction, so each
  topic partition keeps the order of the writes that reached it, as with one transaction each.
- Isolation between writers: with more than one body in a group, each runs inside a SAVEPOINT;
  a body that raises is rolled back to it and its writer gets the error, the others commit.
  SQLite BUSY (or a failure that ends the whole transaction) runs the group again whole, which
  the bodies allow (`EmbeddedLog.write`: a body only reads and writes through its `conn`).
- A failed COMMIT fails every writer of the group: none of them is durable.
- Waiting: a queued writer waits for its turn until its own deadline (`busy_timeout_ms`), as it
  waited for `FairLock` before; once a leader has taken it, it waits for that commit to end.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from cdc.log.base import LogError
from cdc.log.embedded_locks import BusyTimeout, Deadline, is_busy, retry_busy

T = TypeVar("T")

_QUEUED, _TAKEN, _DONE = 0, 1, 2


class Member(Generic[T]):
    """One writer's transaction body and, once its group is done, its outcome."""

    __slots__ = ("body", "error", "result", "state")

    def __init__(self, body: Callable[[sqlite3.Connection], T]) -> None:
        self.body = body
        self.state = _QUEUED
        self.result: Any = None
        self.error: BaseException | None = None

    def outcome(self) -> T:
        error = self.error
        if error is not None:
            if isinstance(error, BusyTimeout):
                raise BusyTimeout(error.waited_s) from error  # its own instance per waiting thread
            raise error
        return self.result  # type: ignore[no-any-return]


class _Rerun(Exception):
    """A body's failure ended the whole SQLite transaction: run the group again without it."""


class GroupCommit:
    """Queues a process's write transactions and commits the ones that queued together.

    `groups` and `members` count the transactions committed (or attempted) and the writers in
    them, so `members / groups` is the mean group size.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[Member[Any]] = []
        self._writing = False
        self.groups = 0
        self.members = 0

    def write(
        self,
        conn: sqlite3.Connection,
        body: Callable[[sqlite3.Connection], T],
        deadline: Deadline,
        on_failure: Callable[[], None] = lambda: None,
    ) -> T:
        """`body` committed in a transaction, alone or with the bodies queued beside it; its result,
        or its error. `BusyTimeout` when its turn did not come, or SQLite stayed busy, until
        `deadline`. `on_failure` runs when a group of several does not commit (the log drops
        metadata it may have cached from another body's uncommitted rows)."""
        me: Member[T] = Member(body)
        with self._cond:
            self._queue.append(me)
            while True:
                if me.state == _TAKEN:
                    self._cond.wait()  # a leader runs it: its commit ends within the leader's deadline
                    continue
                if me.state == _DONE:
                    return me.outcome()
                if not self._writing and self._queue[0] is me:
                    group, self._queue = self._queue, []
                    for m in group:
                        m.state = _TAKEN
                    self._writing = True
                    break
                left = deadline.remaining()
                if left <= 0:
                    self._queue.remove(me)
                    self._cond.notify_all()  # the next in line may lead now
                    raise BusyTimeout(deadline.waited())
                self._cond.wait(left)
        try:
            self._commit_group(conn, group, deadline, on_failure)
        finally:
            with self._cond:
                for m in group:
                    m.state = _DONE
                self._writing = False
                self.groups += 1
                self.members += len(group)
                self._cond.notify_all()
        return me.outcome()

    def _commit_group(
        self, conn: sqlite3.Connection, group: list[Member[Any]], deadline: Deadline, on_failure: Callable[[], None]
    ) -> None:
        """The bodies in one transaction on the leader's `conn`; sets each member's outcome."""
        pending = group
        try:
            while pending:
                try:
                    retry_busy(lambda pending=pending: _attempt(conn, pending), deadline, conn)
                    return
                except _Rerun:
                    pending = [m for m in pending if m.error is None]
                    on_failure()
        except BaseException as e:
            if len(group) > 1:
                on_failure()
            # An interrupt of the leader's thread (KeyboardInterrupt, SystemExit) is the leader's
            # own to raise; the other writers are told their write failed.
            error = e if isinstance(e, Exception) else LogError(f"the write transaction was interrupted ({e!r})")
            for m in pending:
                if m.error is None:
                    m.error = error
            if error is not e:
                raise


def _attempt(conn: sqlite3.Connection, pending: list[Member[Any]]) -> None:
    """One try of the group: BEGIN IMMEDIATE, the bodies, COMMIT. A lone body runs as before
    (its error rolls the transaction back); several run each in a savepoint."""
    for m in pending:
        m.result = m.error = None
    with _write_txn(conn):
        if len(pending) == 1:
            pending[0].result = pending[0].body(conn)
        else:
            for m in pending:
                _run_in_savepoint(conn, m)


def _run_in_savepoint(conn: sqlite3.Connection, m: Member[Any]) -> None:
    conn.execute("SAVEPOINT cdc_writer")
    try:
        m.result = m.body(conn)
    except Exception as e:
        if is_busy(e):
            raise  # the group runs again whole
        m.error = e
        if not conn.in_transaction:
            raise _Rerun from e  # SQLite ended the transaction: the others' rows went with it
        conn.execute("ROLLBACK TO cdc_writer")
    conn.execute("RELEASE cdc_writer")


class _write_txn:
    """BEGIN IMMEDIATE ... COMMIT: take the write lock up front so two writers never deadlock
    (a read transaction upgraded to a write gets SQLITE_BUSY at once, without waiting, when
    another connection committed since it began)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self.conn.execute("COMMIT")
                return
        except BaseException:
            self._rollback()
            raise
        self._rollback()

    def _rollback(self) -> None:
        # SQLite rolls back by itself on some errors (SQLITE_FULL, IOERR, NOMEM): a ROLLBACK
        # then fails and would hide the real error. A failed COMMIT (e.g. disk full) may leave
        # the transaction open, and every later BEGIN on this connection would fail.
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

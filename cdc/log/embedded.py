"""The embedded topic log: Kafka's topic/partition/offset model in one SQLite file.

It is the default transport of `cdc run` on one machine. WAL mode lets readers (the CLI,
the Spark source, a sink in another process) read while a worker appends. Offsets,
configs and status live in topics of the same file, so a source task's records and the
offsets that cover them commit in one SQLite transaction: after a crash there is neither
a lost record nor a duplicate.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from cdc.log._headers import decode_headers, encode_headers
from cdc.log.base import (
    DeliveryCallback,
    ErrorCallback,
    GroupConsumer,
    LogError,
    LogProducer,
    LogReader,
    LogRecord,
    OutgoingRecord,
    RebalanceListener,
    SuccessCallback,
    TopicDescription,
    TopicLog,
    TopicPartition,
    TopicSpec,
    UnknownTopicError,
)
from cdc.log.embedded_group import GroupCommit, _write_txn  # noqa: F401  (_write_txn: tests)
from cdc.log.embedded_locks import BusyTimeout, Deadline, retry_busy
from cdc.log.murmur2 import partition_for_key
from cdc.log.private_files import make_private_dir, open_private_file, tighten
from cdc.log.sqlite_copies import CopyWaitTimeout, connect_counted

T = TypeVar("T")

log = logging.getLogger(__name__)

DB_FILE = "cdc.db"
PAGE_SIZE = 16384
# The file layout this code reads and writes, kept in SQLite's user_version. A newer file is
# refused rather than misread; an older one is migrated when it is opened (_migrate_records).
#   0: a log from before versioning, the layout of 1.
#   1: `records` a WITHOUT ROWID table.
#   2: `records` a rowid table with the (topic, partition, offset) key as its unique index.
SCHEMA_VERSION = 2
# The -wal file keeps its high-water size after a checkpoint: one large transaction, or a
# reader that held a snapshot while writes piled up, would otherwise leave it that big for
# good. SQLite truncates it to this when it restarts the WAL; twice the autocheckpoint point
# (1000 pages of 16 KB) so a steady stream of writes never shrinks and regrows it.
WAL_SIZE_LIMIT = 32 * 1024 * 1024
# Records deleted per write transaction when retention (or delete_records) drops a range: a
# week of records expiring at once must not hold the write lock past other writers' timeout.
DELETE_CHUNK = 10_000

# `records` is a rowid table (layout 2), not WITHOUT ROWID as the small tables are: a WITHOUT
# ROWID table is a b-tree index, whose rows keep at most ~4 KB of a 16 KB page; every larger
# record (a Debezium JSON record with schemas of a wide table is 4 KB and more) then took a
# 16 KB overflow page of its own, so the file held 4.5 times its records and each append wrote
# that much. A rowid table keeps rows up to ~16 KB in the page; the key becomes a separate
# unique index, which costs about a tenth of small records' size. Measured on 50k records with
# synchronous=NORMAL: 4.1 KB values 4.6x their size and 50 us each before, 1.3x and 23 us after;
# 300 B to 3 KB values never larger or slower.
_RECORDS_TABLE = """
CREATE TABLE IF NOT EXISTS records(
    topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
    timestamp INTEGER NOT NULL, key BLOB, value BLOB, headers BLOB,
    PRIMARY KEY(topic, partition, offset))"""
_SCHEMA = (
    _RECORDS_TABLE
    + """;
CREATE TABLE IF NOT EXISTS topics(
    name TEXT PRIMARY KEY, partitions INTEGER NOT NULL, config TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS partitions(
    topic TEXT NOT NULL, partition INTEGER NOT NULL,
    next_offset INTEGER NOT NULL, start_offset INTEGER NOT NULL,
    PRIMARY KEY(topic, partition)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compacted_keys(
    topic TEXT NOT NULL, partition INTEGER NOT NULL, key BLOB NOT NULL, offset INTEGER NOT NULL,
    PRIMARY KEY(topic, partition, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS retention_marks(
    topic TEXT NOT NULL, partition INTEGER NOT NULL, at_ms INTEGER NOT NULL, offset INTEGER NOT NULL,
    PRIMARY KEY(topic, partition, at_ms)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS consumer_offsets(
    grp TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
    PRIMARY KEY(grp, topic, partition)) WITHOUT ROWID;
"""
)

_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")

# Primary result codes (sqlite3.h) that the user can act on.
_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 3, 8, 11, 13, 14, 26


def _explain(e: sqlite3.Error, path: Path, doing: str) -> LogError:
    """An SQLite error as advice: what is wrong with the file or disk and what to do."""
    code = (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF
    if code == _SQLITE_FULL:
        advice = "the disk is full; free space or move state.dir to a larger disk (the failed write stored nothing)"
    elif code in (_SQLITE_READONLY, _SQLITE_PERM, _SQLITE_CANTOPEN):
        advice = f"make {path.parent} and the cdc.db* files in it writable by this user, or choose another state.dir"
    elif code in (_SQLITE_NOTADB, _SQLITE_CORRUPT):
        advice = (
            f"{path} is not an embedded log or is damaged; move it aside (keep it for inspection) "
            "or choose another state.dir"
        )
    else:
        advice = "see the SQLite error"
    return LogError(f"{doing} the embedded log {path} failed: {e}; {advice}")


def _now_ms() -> int:
    return int(time.time() * 1000)


class _Meta:
    __slots__ = ("compacted", "partitions")

    def __init__(self, partitions: int, compacted: bool) -> None:
        self.partitions = partitions
        self.compacted = compacted


class EmbeddedLog(TopicLog):
    """Topics in `<state_dir>/cdc.db`.

    `synchronous` is SQLite's durability knob: FULL (default) survives power loss, NORMAL
    survives a process crash (kill -9) but may lose the last commits on power loss.

    `busy_timeout_ms` bounds each operation's wait for a busy log (embedded_locks): the
    process's writers queue in turn, and SQLite BUSY is waited out or retried until then.
    Writers that queue behind a commit in progress commit together in the next transaction
    (`_group`, cdc.log.embedded_group: one WAL sync for all of them); each returns only after
    the commit that holds its rows. Locks, always taken in this order: `_lock` (the log's own
    connection), a producer's lock, `_group`'s queue (one write transaction of this process at
    a time). A transaction body takes no lock: another writer's thread may run it.
    """

    owner_applies_retention = True  # the worker's LogCleaner enforces retention.ms (Worker.start)
    keeps_history_topics = True
    arrow_ranges = True

    name = "embedded"
    exact_end_offsets = True

    def __init__(
        self,
        state_dir: str | Path,
        *,
        synchronous: str = "FULL",
        auto_create_topics: bool = True,
        default_partitions: int = 1,
        busy_timeout_ms: int = 60_000,
    ) -> None:
        if synchronous.upper() not in _SYNC_MODES:
            raise LogError(f"embedded.synchronous must be one of {', '.join(_SYNC_MODES)}, got {synchronous!r}")
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / DB_FILE
        try:
            make_private_dir(self.state_dir)  # 0700: cdc.db holds every captured row (issue 17)
            if not self.path.exists():
                os.close(open_private_file(self.path, os.O_WRONLY))  # 0600; SQLite gives -wal/-shm its mode
        except OSError as e:
            raise LogError(
                f"cannot create state.dir {self.state_dir}: {e.strerror}; choose a writable directory"
            ) from e
        self.synchronous = synchronous.upper()
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.busy_timeout_ms = busy_timeout_ms
        self._lock = threading.RLock()
        self._group = GroupCommit()  # this process's write transactions, committed in groups
        self._conn = self.connect()
        for name in (DB_FILE, DB_FILE + "-wal", DB_FILE + "-shm"):
            tighten(self.state_dir / name)  # a log written by an older cdc, or with a wider mode
        self._meta: dict[str, _Meta] = {}
        try:
            self._init_schema()
        except sqlite3.Error as e:
            self._conn.close()
            raise _explain(e, self.path, "opening") from e
        except LogError:
            self._conn.close()
            raise

    def _init_schema(self) -> None:
        with self._lock:
            version = self.retrying(self._conn, lambda: self._schema_version(self._conn), "opening")
            if version == SCHEMA_VERSION:
                return  # the usual open takes no write lock (`cdc status` beside a running worker)
            # One write transaction, so two processes creating the file cannot interleave; the
            # version is read again inside it, as another process may have created it meanwhile.
            self.write(self._conn, self._create_schema, "creating")

    def _schema_version(self, conn: sqlite3.Connection) -> int:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise LogError(
                f"{self.path} was written by a newer cdc (log schema version {version}; this one reads up to "
                f"{SCHEMA_VERSION}); upgrade cdc, or choose another state.dir"
            )
        return version

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        if self._schema_version(conn) == SCHEMA_VERSION:
            return
        _migrate_records(conn, self.path)
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def connect(self) -> sqlite3.Connection:
        """A new connection with the log's pragmas (one per client: sqlite3 objects are not shared)."""
        deadline = Deadline(self.busy_timeout_ms / 1000)
        try:
            conn = connect_counted(
                self.path, self.busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
        except CopyWaitTimeout as e:
            raise LogError(f"opening the embedded log {self.path} failed: {e}; see the Arrow reader") from e
        except sqlite3.Error as e:
            raise _explain(e, self.path, "opening") from e
        try:
            # Switching a new file to WAL answers BUSY at once, without the busy handler, to all
            # but one of the connections that try it together (a worker and its task processes
            # starting on a new state.dir): retried (issue 19).
            retry_busy(lambda: self._set_pragmas(conn), deadline, conn)
        except BusyTimeout as e:
            conn.close()
            raise self._busy_error(e.waited_s, "opening") from e
        except sqlite3.Error as e:
            conn.close()
            raise _explain(e, self.path, "opening") from e
        return conn

    def _set_pragmas(self, conn: sqlite3.Connection) -> None:
        # 16 KB pages keep records of up to ~4 KB (Debezium JSON with schemas is 1-3 KB) inside
        # the b-tree; with SQLite's default 4 KB pages each overflows into a page of its own,
        # which tripled the file size and the read and write time. Only a new, empty file
        # takes the page size (before WAL mode is set); an existing log keeps its own.
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")

    # -- waiting for a busy log (embedded_locks) ----------------------------------------------
    def write(self, conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T], doing: str = "writing to") -> T:
        """`body(conn)` in a write transaction (BEGIN IMMEDIATE ... COMMIT), after this process's
        earlier writers; returns (or raises) only once that transaction is committed (or failed).

        Bodies that queued behind a commit in progress share the next transaction, run in
        arrival order by whichever of their threads leads the group, on that thread's connection
        (group commit, cdc.log.embedded_group). While SQLite answers BUSY the transaction is
        rolled back and `body` run again whole, so it must only read and write through the `conn`
        it is given, take no lock and keep no state outside it; after `busy_timeout_ms` a LogError
        says what holds the log."""
        deadline = Deadline(self.busy_timeout_ms / 1000)
        try:
            return self._group.write(conn, body, deadline, self._meta.clear)
        except BusyTimeout as e:
            raise self._busy_error(e.waited_s, doing) from e

    def retrying(self, conn: sqlite3.Connection, read: Callable[[], T], doing: str = "reading") -> T:
        """`read()` (statements on `conn` outside a write transaction), retried while SQLite answers
        BUSY, for up to `busy_timeout_ms`."""
        try:
            return retry_busy(read, Deadline(self.busy_timeout_ms / 1000), conn)
        except BusyTimeout as e:
            raise self._busy_error(e.waited_s, doing) from e

    def _busy_error(self, waited_s: float, doing: str) -> LogError:
        return LogError(
            f"{doing} the embedded log {self.path} failed: it stayed locked for {waited_s:.1f} s "
            f"(busy timeout {self.busy_timeout_ms} ms) by a long write transaction, most likely of another process "
            f"(a sqlite3 shell, a second worker on the same state.dir?): find it with `fuser {self.path}`"
        )

    # -- metadata ----------------------------------------------------------------------------
    def meta(self, topic: str, conn: sqlite3.Connection | None = None) -> _Meta | None:
        """The topic's partition count and policy (cached once seen). With `conn`, read through it
        (a producer inside its write transaction: taking `_lock` there could deadlock)."""
        m = self._meta.get(topic)
        if m is not None:
            return m
        query = "SELECT partitions, config FROM topics WHERE name=?"
        if conn is not None:
            row = conn.execute(query, (topic,)).fetchone()
        else:
            with self._lock:
                row = self.retrying(self._conn, lambda: self._conn.execute(query, (topic,)).fetchone())
        if row is None:
            return None
        m = _Meta(row[0], "compact" in json.loads(row[1]).get("cleanup.policy", "delete"))
        self._meta[topic] = m
        return m

    def _create_in_txn(self, conn: sqlite3.Connection, spec: TopicSpec) -> bool:
        if conn.execute("SELECT 1 FROM topics WHERE name=?", (spec.name,)).fetchone():
            return False
        _check_topic_name(spec.name)
        if spec.partitions < 1:
            raise LogError(f"topic {spec.name!r}: partitions must be at least 1, got {spec.partitions}")
        conn.execute(
            "INSERT INTO topics(name, partitions, config, created_ms) VALUES (?,?,?,?)",
            (spec.name, spec.partitions, json.dumps(dict(spec.config), sort_keys=True), _now_ms()),
        )
        conn.executemany(
            "INSERT INTO partitions(topic, partition, next_offset, start_offset) VALUES (?,?,0,0)",
            [(spec.name, p) for p in range(spec.partitions)],
        )
        return True

    def create_topics(self, specs: Sequence[TopicSpec]) -> list[str]:
        with self._lock:
            return self.write(self._conn, lambda conn: [s.name for s in specs if self._create_in_txn(conn, s)])

    def list_topics(self) -> dict[str, TopicDescription]:
        with self._lock:
            rows = self.retrying(
                self._conn,
                lambda: self._conn.execute("SELECT name, partitions, config FROM topics ORDER BY name").fetchall(),
            )
        return {
            name: TopicDescription(name, parts, json.loads(cfg), internal=name.startswith("__"))
            for name, parts, cfg in rows
        }

    def describe_topic(self, name: str) -> TopicDescription | None:
        query = "SELECT partitions, config FROM topics WHERE name=?"
        with self._lock:
            row = self.retrying(self._conn, lambda: self._conn.execute(query, (name,)).fetchone())
        return TopicDescription(name, row[0], json.loads(row[1])) if row else None

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._offsets(tps, "next_offset")

    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._offsets(tps, "start_offset")

    def _offsets(self, tps: Iterable[TopicPartition], column: str) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        query = f"SELECT {column} FROM partitions WHERE topic=? AND partition=?"
        with self._lock:
            for tp in tps:
                row = self.retrying(self._conn, lambda tp=tp: self._conn.execute(query, tp).fetchone())
                if row is None:
                    raise UnknownTopicError(f"unknown topic partition {tp.topic}-{tp.partition}")
                out[tp] = row[0]
        return out

    def delete_records(self, before: Mapping[TopicPartition, int]) -> None:
        """Kafka's Admin.deleteRecords: move each partition's start to the offset (never back, never
        past its end). The starts move in one transaction; the records below them then go
        `DELETE_CHUNK` at a time, a transaction each, so other writers wait for one chunk at most.
        Records a crash left below a start go with the partition's next deletion."""

        def move(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "UPDATE partitions SET start_offset=MAX(start_offset, MIN(?, next_offset)) "
                "WHERE topic=? AND partition=?",
                [(offset, tp.topic, tp.partition) for tp, offset in before.items()],
            )

        with self._lock:
            self.write(self._conn, move)
        for tp in before:
            more = True
            while more:
                with self._lock:
                    more = self.write(self._conn, lambda conn, tp=tp: _delete_chunk_below_start(conn, tp))

    def enforce_retention(self, now_ms: int | None = None) -> int:
        """Apply `retention.ms` of delete-policy topics by moving their start offsets; returns the
        number of partitions whose start moved.

        Retention counts from when records were appended, not from their timestamps: a
        connector may stamp records with old event times (e.g. catching up on an old binlog),
        and they must not go before a sink had `retention.ms` to read them. Each call
        marks every partition's end with the time; records below a mark at least
        `retention.ms` old have expired (so expiry has the granularity of the calls).
        """
        now_ms = _now_ms() if now_ms is None else now_ms
        moved = 0
        for desc in self.list_topics().values():
            if "compact" in desc.config.get("cleanup.policy", "delete"):
                continue
            retention = int(desc.config.get("retention.ms", 7 * 24 * 3600 * 1000))
            if retention < 0:
                continue
            with self._lock:
                before = self.write(
                    self._conn, lambda conn, desc=desc, retention=retention: _mark(conn, desc, now_ms, retention)
                )
            if before:
                self.delete_records(before)
            moved += len(before)
        return moved

    # -- clients -----------------------------------------------------------------------------
    def read_arrow(self, topic: str, partition: int, start: int, end: int, *, headers: bool = False) -> Iterator[Any]:
        """The range as Arrow batches, read through its own connection (cdc.log.embedded_arrow)."""
        from cdc.log.embedded_arrow import read_arrow

        return read_arrow(
            self.path, self.busy_timeout_ms, topic, partition, start, end, headers=headers, connect=self.connect
        )

    def producer(self, transactional_id: str | None = None, **overrides: str) -> EmbeddedProducer:
        return EmbeddedProducer(self, int(overrides.get("batch.num.messages", 10_000)))

    def reader(self, **overrides: str) -> EmbeddedReader:
        return EmbeddedReader(self)

    def group_consumer(
        self,
        group_id: str,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        on_rebalance: RebalanceListener | None = None,
        member: tuple[int, int] = (0, 1),
        **overrides: str,
    ) -> EmbeddedGroupConsumer:
        return EmbeddedGroupConsumer(self, group_id, topics, pattern, on_rebalance, member, overrides)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def _check_topic_name(name: str) -> None:
    # Same rule as Kafka's Topic.validate, so a job moves to Kafka without renames.
    if not _LEGAL_TOPIC.match(name) or name in (".", ".."):
        raise LogError(
            f"illegal topic name {name!r}: use up to 249 characters from [a-zA-Z0-9._-] "
            "(Kafka's rule; route names with the RegexRouter SMT if needed)"
        )


def _mark(conn: sqlite3.Connection, desc: TopicDescription, now_ms: int, retention: int) -> dict[TopicPartition, int]:
    """Mark each partition's end with `now_ms`; the partitions with expired records, and where
    their start moves to (EmbeddedLog.enforce_retention)."""
    before: dict[TopicPartition, int] = {}
    for p in range(desc.partitions):
        key = (desc.name, p)
        start, end = conn.execute(
            "SELECT start_offset, next_offset FROM partitions WHERE topic=? AND partition=?", key
        ).fetchone()
        conn.execute(
            "INSERT OR REPLACE INTO retention_marks(topic, partition, at_ms, offset) VALUES (?,?,?,?)",
            (*key, now_ms, end),
        )
        expired, at_ms = conn.execute(
            "SELECT MAX(offset), MAX(at_ms) FROM retention_marks WHERE topic=? AND partition=? AND at_ms<=?",
            (*key, now_ms - retention),
        ).fetchone()
        if expired is None:
            continue
        conn.execute(  # older marks say less than this one
            "DELETE FROM retention_marks WHERE topic=? AND partition=? AND at_ms<?", (*key, at_ms)
        )
        if expired > start:
            before[TopicPartition(*key)] = expired
    return before


def _delete_chunk_below_start(conn: sqlite3.Connection, tp: TopicPartition) -> bool:
    """Delete up to DELETE_CHUNK offsets of the records below the partition's start; True if more remain."""
    row = conn.execute("SELECT start_offset FROM partitions WHERE topic=? AND partition=?", tp).fetchone()
    lowest = conn.execute("SELECT MIN(offset) FROM records WHERE topic=? AND partition=?", tp).fetchone()[0]
    if row is None or lowest is None or lowest >= row[0]:
        return False
    upto = min(row[0], lowest + DELETE_CHUNK)
    conn.execute("DELETE FROM records WHERE topic=? AND partition=? AND offset<?", (*tp, upto))
    conn.execute("DELETE FROM compacted_keys WHERE topic=? AND partition=? AND offset<?", (*tp, upto))
    return upto < row[0]


def _migrate_records(conn: sqlite3.Connection, path: Path) -> None:
    """Moves the records of a layout 0/1 log (a WITHOUT ROWID `records`) into layout 2's table.

    Runs inside the opening write transaction, so a crash or a second process opening the file
    meanwhile sees either the old layout or the new one whole. The copy takes about as long as
    reading the log once and needs room for a second copy of the records; the old table's pages
    go to SQLite's free list, which later appends reuse (VACUUM returns them to the disk).
    """
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name='records'").fetchone()
    if row is None or "WITHOUT ROWID" not in row[0].upper():
        return
    count = conn.execute("SELECT count(*) FROM records").fetchone()[0]
    log.warning(
        "Moving the %d records of the embedded log %s to its current layout (once, on the first open by this "
        "version of cdc; it takes about as long as reading the log once)", count, path,
    )  # fmt: skip
    started = time.monotonic()
    conn.execute("ALTER TABLE records RENAME TO records_layout1")
    conn.execute(_RECORDS_TABLE)
    conn.execute(
        "INSERT INTO records(topic, partition, offset, timestamp, key, value, headers) "
        "SELECT topic, partition, offset, timestamp, key, value, headers FROM records_layout1 "
        "ORDER BY topic, partition, offset"
    )
    conn.execute("DROP TABLE records_layout1")
    log.info("Moved %d records of %s in %.1f s", count, path, time.monotonic() - started)


class _ErrorsOnly:
    """A `send_many` callback: told of failures only, so a stored record costs no call and no LogRecord."""

    __slots__ = ("on_error",)

    def __init__(self, on_error: ErrorCallback) -> None:
        self.on_error = on_error

    def __call__(self, stored: LogRecord | None, error: Exception | None) -> None:
        if error is not None:
            self.on_error(error)


_Pending = tuple[str, int | None, bytes | None, bytes | None, tuple, int, DeliveryCallback | None]


class EmbeddedProducer(LogProducer):
    """Buffers sends and appends them in one SQLite transaction per flush.

    Outside a transaction the buffer is flushed when it holds `batch_size` records, which
    bounds memory; inside one, nothing is written until `commit_transaction`.
    """

    def __init__(self, log_: EmbeddedLog, batch_size: int = 10_000) -> None:
        self._log = log_
        self._conn = log_.connect()
        self._batch_size = batch_size
        self._pending: list[_Pending] = []
        self._in_txn = False
        self._lock = threading.RLock()
        self._round_robin = itertools.count()
        self._closed = False

    @property
    def transactional(self) -> bool:
        return True

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
        partition: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        if self._closed:
            raise LogError("producer is closed")
        with self._lock:
            self._pending.append((topic, partition, key, value, tuple(headers), timestamp or _now_ms(), on_delivery))
            if not self._in_txn and len(self._pending) >= self._batch_size:
                self._write()

    def send_many(
        self,
        records: Sequence[OutgoingRecord],
        on_error: ErrorCallback | None = None,
        on_success: SuccessCallback | None = None,
    ) -> None:
        if on_success is not None:
            super().send_many(records, on_error, on_success)
            return
        if self._closed:
            raise LogError("producer is closed")
        callback = None if on_error is None else _ErrorsOnly(on_error)
        now = _now_ms()
        with self._lock:
            self._pending.extend(
                [
                    (topic, partition, key, value, tuple(headers), timestamp or now, callback)
                    for topic, value, key, headers, timestamp, partition in records
                ]
            )
            if not self._in_txn and len(self._pending) >= self._batch_size:
                self._write()

    def poll(self, timeout: float = 0.0) -> None:
        # Callbacks fire synchronously on flush/commit; nothing is pending between calls.
        return None

    def flush(self, timeout: float | None = None) -> int:
        with self._lock:
            if not self._in_txn:
                self._write()
            return len(self._pending) if self._in_txn else 0

    def begin_transaction(self) -> None:
        with self._lock:
            if self._in_txn:
                raise LogError("a transaction is already open")
            self._write()
            self._in_txn = True

    def commit_transaction(self, timeout: float | None = None) -> None:
        with self._lock:
            if not self._in_txn:
                raise LogError("no transaction is open")
            try:
                self._write()
            finally:
                self._in_txn = False

    def abort_transaction(self, timeout: float | None = None) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            self._in_txn = False
        err = LogError("transaction aborted")
        for p in pending:
            if p[6] is not None:
                p[6](None, err)

    def _write(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        try:
            stored = self._append(pending)
        except Exception as e:
            if isinstance(e, LogError):
                error = e
            elif isinstance(e, sqlite3.Error):
                error = _explain(e, self._log.path, "appending to")
            else:
                error = LogError(f"append to {self._log.path} failed: {e}")
            for p in pending:
                if p[6] is not None:
                    p[6](None, error)
            if self._in_txn:
                raise error from e
            return
        for p, rec in zip(pending, stored, strict=True):
            if rec is not None:
                p[6](rec, None)  # type: ignore[misc]  # rec is only built for a success callback

    def _append(self, pending: list[_Pending]) -> list[LogRecord | None]:
        """The records in one write transaction, with their offsets (run again whole if the log was busy)."""
        return self._log.write(self._conn, lambda conn: self._append_in_txn(conn, pending), "appending to")

    def _append_in_txn(self, conn: sqlite3.Connection, pending: list[_Pending]) -> list[LogRecord | None]:
        """The records appended; per record its LogRecord when a callback wants it, else None."""
        stored: list[LogRecord | None] = []
        rows: list[tuple | None] = []
        batch_keys: dict[tuple[str, int, bytes], int] = {}
        compacted: list[tuple[str, int, bytes, int]] = []
        # Topics auto-created by this transaction: kept out of the log's shared metadata cache
        # until committed, since a rollback undoes them (a cached one would then break appends).
        created: dict[str, _Meta] = {}
        next_offsets: dict[tuple[str, int], int] = {}
        last_topic: str | None = None
        meta: _Meta | None = None
        for topic, partition, key, value, headers, ts, cb in pending:
            if topic is not last_topic:
                meta = created.get(topic) or self._log.meta(topic, conn)
                last_topic = topic
            if meta is None:
                if not self._log.auto_create_topics:
                    raise UnknownTopicError(
                        f"topic {topic!r} does not exist and embedded auto-creation is off; create it first"
                    )
                self._log._create_in_txn(conn, TopicSpec(topic, self._log.default_partitions))
                meta = created[topic] = _Meta(self._log.default_partitions, compacted=False)
            assert meta is not None
            if partition is None:
                if meta.partitions == 1:
                    partition = 0  # skip hashing: pure-Python murmur2 is ~20% of append time
                elif key is not None:
                    partition = partition_for_key(key, meta.partitions)
                else:
                    partition = next(self._round_robin) % meta.partitions
            elif not 0 <= partition < meta.partitions:
                raise LogError(f"topic {topic!r} has {meta.partitions} partitions; partition {partition} is invalid")
            tpk = (topic, partition)
            offset = next_offsets.get(tpk)
            if offset is None:
                offset = conn.execute(
                    "SELECT next_offset FROM partitions WHERE topic=? AND partition=?", tpk
                ).fetchone()[0]
            next_offsets[tpk] = offset + 1
            if meta.compacted and key is not None:
                # Compaction on write: only the newest record per key is kept.
                ck = (topic, partition, key)
                if ck in batch_keys:
                    rows[batch_keys[ck]] = None
                else:
                    old = conn.execute(
                        "SELECT offset FROM compacted_keys WHERE topic=? AND partition=? AND key=?", ck
                    ).fetchone()
                    if old is not None:
                        conn.execute(
                            "DELETE FROM records WHERE topic=? AND partition=? AND offset=?",
                            (topic, partition, old[0]),
                        )
                batch_keys[ck] = len(rows)
                compacted.append((topic, partition, key, offset))
            rows.append((topic, partition, offset, ts, key, value, encode_headers(headers) if headers else None))
            wanted = cb is not None and cb.__class__ is not _ErrorsOnly
            stored.append(LogRecord(topic, partition, offset, key, value, headers, ts) if wanted else None)
        conn.executemany(
            "INSERT INTO records(topic, partition, offset, timestamp, key, value, headers) VALUES (?,?,?,?,?,?,?)",
            [r for r in rows if r is not None],
        )
        if compacted:
            conn.executemany(
                "INSERT OR REPLACE INTO compacted_keys(topic, partition, key, offset) VALUES (?,?,?,?)", compacted
            )
        conn.executemany(
            "UPDATE partitions SET next_offset=? WHERE topic=? AND partition=?",
            [(n, t, p) for (t, p), n in next_offsets.items()],
        )
        return stored

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            if self._in_txn:
                self.abort_transaction()
            else:
                self._write()
            self._closed = True
            self._conn.close()


class EmbeddedReader(LogReader):
    def __init__(self, log_: EmbeddedLog) -> None:
        self._log = log_
        self._conn = log_.connect()
        self._positions: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        self._rr = 0

    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        self._positions = dict(positions)
        self._paused &= set(self._positions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if tp not in self._positions:
            raise LogError(f"{tp.topic}-{tp.partition} is not assigned")
        self._positions[tp] = offset

    def position(self, tp: TopicPartition) -> int:
        return self._positions[tp]

    def assignment(self) -> list[TopicPartition]:
        return list(self._positions)

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        self._paused |= set(tps) & set(self._positions)

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        self._paused -= set(tps)

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            out = self._fetch(max_records)
            if out or time.monotonic() >= deadline:
                return out
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.05)

    def _fetch(self, max_records: int) -> list[LogRecord]:
        active = [tp for tp in self._positions if tp not in self._paused]
        if not active:
            return []
        out: list[LogRecord] = []
        query = (
            "SELECT offset, timestamp, key, value, headers FROM records "
            "WHERE topic=? AND partition=? AND offset>=? ORDER BY offset LIMIT ?"
        )
        # Rotate the starting partition so one busy partition cannot starve the others.
        self._rr = (self._rr + 1) % len(active)
        for tp in active[self._rr :] + active[: self._rr]:
            room = max_records - len(out)
            if room <= 0:
                break
            params = (tp.topic, tp.partition, self._positions[tp], room)
            rows = self._log.retrying(self._conn, lambda params=params: self._conn.execute(query, params).fetchall())
            for offset, ts, key, value, headers in rows:
                out.append(LogRecord(tp.topic, tp.partition, offset, key, value, decode_headers(headers), ts))
            if rows:
                self._positions[tp] = rows[-1][0] + 1
        return out

    def close(self) -> None:
        self._conn.close()


class EmbeddedGroupConsumer(GroupConsumer):
    """Static group membership: member i of n reads every n-th partition of the matched topics."""

    def __init__(
        self,
        log_: EmbeddedLog,
        group_id: str,
        topics: Sequence[str],
        pattern: str | None,
        on_rebalance: RebalanceListener | None,
        member: tuple[int, int],
        overrides: Mapping[str, str],
    ) -> None:
        self._log = log_
        self._group = group_id
        self._topics = list(topics)
        self._pattern = re.compile(pattern) if pattern else None
        self._on_rebalance = on_rebalance
        self._member = member
        self._reset = overrides.get("auto.offset.reset", "earliest")
        self._reader = EmbeddedReader(log_)
        self._refresh_every = int(overrides.get("metadata.max.age.ms", 5000)) / 1000
        self._refreshed = 0.0
        self._conn = log_.connect()
        self._refresh_assignment()

    def _matching_topics(self) -> list[str]:
        all_topics = self._log.list_topics()
        if self._pattern is not None:
            return sorted(t for t in all_topics if self._pattern.fullmatch(t))
        return [t for t in self._topics if t in all_topics]

    def _refresh_assignment(self) -> None:
        self._refreshed = time.monotonic()
        tps: list[TopicPartition] = []
        for t in self._matching_topics():
            tps.extend(self._log.partitions(t))
        index, count = self._member
        mine = [tp for i, tp in enumerate(sorted(tps)) if i % count == index]
        current = set(self._reader.assignment())
        if set(mine) == current:
            return
        added = [tp for tp in mine if tp not in current]
        revoked = [tp for tp in current if tp not in set(mine)]
        committed = self.committed(added)
        starts = self._log.beginning_offsets(added)
        ends = self._log.end_offsets(added)
        positions = {tp: self._reader.position(tp) for tp in current if tp in set(mine)}
        for tp in added:
            c = committed[tp]
            positions[tp] = c if c is not None else (starts[tp] if self._reset == "earliest" else ends[tp])
        self._reader.assign(positions)
        if self._on_rebalance is not None:
            self._on_rebalance(added, revoked)

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        if time.monotonic() - self._refreshed > self._refresh_every:
            self._refresh_assignment()
        return self._reader.poll(max_records, timeout)

    def assignment(self) -> list[TopicPartition]:
        return self._reader.assignment()

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        rows = [(self._group, tp.topic, tp.partition, off) for tp, off in offsets.items()]
        self._log.write(
            self._conn,
            lambda conn: conn.executemany(
                "INSERT OR REPLACE INTO consumer_offsets(grp, topic, partition, offset) VALUES (?,?,?,?)", rows
            ),
            "committing offsets to",
        )

    def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        out: dict[TopicPartition, int | None] = {}
        query = "SELECT offset FROM consumer_offsets WHERE grp=? AND topic=? AND partition=?"
        for tp in tps:
            params = (self._group, tp.topic, tp.partition)
            row = self._log.retrying(self._conn, lambda params=params: self._conn.execute(query, params).fetchone())
            out[tp] = row[0] if row else None
        return out

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._reader.seek(tp, offset)

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        self._reader.pause(tps)

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        self._reader.resume(tps)

    def close(self) -> None:
        self._reader.close()
        self._conn.close()

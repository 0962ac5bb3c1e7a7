"""MySqlIncrementalSnapshot: signals and the DBLog incremental snapshot for MySQL/MariaDB.

Debezium's SignalBasedIncrementalSnapshotChangeEventSource (MySQL flavour): chunks of
`incremental.snapshot.chunk.size` rows in primary-key order, each read between a low and a
high watermark written to the signal table (`signal.data.collection`), with the
`insert_insert` or `insert_delete` strategy. The algorithm (window, chunk loop, de-duplication,
context and offsets, signal actions) is cdc_debezium's IncrementalSnapshotSource; this module is
MySQL's part: its tables, the chunk and maximum-key queries, the watermark writes, the binlog's
positions and where the dispatcher hands changes over.

Chunk queries let the database compare keys in its own collation and type order, with a row
constructor: `WHERE (k1, k2) > (%s, %s) AND (k1, k2) <= (%s, %s) ORDER BY k1, k2 LIMIT n`.

With `read.only=true` (Debezium's MySqlReadOnlyIncrementalSnapshotChangeEventSource) nothing is written:
the watermarks are the executed GTID sets read before and after the chunk SELECT (incremental_read_only.py)
and the window is kept from the streamed changes' GTIDs; the file and kafka channels drive it, and the
signal table, if set, is still read (signals inserted by someone else, as Debezium allows).

Streamed changes are not held back by the snapshot (issue 22): with signal-table watermarks the chunk's
low watermark, SELECT and high watermark run on the chunk thread with their own connection, so the binlog
keeps streaming while a window is open (as Debezium's does: changes to rows not in the chunk go out at
once), and the lock makes the chunk's rows registering atomic with the stream's de-duplication. The next
chunk starts only once the last one's rows have been taken by a poll: a poll batch holds at most one
chunk, and a change streamed after it waits for that chunk's rows, not for several. The read.only GTID
watermarks still read the chunk on the task thread (the window follows the stream's GTIDs there).

How it plugs in (only when a signal channel is enabled; otherwise nothing of this runs):
the streaming source decodes the signal table too (`captures`), the dispatcher's `change`
is wrapped (`attach`), and the task calls `tick()` from `poll()` to poll the file/kafka
channels and start the next chunk.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pymysql
import pymysql.cursors

from cdc.api import Struct
from cdc_debezium.envelope import Operation
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.incremental import COLLECTIONS, OFFSET_KEYS, PRIMARY_KEY, Collection
from cdc_debezium.signals.incremental_source import DENIED, RETRY, SKIP, Chunk, IncrementalSnapshotSource, key_of
from cdc_debezium.source_info import SnapshotRecord
from cdc_mysql.catalog import read_tables
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection
from cdc_mysql.dispatcher import EventDispatcher
from cdc_mysql.incremental_read_only import GtidSet, GtidWindow, check_gtids, parse_gtid, read_executed
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.schema import MySqlSchema, TableSchema
from cdc_mysql.snapshot import captured_tables
from cdc_mysql.source_info import SourceInfo

log = logging.getLogger(__name__)


def _q(ident: str) -> str:
    return "`" + ident.replace("`", "``") + "`"


def _split(table_id: str) -> tuple[str, str]:
    db, _, name = table_id.partition(".")
    return db, name


class MySqlIncrementalSnapshot(IncrementalSnapshotSource):
    """Signals (source, file, kafka channels) and the incremental snapshot of one MySQL task."""

    db_errors = (pymysql.err.MySQLError,)
    ids_ignore_case = True
    thread_name = "mysql-incremental-snapshot"

    def __init__(
        self,
        config: MySqlConnectorConfig,
        signals: SignalConfig,
        connection: MySqlConnection,
        schema: MySqlSchema,
        source_info: SourceInfo,
        dispatcher: EventDispatcher,
        is_mariadb: bool,
        task_context: Any,
        stored: dict[str, Any] | None,
    ) -> None:
        self.config = config
        self.connection = connection
        self.schema = schema
        self.source_info = source_info
        self.dispatcher = dispatcher
        self.is_mariadb = is_mariadb
        self.offset: MySqlOffsetContext | None = None
        self._conn: pymysql.connections.Connection | None = None
        self._chunk_conn: pymysql.connections.Connection | None = None
        self._schema_cache: tuple[str, TableSchema] | None = None
        self._forward: Callable[..., None] = dispatcher.change
        self._streaming: Any = None
        # Pacing: the next chunk starts once the last one's rows have been taken from the buffer (the
        # dispatcher's count of taken records reached this), so a poll batch holds at most one chunk
        # ahead of the changes streamed after it.
        self._drain_mark = 0
        super().__init__(signals, config.topic_prefix, task_context, stored, config.read_only, dispatcher._put)

    # -- wiring ------------------------------------------------------------------------------
    def attach(self, streaming: Any) -> None:
        """Hooks into the streaming source before it starts: the signal table is decoded, changes pass here."""
        self.offset = streaming.offset
        self._attached()
        if self.read_only:
            self._streaming = streaming
            with self._db().cursor() as cur:
                check_gtids(cur, self.is_mariadb, f"{self.config.hostname}:{self.config.port}")
        base = streaming.captures_table
        if self.signal_table is not None:
            streaming.captures_table = lambda db, t: base(db, t) or f"{db}.{t}".lower() == self.signal_table
        self.dispatcher.change = self._change  # type: ignore[method-assign]

    def _publish_state(self, state: dict[str, Any]) -> None:
        if self.offset is not None:
            self.offset.incremental = state

    def _current_offset(self) -> Any:
        return self.offset.offset() if self.offset else None

    def _change(
        self,
        op: Operation,
        ts: TableSchema,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        source: Struct,
        offset: dict[str, Any],
        tx_id: str | None,
    ) -> None:
        if not self._on_change(op.value, ts, ts.table.id, before, after, source, offset):
            return
        state = self.offset.incremental if self.offset is not None else {}
        if offset.get(PRIMARY_KEY) != state.get(PRIMARY_KEY) or offset.get(COLLECTIONS) != state.get(COLLECTIONS):
            # The state moved on inside this rows event (a window closed): later rows carry the new one.
            offset = {k: v for k, v in offset.items() if k not in OFFSET_KEYS}
            offset.update(state)
        self._forward(op, ts, before, after, source, offset, tx_id)

    def _captures_signal_table(self, ts: TableSchema) -> bool:
        return self.config.captures_table(ts.table.db, ts.table.name)

    def _column(self, row: dict[str, Any], index: int) -> Any:
        values = list(row.values())
        return values[index] if index < len(values) else None

    def _emit_rows(self, rows: list[Any], pos: Any, before: dict[str, Any], after: dict[str, Any]) -> None:
        file, binlog_pos, row = pos.get("file"), pos.get("pos"), pos.get("row")
        ts_ms = int(time.time() * 1000)
        last = len(rows) - 1
        read = self.dispatcher.read
        src, src_table = None, None
        for i, (ts, values) in enumerate(rows):
            if ts.table is not src_table:  # one source block for the chunk's rows: they differ in nothing
                src_table = ts.table
                src = self.source_info.struct(
                    ts_ms=ts_ms, db=ts.table.db, table=ts.table.name, server_id=0, file=file, pos=binlog_pos,
                    row=row, snapshot=SnapshotRecord.INCREMENTAL,
                )  # fmt: skip
            read(ts, values, src, after if i == last else before)
        self._drain_mark = self.dispatcher.events + len(self.dispatcher.buffer)

    def _drained(self) -> bool:
        return self.dispatcher.events >= self._drain_mark

    def _backlog(self) -> int:
        return len(self.dispatcher.buffer)

    # -- the tables and the chunks -------------------------------------------------------------
    def captured_collections(self) -> list[str]:
        return [f"{db}.{t}" for db, t in captured_tables(self._db(), self.config)]

    def _db(self) -> pymysql.connections.Connection:
        if self._conn is None or not self._conn.open:
            self._conn = self._connect()
        return self._conn

    def _connect(self, **kwargs: Any) -> pymysql.connections.Connection:
        conn = self.connection.connect(autocommit=True, **kwargs)
        with conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
        return conn

    def _reset_connection(self) -> None:
        """After a lost connection (no chunk read is in flight): both are opened again when next used."""
        for conn in (self._conn, self._chunk_conn):
            if conn is not None:
                try:
                    conn.close()
                except Exception as e:
                    log.debug("closing the incremental snapshot connection: %s", e)
        self._conn = self._chunk_conn = None

    def _table_schema(self, table_id: str, cached: bool = False) -> TableSchema | None:
        """The table as information_schema has it; `cached`: read once per snapshot of the table (its
        chunks share it, as Debezium's do without incremental.snapshot.allow.schema.changes)."""
        if cached and self._schema_cache is not None and self._schema_cache[0] == table_id:
            return self._schema_cache[1]
        found = read_tables(self._db(), [_split(table_id)], self.is_mariadb)
        if not found:
            return None
        table, meta = found[0]
        self.schema.set_meta(table, meta)
        ts = self.schema.schema_for(table)
        self._schema_cache = (table_id, ts)
        return ts

    def _chunk_table(self, current: Collection, cached: bool) -> TableSchema | None:
        try:
            return self._table_schema(current.id, cached=cached)
        except pymysql.err.MySQLError as e:
            log.warning("Incremental snapshot of %s skipped: its definition cannot be read (%s)", current.id, e)
            return None

    def _key_names(self, table: TableSchema) -> list[str]:
        return [name for name, _ in table.key_columns]

    def _max_key(self, current: Collection, order: list[str]) -> tuple[Any, ...] | None:
        cols = ", ".join(_q(c) for c in order)
        desc = ", ".join(f"{_q(c)} DESC" for c in order)
        cond = f" AND ({current.condition})" if current.condition else ""
        with self._db().cursor() as cur:
            cur.execute(f"SELECT {cols} FROM {_table(current.id)} WHERE 1=1{cond} ORDER BY {desc} LIMIT 1")
            top = cur.fetchone()
        return tuple(top) if top is not None else None

    def _reads_on_thread(self) -> bool:
        # signal-table watermarks: the binlog keeps streaming while the chunk is read; read.only GTID
        # watermarks: on the task thread, where the window follows the stream's GTIDs
        return not self.read_only

    @contextmanager
    def _session(self, threaded: bool) -> Iterator[Any]:
        """A cursor on the chunk thread's own connection (the task thread's may run a signal's query
        meanwhile), or on the task thread's."""
        conn = self._chunk_db() if threaded else self._db()
        with conn.cursor() as cur:
            yield cur

    def _chunk_db(self) -> pymysql.connections.Connection:
        """The chunk thread's connection (only that thread uses it)."""
        if self._chunk_conn is None or not self._chunk_conn.open:
            self._chunk_conn = self._connect()
        return self._chunk_conn

    def _select_chunk(self, cur: Any, chunk: Chunk) -> tuple[dict[Any, Any], tuple[Any, ...] | None, int]:
        order = chunk.order
        cols = ", ".join(_q(c) for c in order)
        marks = ", ".join(["%s"] * len(order))
        where, args = f"({cols}) <= ({marks})", list(chunk.maximum)
        if chunk.after is not None:
            where, args = f"({cols}) > ({marks}) AND {where}", [*chunk.after, *args]
        condition = chunk.collection.condition
        # The query has parameters, so a filter's own `%` is doubled.
        cond = f" AND ({condition.replace('%', '%%')})" if condition else ""
        cur.execute(
            f"SELECT * FROM {_table(chunk.collection.id)} WHERE {where}{cond} ORDER BY {cols} LIMIT {chunk.size}",
            args,
        )
        names = [d[0] for d in cur.description or ()]
        fetched = cur.fetchall()
        ts = chunk.table
        rows: dict[Any, Any] = {}
        end = None
        for values in fetched:
            row = dict(zip(names, values, strict=False))
            rows[key_of(ts, row)] = (ts, row)
            end = tuple(row[c] for c in order)
        return rows, end, len(fetched)

    def _insert_signal(self, cur: Any, values: tuple[str, str, str]) -> None:
        cur.execute(f"INSERT INTO {_table(self.signals.data_collection or '')} VALUES (%s, %s, %s)", values)

    def _delete_signal(self, cur: Any, signal_id: str) -> None:
        cur.execute(f"DELETE FROM {_table(self.signals.data_collection or '')} WHERE {_q('id')} = %s", (signal_id,))

    def _failure(self, error: BaseException) -> str:
        code = error.args[0] if error.args and isinstance(error.args[0], int) else None
        if code in _ACCESS_DENIED:
            return DENIED  # PyMySQL reports these as OperationalError, like a lost connection
        if isinstance(error, pymysql.err.OperationalError | pymysql.err.InterfaceError):
            return RETRY
        return SKIP

    def _grant_hint(self) -> str:
        return (
            f"grant it SELECT on the table and INSERT, DELETE on "
            f"{self.signals.data_collection or 'signal.data.collection'} (the watermarks), or set read.only=true"
        )

    # -- read.only=true: GTID-set watermarks ----------------------------------------------------
    def _read_only_watermark(self, cur: Any, chunk_id: str, which: str) -> None:
        """Low: the executed set, then the SELECT's consistent snapshot; high: the set after it."""
        if which == "open":
            self._window = GtidWindow(chunk_id, read_executed(cur, self.is_mariadb))
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            return
        cur.execute("COMMIT")
        window = self._window
        if window is not None and window.chunk_id == chunk_id:
            window.high = read_executed(cur, self.is_mariadb)

    def _transaction_of(self, source: Struct) -> tuple[str, int] | None:
        gtid = source.get("gtid")
        return parse_gtid(str(gtid), self.is_mariadb) if gtid else None

    def _window_close_at(self, source: Struct, offset: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
        if self.offset is None:
            return None
        # The rows rank at this transaction's start (its GTID event), below its changes, and their
        # offset resumes at this change, which follows them.
        resume = dict(offset)
        resume["row"] = max(int(offset.get("row") or 0) - 1, 0)
        return {"file": self.offset.file, "pos": self.offset.pos, "row": 0}, resume

    def _poll_window(self) -> None:
        self._gtid_reached()

    def _gtid_reached(self) -> bool:
        """From tick(): the stream has executed the high watermark's transactions; the window closes here."""
        window = self._window_of_chunk()
        if window is None or window.high is None or self._streaming is None or self.offset is None:
            return False
        if not window.reached_by(GtidSet.parse(str(self._streaming.gtid_set), self.is_mariadb)):
            return False
        off = self.offset
        self._read_only_close({"file": off.file, "pos": off.pos, "row": 0}, off.offset())
        return True

    def _after_chunk_started(self) -> None:
        """Debezium's readUntilGtidChange: while the stream already stands at the chunk's high watermark (nothing
        committed meanwhile), close it and read the next, until the batch is full (poll() then returns)."""
        if self._window is None:
            return
        limit = self.config.max_batch_size
        while len(self.dispatcher.buffer) < limit and self._gtid_reached():
            ctx = self.ctx
            if not ctx.running or ctx.paused or ctx.chunk_id is not None:
                return
            self._read_chunk()

    def _reread(self, window: GtidWindow) -> bool:
        if not window.server_changed():
            return False
        # Debezium's rereadChunk: the chunk's rows are dropped and the same key range read again.
        assert window.high is not None
        log.warning(
            "Incremental snapshot chunk %s: another server wrote while it was read (GTID sources %s, then %s: "
            "a failover); reading the chunk again",
            window.chunk_id, _sources(window.low), _sources(window.high),
        )  # fmt: skip
        return True

    # -- blocking snapshots ----------------------------------------------------------------------
    # Streaming waits while the tables are read (tick() returns True), then goes on from where it stopped.
    # The rows rank at the stream's position when it paused, so every change streamed afterwards wins over
    # them and the result converges to the tables.
    @contextmanager
    def _blocking_session(self) -> Iterator[Any]:
        assert self.offset is not None
        offset = self.offset.offset()
        file, pos = self.offset.file, self.offset.pos
        conn = self._connect(cursorclass=pymysql.cursors.SSCursor)
        try:
            yield conn, offset, file, pos
        finally:
            conn.close()

    def _blocking_table(self, session: Any, table_id: str) -> TableSchema | None:
        return self._table_schema(table_id)

    def _blocking_rows(self, session: Any, current: Collection, ts: TableSchema) -> Iterator[int]:
        conn, offset, file, pos = session
        db, name = _split(current.id)
        # As Debezium, a blocking snapshot's additional-conditions filter is a whole SELECT.
        query = current.condition or f"SELECT * FROM {_q(db)}.{_q(name)}"
        with conn.cursor() as cur:
            cur.execute(query)
            names = [d[0] for d in cur.description or ()]
            while batch := cur.fetchmany(1024):
                ts_ms = int(time.time() * 1000)
                for values in batch:
                    src = self.source_info.struct(
                        ts_ms=ts_ms, db=db, table=name, server_id=0, file=file, pos=pos, snapshot=SnapshotRecord.TRUE,
                    )  # fmt: skip
                    self.dispatcher.read(ts, dict(zip(names, values, strict=False)), src, offset)
                yield len(batch)


def _table(table_id: str) -> str:
    db, name = _split(table_id)
    return f"{_q(db)}.{_q(name)}"


# MySQL/MariaDB error codes of a refused privilege: database, table, column, and a missing global privilege
_ACCESS_DENIED = frozenset({1044, 1142, 1143, 1227})


def _sources(gtids: GtidSet) -> str:
    """A GTID set's sources for a log line: MySQL server UUIDs, MariaDB `domain-server`."""
    return ",".join(f"{s}-{gtids.servers[s]}" if s in gtids.servers else s for s in sorted(gtids.intervals)) or "none"

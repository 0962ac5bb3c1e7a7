"""MySqlStreamingChangeEventSource: binlog → change events through python-mysql-replication.

Guards against the library's silent losses:
- a resume always starts at a transaction boundary (skip counts cover emitted rows),
  because rows whose TABLE_MAP was not seen are dropped by the library;
- the library's own reconnect (which restarts from the original GTID set, or mid
  transaction) is disabled: a lost connection surfaces here and the reader restarts
  from its own last transaction boundary, with backoff;
- compressed events (MySQL TRANSACTION_PAYLOAD, MariaDB *_COMPRESSED) arrive as
  NotImplementedEvent and fail the task instead of being dropped.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    GtidEvent,
    HeartbeatLogEvent,
    MariadbAnnotateRowsEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    NotImplementedEvent,
    QueryEvent,
    RotateEvent,
    RowsQueryLogEvent,
    XidEvent,
)
from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

from cdc.api import ConnectException, Struct
from cdc_debezium.envelope import Operation
from cdc_mysql import debezium_keys
from cdc_mysql import gtid as gtids
from cdc_mysql.catalog import read_tables
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import (
    ACCESS_DENIED,
    CONNECTION_LOST,
    MySqlConnection,
    error_text,
    replication_grant_advice,
    tls_refusal,
)
from cdc_mysql.dispatcher import EventDispatcher
from cdc_mysql.failure_handling import EVENT_ERRORS, handle
from cdc_mysql.lineage import BinlogLineage, position, sequence_text
from cdc_mysql.lineage_watch import LineageBreak, LineageWatch, ServerState
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.row_decoder import RowDecoders
from cdc_mysql.schema import MySqlSchema, TableSchema, table_def_from_table_map
from cdc_mysql.schema_change import classify, is_ddl, source_table
from cdc_mysql.server_ids import FROM_CONFIG, ServerIdChoice, is_same_id_clash, reader_host, same_id_advice
from cdc_mysql.snapshot import missing_rows_advice
from cdc_mysql.source_info import SourceInfo
from cdc_mysql.table import TableDef, TableMeta
from cdc_mysql.table_map_reuse import TableMapReuse
from cdc_mysql.value_converters import with_mariadb_binary_types

log = logging.getLogger(__name__)
_Stop = TypeVar("_Stop", bound=Exception)  # what ends the stream with its offset marked (_marked)

# Event types python-mysql-replication cannot decode that carry row changes or DDL.
COMPRESSED_EVENTS = {
    0x28: "TRANSACTION_PAYLOAD (MySQL binlog_transaction_compression=ON)",
    0xA5: "QUERY_COMPRESSED (MariaDB log_bin_compress=ON)",
    0xA6: "WRITE_ROWS_COMPRESSED (MariaDB log_bin_compress=ON)",
    0xA7: "UPDATE_ROWS_COMPRESSED (MariaDB log_bin_compress=ON)",
    0xA8: "DELETE_ROWS_COMPRESSED (MariaDB log_bin_compress=ON)",
    0xA9: "WRITE_ROWS_COMPRESSED_V1 (MariaDB log_bin_compress=ON)",
    0xAA: "UPDATE_ROWS_COMPRESSED_V1 (MariaDB log_bin_compress=ON)",
    0xAB: "DELETE_ROWS_COMPRESSED_V1 (MariaDB log_bin_compress=ON)",
}
HEARTBEAT_PERIOD_S = 1.0


class BinlogConnectionLost(Exception):
    """Raised instead of the library's silent reconnect, so the reader resumes at a transaction boundary."""


class _LossReportingConnection(pymysql.connections.Connection):
    """The reader's connections: a lost connection is reported (BinlogConnectionLost), and each packet
    read is shown to `packet_hook` (TableMapReuse) when there is one."""

    packet_hook: Callable[[Any, bytes], None] | None = None

    def __init__(self, *args: Any, packet_hook: Callable[[Any, bytes], None] | None = None, **kwargs: Any) -> None:
        self.packet_hook = packet_hook  # before connecting: the handshake reads packets too
        super().__init__(*args, **kwargs)

    def _read_packet(self, packet_type: Any = pymysql.connections.MysqlPacket) -> Any:
        try:
            packet = super()._read_packet(packet_type)
        except pymysql.err.OperationalError as e:
            if e.args and e.args[0] in CONNECTION_LOST:
                raise BinlogConnectionLost(str(e)) from e
            raise
        hook = self.packet_hook
        if hook is not None:
            hook(self, packet._data)
        return packet


class CompressedTransactionError(ConnectException):
    pass


class MySqlStreamingChangeEventSource:
    # Skip the library's parse of a TABLE_MAP identical to its table's last one (table_map_reuse.py).
    REUSE_TABLE_MAPS = True

    def __init__(
        self,
        config: MySqlConnectorConfig,
        connection: MySqlConnection,
        schema: MySqlSchema,
        source_info: SourceInfo,
        dispatcher: EventDispatcher,
        offset: MySqlOffsetContext,
        is_mariadb: bool,
        stop: threading.Event,
        use_gtid_start: bool = False,
        reader_id: ServerIdChoice | None = None,
    ) -> None:
        """`reader_id`: the server id the reader registers with and where it came from (server_ids.py);
        default: `connection.server_id`, as given by the config."""
        self.config = config
        self.connection = connection
        if reader_id is None:
            if connection.server_id is None:
                raise ValueError("the binlog reader needs a server id: database.server.id, or one resolved by the task")
            reader_id = ServerIdChoice(connection.server_id, FROM_CONFIG)
        self.reader_id = reader_id
        self.schema = schema
        self.source_info = source_info
        self.dispatcher = dispatcher
        self.offset = offset
        self.is_mariadb = is_mariadb
        self.stop = stop
        self.use_gtid_start = use_gtid_start and bool(offset.gtids)
        self.gtid_set = gtids.parse(offset.gtids, is_mariadb)
        self.gtid_filter = config.gtid_filter
        # Which tables' row events are decoded; an incremental snapshot adds its signal table.
        self.captures_table = config.captures_table
        if offset.transaction and dispatcher.transactions is not None:
            # Resuming inside a transaction whose BEGIN was already emitted.
            dispatcher.transactions.restore(offset.transaction)
        offset.transaction = {}
        self._reader: BinLogStreamReader | None = None
        self.table_map_reuse: TableMapReuse | None = None
        self.reconnects = 0
        self.row_decoders = RowDecoders()

    # -- life cycle ----------------------------------------------------------------------------
    def execute(self) -> Iterator[None]:
        """Streams until `stop` is set; reconnects with backoff while the server is unreachable.

        A generator driven by the task's `poll()`: it yields after each binlog event, so decoding
        runs on the polling thread (no hand-off between threads, which costs more than it saves
        under the GIL) and `poll()` returns as soon as a batch is full or poll.interval.ms passed.
        """
        delay = self.config.reconnect_backoff_s
        attempts = 0
        while not self.stop.is_set():
            streamed = False  # this connection sent events: a later 1236 means the history changed under it
            try:
                if self.reconnects:
                    # The address may now lead to another server (a failover), whose positions
                    # mean nothing for this offset.
                    self.use_gtid_start = self._lineage_changed()
                for _ in self._stream():
                    streamed = True
                    if attempts:
                        # The stream sends events again: the reconnect worked. errors.max.retries counts
                        # consecutive failed attempts (Debezium's), not every loss in the task's life.
                        attempts, delay = 0, self.config.reconnect_backoff_s
                    yield
                if self.stop.is_set():
                    return
                # A blocking dump ends only when the server ends it: a clean shutdown or restart (its EOF
                # packet ends python-mysql-replication's iteration) or a killed dump thread. Reconnect, as
                # for a lost connection, rather than stop streaming in silence.
                raise BinlogConnectionLost("the server ended the binlog stream (a shutdown or restart)")
            except (BinlogConnectionLost, pymysql.err.OperationalError, pymysql.err.InterfaceError, OSError) as e:
                if self.stop.is_set():
                    return  # stop() shut the socket down
                if isinstance(e, pymysql.err.OperationalError) and tls_refusal(self.config, error_text(e)):
                    raise self.connection.refused(e) from None  # a certificate check: waiting will not fix it
                if isinstance(e, pymysql.err.OperationalError) and e.args and e.args[0] not in CONNECTION_LOST:
                    if is_same_id_clash(e.args[0], error_text(e)):
                        # Not a lineage break (MySQL says it with 1236 too): the binlog is fine, another reader
                        # took this one's server id. Reconnecting would only disconnect that one in turn.
                        raise ConnectException(same_id_advice(self.reader_id, e.args[0], error_text(e))) from e
                    if streamed and e.args[0] == 1236:
                        # Mid-stream, the server lost the binlog it was sending ("could not find next
                        # log": a RESET MASTER or a restore; a binlog truncated by a crash): the events
                        # read since the last lineage check may already be a new history's.
                        raise self._marked(self._explain(e, streamed=True)) from e
                    raise self._explain(e) from e
                attempts += 1
                limit = self.config.reconnect_attempts
                if 0 <= limit < attempts:
                    raise ConnectException(
                        f"Lost the binlog connection to {self.config.hostname}:{self.config.port} and "
                        f"{attempts - 1} reconnect attempts failed (errors.max.retries={limit}): {e}"
                    ) from e
                log.warning(
                    "Binlog connection lost (%s); reconnecting in %.1fs from %s:%d (attempt %d)",
                    e, delay, self.offset.file, self.offset.pos, attempts,
                )  # fmt: skip
                if self.stop.is_set():
                    return
                resume_at = time.monotonic() + delay
                while time.monotonic() < resume_at:
                    if self.stop.wait(min(0.1, max(0.0, resume_at - time.monotonic()))):
                        return
                    yield
                delay = min(delay * 2, self.config.reconnect_backoff_max_s)
                self.reconnects += 1
                # After a reconnect, resume by file/pos: the position is exact and GTID
                # start would need the server's GTID index (unless _lineage_changed).
                self.use_gtid_start = False

    def _lineage_changed(self) -> bool:
        """After a reconnect: is this still the server the offset's positions belong to? If not,
        bump the epoch (lineage.py) and resume by GTID; without GTIDs, fail with advice."""
        off = self.offset
        if off.server_identity is None:
            return False
        self.connection.close()  # that session died with the binlog connection
        try:
            identity = self.connection.server_identity()
        except ConnectException as e:
            if isinstance(e.__cause__, pymysql.err.OperationalError):
                raise e.__cause__ from None  # still unreachable (restarting): execute() backs off and retries
            raise
        if identity == off.server_identity:
            return False
        if not off.gtids:
            raise ConnectException(
                f"After reconnecting, {self.config.hostname}:{self.config.port} is another server ({identity}, was "
                f"{off.server_identity}): a failover. Its binlog positions are not this offset's and the offset has no "
                "GTIDs to resume by; enable GTIDs (gtid_mode=ON on MySQL) or take a new snapshot "
                "(snapshot.mode=when_needed with the offsets deleted)"
            )
        lineage = BinlogLineage.decide(
            off.epoch,
            off.server_identity,
            position(off.file, off.pos),
            identity,
            position(*self.connection.master_status()),
            True,
        )
        off.epoch, off.server_identity = lineage.epoch, lineage.server_identity
        self.source_info.sequence = sequence_text(lineage.epoch)
        return True

    def data_ready(self) -> bool:
        """True if the next binlog packet can be read without waiting for the server.

        poll() returns what it has instead of blocking on an idle stream (the server's heartbeat
        would wake it only after a second). Peeks the connection's buffer with the socket briefly
        non-blocking; nothing is consumed.
        """
        reader = self._reader
        conn = getattr(reader, "_stream_connection", None) if reader is not None else None
        sock = getattr(conn, "_sock", None)
        rfile = getattr(conn, "_rfile", None)
        if sock is None or rfile is None:
            return True
        timeout = sock.gettimeout()
        try:
            sock.settimeout(0)
            return bool(rfile.peek(1))
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True  # a broken connection: let the reader hit the error and reconnect
        finally:
            try:
                sock.settimeout(timeout)
            except OSError as e:
                log.debug("restoring the binlog socket timeout: %s", e)

    def close(self) -> None:
        """May run on another thread than the reader: shutting the socket down wakes a blocked read."""
        reader = self._reader
        if reader is not None:
            sock = getattr(getattr(reader, "_stream_connection", None), "_sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError as e:
                    log.debug("shutting down the binlog socket: %s", e)
            try:
                reader.close()
            except Exception as e:  # closing a dead socket may fail; nothing left to do
                log.debug("closing the binlog reader: %s", e)

    def _checked(self, watch: LineageWatch, file: str, end_pos: int) -> None:
        """`watch.check`, with a break marked in the offset before it is raised (`_marked`)."""
        try:
            watch.check(file, end_pos, str(self.gtid_set))
        except LineageBreak as e:
            raise self._marked(e) from None

    def _marked(self, error: _Stop) -> _Stop:
        """Mark the break in the stored offset, then let it stop the task.

        The events read since the last check may already be the new history's (a RESET MASTER
        whose new binlog grew past the reader's position is read on as if nothing happened, GTIDs
        and positions looking valid), and their offsets are stored with them. So one last record,
        a heartbeat, carries the offset with `lineage_break` (offset_context.LINEAGE_BREAK); the
        task returns it before it fails (poll returns what is decoded, then raises), and a restart
        then refuses to resume from that offset: a new snapshot (snapshot.mode=when_needed), on a
        new epoch."""
        marked = replace(self.offset, lineage_break=str(error).split(";", 1)[0][:300])
        self.dispatcher.heartbeat_now(marked.offset())
        return error

    def _lineage_watch(self) -> LineageWatch:
        """This stream's LineageWatch (lineage_watch.py), reading the server on the connector's own connection."""
        connection, is_mariadb = self.connection, self.is_mariadb

        def read_state() -> ServerState:
            file, pos = connection.master_status()
            return ServerState(connection.server_identity(), file, pos, connection.executed_gtids(is_mariadb))

        def read_event(file: str, pos: int) -> dict[str, Any] | None:
            try:
                rows = connection.query("SHOW BINLOG EVENTS IN %s FROM %s LIMIT 1", (file, pos))
            except pymysql.err.MySQLError as e:
                text = str(e.args[1] if len(e.args) > 1 else e)
                if e.args and e.args[0] == 1220 and "could not find target log" not in text.lower():
                    return {}  # "Wrong offset or I/O error": no event starts there any more
                log.debug("binlog event at %s:%d not checked: %s", file, pos, e)
                return None  # a purged file, no privilege: the server cannot say
            return rows[0] if rows else {}

        return LineageWatch(is_mariadb, self.offset.server_identity, read_state, read_event=read_event)

    def _explain(self, e: pymysql.err.OperationalError, streamed: bool = False) -> ConnectException:
        """One line for a binlog error; `streamed`: this task had streamed before the server refused."""
        code = e.args[0] if e.args else None
        message = str(e.args[1]) if len(e.args) > 1 else str(e)
        if code == 1236 and streamed and self._file_still_there():
            # Not a purge: the file is there, but what the reader had read up to is not an event of it any
            # more (the server's text then speaks of bogus data or max_allowed_packet, which misleads).
            return ConnectException(
                f"The server cannot send the binlog from {self.offset.file}:{self.offset.pos} "
                f"(gtids={self.offset.gtids}): {message}. Binlog file {self.offset.file} is still on the server "
                "but no longer holds what was read there: the binlog was reset (RESET MASTER) or the server "
                "restored from a backup under the connector, so changes may be missing; restart with "
                "snapshot.mode=when_needed to take a new snapshot (the stored offset keeps the break)"
            )
        if code == 1236:
            return ConnectException(
                f"The server cannot send the binlog from {self.offset.file}:{self.offset.pos} "
                f"(gtids={self.offset.gtids}): {message}. The binlog file {self.offset.file} has most likely been "
                "purged, or the binlog was reset (RESET MASTER) or restored from a backup; set "
                "snapshot.mode=when_needed to take a new snapshot, or increase the binlog retention "
                "(binlog_expire_logs_seconds / expire_logs_days)"
            )
        if code in ACCESS_DENIED:
            return ConnectException(replication_grant_advice(self.config.user, code, message))
        return ConnectException(f"Binlog streaming failed with MySQL error {code}: {message}")

    def _file_still_there(self) -> bool:
        """Whether the server lists the offset's binlog file (False when it cannot be asked)."""
        try:
            self.connection.close()  # the session may have died with the dump's
            return self.offset.file in self.connection.binlog_files()
        except Exception as e:  # the message then falls back to the general advice
            log.debug("SHOW BINARY LOGS after a refused binlog position: %s", e)
            return False

    # -- the read loop ---------------------------------------------------------------------------
    def _reader_for_position(self) -> BinLogStreamReader:
        settings = self.connection.settings()
        settings["read_timeout"] = 30
        kwargs: dict[str, Any] = {
            "connection_settings": settings,
            "server_id": self.reader_id.server_id,
            "blocking": True,
            "resume_stream": True,
            "filter_non_implemented_events": False,
            "slave_heartbeat": HEARTBEAT_PERIOD_S,
            "pymysql_wrapper": _LossReportingConnection,  # with TableMapReuse's hook when on, below
            "enable_logging": False,
            # Registering with a host name makes the reader visible in SHOW SLAVE HOSTS (the server id checks).
            "report_slave": reader_host(self.config.topic_prefix),
            "annotate_rows_event": self.config.include_query and self.is_mariadb,
        }
        if self.use_gtid_start:
            kwargs["auto_position"] = self.offset.gtids
            kwargs["is_mariadb"] = self.is_mariadb
        else:
            # MariaDB: is_mariadb=True would ignore file/pos; the MySQL dump path works for both.
            kwargs["log_file"] = self.offset.file
            kwargs["log_pos"] = self.offset.pos
        if not self.REUSE_TABLE_MAPS:
            self.table_map_reuse = None
            return BinLogStreamReader(**kwargs)
        reuse = self.table_map_reuse = TableMapReuse()
        kwargs["pymysql_wrapper"] = partial(_LossReportingConnection, packet_hook=reuse.packet_read)
        reader = BinLogStreamReader(**kwargs)
        reuse.attach(reader)
        return reader

    def _stream(self) -> Iterator[None]:
        off = self.offset
        skip_events, skip_rows = off.event, off.row
        reader = self._reader = self._reader_for_position()
        watch = self._lineage_watch()
        reuse = self.table_map_reuse
        log.info(
            "Streaming binlog from %s:%d (gtids=%s, skipping %d events and %d rows)",
            off.file, off.pos, off.gtids, skip_events, skip_rows,
        )  # fmt: skip
        file = off.file
        table_maps: dict[int, TableSchema | None] = {}
        in_tx = False
        tx_file, tx_pos = off.file, off.pos
        tx_gtid: str | None = None
        tx_id: str | None = None
        thread: int | None = None
        query: str | None = None
        events_in_tx = 0
        first_tx = True
        # Resuming inside a transaction (events or rows of it already emitted): the first one sent
        # must be that transaction, written by the server the offset names (not another server's next
        # one after the same GTIDs, after a failover), or its first events would be skipped unread.
        resume_origin = off.server_id if (skip_events or skip_rows) else 0
        # gtid.source.filter.dml.events: the open transaction's GTID source is filtered out
        filter_dml, skip_source = self.config.gtid_filters_dml, False
        dispatcher = self.dispatcher
        source_info = self.source_info
        # Room for the largest burst one row can add (BEGIN, delete, tombstone, create).
        max_buffer = max(1, self.config.max_queue_size - 4)
        # max.queue.size.in.bytes: inside a large rows event too, hand what is decoded to poll() at the bound
        byte_bound = self.config.max_queue_size_in_bytes
        buffered_bytes = dispatcher.buffered_bytes
        captures = self.captures_table
        gtid_set = self.gtid_set
        decode_rows = self.row_decoders.rows
        change, buffer = dispatcher.change, dispatcher.buffer
        from_values, source_schema, row_index = Struct.from_values, source_info.schema, source_info.row_index
        try:
            closing = False
            for ev in reader:
                try:
                    if self.stop.is_set():
                        return
                    packet = ev.packet
                    end_pos = packet.log_pos
                    start_pos = end_pos - packet.event_size if end_pos else 0
                    if isinstance(ev, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                        events_in_tx += 1
                        if first_tx and events_in_tx <= skip_events:
                            continue
                        ts = table_maps.get(ev.table_id)
                        if ts is None or skip_source:
                            off.event, off.row = events_in_tx, 0
                            continue
                        try:
                            rows = decode_rows(ev)
                        except EVENT_ERRORS as e:
                            off.event, off.row = events_in_tx, 0
                            what = f"Rows event of {ts.table.id} at {file}:{start_pos}"
                            handle(
                                self.config.deserialization_failure,
                                debezium_keys.EVENT_DESERIALIZATION_FAILURE,
                                e,
                                what,
                            )
                            continue
                        first_row = skip_rows if first_tx and events_in_tx == skip_events + 1 else 0
                        ts_ms = ev.timestamp * 1000
                        server_id = packet.server_id
                        db, table = ts.table.db, ts.table.name
                        if isinstance(ev, WriteRowsEvent):
                            op, before_key, after_key = Operation.CREATE, None, "values"
                        elif isinstance(ev, UpdateRowsEvent):
                            op, before_key, after_key = Operation.UPDATE, "before_values", "after_values"
                        else:
                            op, before_key, after_key = Operation.DELETE, "values", None
                        # The offset of every row of this event: the transaction start, the events before it.
                        base = off.offset(event=events_in_tx - 1, row=0)
                        # One source block per row, differing only in `row`: copy a template.
                        template = source_info.streaming_values(
                            ts_ms, db, table, server_id, file, start_pos, tx_gtid, thread, query
                        )
                        off.event = events_in_tx - 1
                        try:
                            for i in range(first_row, len(rows)):
                                row = rows[i]
                                values = template.copy()
                                values[row_index] = i
                                offset = base.copy()
                                offset["row"] = off.row = i + 1
                                change(
                                    op,
                                    ts,
                                    row[before_key] if before_key else None,
                                    row[after_key] if after_key else None,
                                    from_values(source_schema, values),
                                    offset,
                                    tx_id,
                                )
                                if len(buffer) >= max_buffer or (byte_bound and buffered_bytes() >= byte_bound):
                                    yield  # max.queue.size (or .in.bytes) reached inside one large rows event
                        except EVENT_ERRORS as e:
                            what = f"Row {off.row} of the rows event of {ts.table.id} at {file}:{start_pos}"
                            handle(self.config.processing_failure, debezium_keys.EVENT_PROCESSING_FAILURE, e, what)
                            off.event, off.row = events_in_tx, 0
                        continue
                    if isinstance(ev, TableMapEvent):
                        if reuse is not None:
                            reuse.parsed(ev)
                        if captures(ev.schema, ev.table):
                            try:
                                table = table_def_from_table_map(ev)
                                # MariaDB's UUID/INET4/INET6 are BINARY(n) in the table map
                                table = with_mariadb_binary_types(table, self.schema.meta.get(table.id))
                                table_maps[ev.table_id] = self.schema.schema_for(table)
                            except EVENT_ERRORS as e:
                                table_maps[ev.table_id] = None  # its rows events are skipped
                                what = f"Table map of {ev.schema}.{ev.table} at {file}:{start_pos}"
                                handle(self.config.inconsistent_schema, debezium_keys.INCONSISTENT_SCHEMA, e, what)
                        else:
                            table_maps[ev.table_id] = None
                        continue
                    if isinstance(ev, XidEvent):
                        self._commit(file, end_pos, tx_gtid, ev.timestamp)
                        watch.committed(file, start_pos, ev.xid)
                        if watch.due():
                            self._checked(watch, file, end_pos)
                        in_tx, first_tx, events_in_tx, tx_gtid, tx_id, query = False, False, 0, None, None, None
                        skip_source = False
                        continue
                    if isinstance(ev, MariadbGtidEvent | GtidEvent):
                        in_tx, events_in_tx = True, 0
                        tx_file, tx_pos = file, start_pos
                        tx_gtid = ev.gtid
                        if gtid_set.covers(tx_gtid):  # re-used: a reset or another history (lineage_watch)
                            raise self._marked(watch.reused(tx_gtid, gtid_set, file, start_pos))
                        if first_tx and resume_origin and packet.server_id != resume_origin:
                            raise self._marked(watch.not_the_open_transaction(tx_gtid, packet.server_id, resume_origin))
                        skip_source = filter_dml and not self.gtid_filter(gtids.source_of(tx_gtid, self.is_mariadb))
                        tx_id, thread, query = tx_gtid, None, None
                        self._begin(tx_file, tx_pos, packet.server_id)
                        continue
                    if isinstance(ev, QueryEvent):
                        sql = ev.query.strip()
                        upper = sql[:10].upper()
                        thread = ev.slave_proxy_id
                        if upper.startswith("BEGIN"):
                            if not in_tx:
                                in_tx, events_in_tx = True, 0
                                tx_file, tx_pos = file, start_pos
                                tx_id = f"file={file},pos={start_pos}"
                                if first_tx and resume_origin and ev.packet.server_id != resume_origin:
                                    raise self._marked(
                                        watch.not_the_open_transaction(tx_id, ev.packet.server_id, resume_origin)
                                    )
                                self._begin(tx_file, tx_pos, ev.packet.server_id)
                            continue
                        if upper.startswith("COMMIT"):
                            self._commit(file, end_pos, tx_gtid, ev.timestamp)
                            in_tx, first_tx, events_in_tx, tx_gtid, tx_id, query = False, False, 0, None, None, None
                            skip_source = False
                            continue
                        if upper.startswith(("XA ", "SAVEPOINT", "ROLLBACK")):
                            continue
                        db = ev.schema.decode() if isinstance(ev.schema, bytes) else str(ev.schema or "")
                        # DDL commits implicitly; on resume, one already emitted is not emitted again.
                        if not (first_tx and skip_events > 0):
                            self._ddl(db, sql, ev, file, start_pos, end_pos, tx_gtid)
                        else:
                            log.debug("skipping DDL already processed before the restart: %s", sql)
                        in_tx, first_tx, events_in_tx, tx_gtid, tx_id, query = False, False, 0, None, None, None
                        skip_source = False
                        dispatcher.maybe_heartbeat(off.offset)
                        continue
                    if isinstance(ev, MariadbGtidListEvent):
                        if isinstance(gtid_set, gtids.MariaDbGtidSet):
                            listed = [g.gtid for g in ev.gtid_list]
                            if (skipped := watch.listed(listed, gtid_set, file)) is not None:
                                raise self._marked(skipped)
                        continue
                    if isinstance(ev, RotateEvent):
                        file = ev.next_binlog
                        if not in_tx:
                            off.file, off.pos = file, ev.position
                        continue
                    if isinstance(ev, MariadbAnnotateRowsEvent):
                        if self.config.include_query:
                            raw = ev.sql_statement
                            query = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
                        continue
                    if isinstance(ev, RowsQueryLogEvent):
                        if self.config.include_query:
                            query = ev.query
                        continue
                    if isinstance(ev, NotImplementedEvent):
                        self._not_implemented(ev, file, start_pos)
                        continue
                    if isinstance(ev, HeartbeatLogEvent) and not in_tx:
                        dispatcher.maybe_heartbeat(off.offset)
                        if end_pos and watch.due():
                            self._checked(watch, file, end_pos)
                        continue
                    if not in_tx:
                        dispatcher.maybe_heartbeat(off.offset)
                except GeneratorExit:
                    closing = True  # closed while yielding inside a large rows event: yield no more
                    raise
                finally:
                    # Hand control back to poll() after every event: records so far can be returned.
                    if not closing:
                        yield
        finally:
            self._reader = None
            try:
                reader.close()
            except Exception as e:
                log.debug("closing the binlog reader: %s", e)

    # -- transaction bookkeeping -------------------------------------------------------------------
    def _begin(self, file: str, pos: int, origin: int) -> None:
        """A transaction starts at `file:pos`; `origin`: the id of the server that wrote it, kept in
        the offset (Debezium's `server_id`) so that a resume inside it can tell it is the same one."""
        off = self.offset
        off.file, off.pos, off.event, off.row, off.server_id = file, pos, 0, 0, origin

    def _commit(self, file: str, end_pos: int, gtid: str | None, ts_sec: int) -> None:
        off = self.offset
        if gtid:
            self.gtid_set.add(gtid)
            off.gtids = str(self.gtid_set.filtered(self.gtid_filter))
        off.file, off.pos, off.event, off.row, off.ts_sec = file, end_pos, 0, 0, ts_sec
        self.dispatcher.commit_transaction(ts_sec * 1000, off.offset())
        # The server sends its heartbeat only when the binlog is idle: a binlog busy with tables
        # this connector does not capture would otherwise never move the stored offset forward.
        self.dispatcher.maybe_heartbeat(off.offset)

    def _ddl(self, db: str, sql: str, ev: QueryEvent, file: str, start: int, end: int, gtid: str | None) -> None:
        stmt = classify(sql)
        if gtid:
            self.gtid_set.add(gtid)
        off = self.offset
        off.file, off.pos, off.event, off.row, off.ts_sec = file, end, 0, 0, ev.timestamp
        if gtid:
            off.gtids = str(self.gtid_set.filtered(self.gtid_filter))
        offset = off.offset()
        ts_ms = ev.timestamp * 1000
        tables = [(t_db or db, t) for t_db, t in stmt.tables]
        renamed = [(t_db or db, t) for t_db, t in stmt.renamed_to]
        if stmt.kind == "TRUNCATE":
            for t_db, t in tables:
                if not self.config.captures_table(t_db, t):
                    continue
                # A table with no row event since the start is not known yet: its truncate still counts.
                table = self.schema.current.get(f"{t_db}.{t}") or self._read_table(t_db, t)
                if table is not None:
                    source = self.source_info.struct(
                        ts_ms=ts_ms, db=t_db, table=t, server_id=ev.packet.server_id, file=file, pos=start,
                        gtid=gtid, thread=ev.slave_proxy_id,
                    )  # fmt: skip
                    self.dispatcher.truncate(self.schema.schema_for(table), source, offset, gtid)
            return
        if not is_ddl(sql):
            return
        named = tables + renamed
        captured = any(self.config.captures_table(t_db, t) for t_db, t in named) if named else (
            not db or self.config.captures_database(db)
        )  # fmt: skip
        if self.config.history_store_only_captured and not captured:
            return
        # The declared column types (declared_types.py), before information_schema is read: of every
        # statement the history records, so that a restart replaying the history declares the same.
        self.schema.observe_ddl(db, sql)
        source = self.source_info.struct(
            ts_ms=ts_ms, db=db, table=source_table(stmt), server_id=ev.packet.server_id, file=file,
            pos=start, gtid=gtid, thread=ev.slave_proxy_id, query=sql if self.config.include_query else None,
        )  # fmt: skip
        if renamed:
            changes = [self._rename(old, new) for old, new in zip(tables, renamed, strict=False)]
        else:
            changes = [self._table_change(stmt.kind, t_db, t) for t_db, t in tables if stmt.kind != "DATABASE"]
        self.dispatcher.schema_change(db, sql, source, offset, changes, emit=captured)

    def _read_table(self, db: str, name: str) -> TableDef | None:
        """The table as information_schema has it now, remembered as the current definition."""
        try:
            found = read_tables(self.connection.conn, [(db, name)], self.is_mariadb)
        except pymysql.err.MySQLError as e:
            log.warning("Could not read table %s.%s from information_schema: %s", db, name, e)
            return None
        if not found:
            return None
        table, meta = found[0]
        self.schema.set_meta(table, meta)
        self.schema.current[table.id] = table
        return table

    def _rename(self, old: tuple[str, str], new: tuple[str, str]) -> tuple[str, str, TableDef | None, TableMeta | None]:
        """RENAME TABLE old TO new (or ALTER TABLE old RENAME TO new): an ALTER of the new name, as Debezium.

        A table renamed into the include list from a name that was not captured brings rows the
        connector never read: they are not emitted, and the log says so.
        """
        old_key = f"{old[0]}.{old[1]}"
        known = self.schema.current.pop(old_key, None)
        if known is not None:
            self.schema.set_meta(known, None)
        if self.config.captures_table(*new) and not self.config.captures_table(*old):
            log.warning(
                "Table %s.%s is captured from now on: it was renamed from %s, which this connector does not "
                "capture, so the existing rows it brings were never read and will not be emitted (only its "
                "changes from here on are). %s",
                new[0], new[1], old_key, missing_rows_advice(*new),
            )  # fmt: skip
        kind, table_id, table, meta = self._table_change("ALTER", *new)
        if table is None and known is not None:
            table = TableDef(new[0], new[1], known.columns, known.primary_key)
        return kind, table_id, table, meta

    def _table_change(self, kind: str, db: str, name: str) -> tuple[str, str, TableDef | None, TableMeta | None]:
        """The table a DDL produced, read from information_schema as the snapshot reads it.

        A DROP carries the last known definition. The server's catalog is read when the DDL is
        read: a reader lagging behind later DDL on the same table sees the later structure (rows
        are still decoded with the TABLE_MAP of their own transaction).
        """
        table_id, key = f'"{db}"."{name}"', f"{db}.{name}"
        known, known_meta = self.schema.current.get(key), self.schema.meta.get(key)
        if kind == "DROP":
            if known is not None:
                self.schema.set_meta(known, None)
                del self.schema.current[key]
            return kind, table_id, known, known_meta
        table = self._read_table(db, name)
        if table is None:
            return kind, table_id, known, known_meta
        return kind, table_id, table, self.schema.meta.get(key)

    def _not_implemented(self, ev: NotImplementedEvent, file: str, pos: int) -> None:
        kind = COMPRESSED_EVENTS.get(ev.event_type)
        if kind is not None:
            raise CompressedTransactionError(
                f"Binlog event {kind} at {file}:{pos} cannot be decoded by python-mysql-replication; its row "
                "changes would be lost, so the task stops here. Turn compression off "
                "(MySQL: SET GLOBAL binlog_transaction_compression=OFF; MariaDB: SET GLOBAL log_bin_compress=OFF; "
                "and in my.cnf), then re-snapshot (snapshot.mode=when_needed or delete the offsets), because the "
                "compressed transactions themselves cannot be read"
            )
        log.debug("Ignoring binlog event type 0x%02x at %s:%d (carries no row changes)", ev.event_type, file, pos)

"""MySqlConnectorTask: start-up guards, the snapshot decision, then snapshot and streaming driven by `poll()`.

Decoding runs on the thread that calls `poll()`: a separate reader thread handing records
over a queue measured ~11 µs per record slower under the GIL (the hand-off cost more than
the overlap saved). `max.batch.size`, `max.queue.size` (the most records held at once)
and `poll.interval.ms` keep their Debezium meaning.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from cdc.api import ConnectException, SourceRecord, SourceTask, Struct, TaskMetrics
from cdc.api import metrics as m
from cdc_debezium.config import DATABASE_EXCLUDE_LIST, DATABASE_INCLUDE_LIST
from cdc_debezium.heartbeat import Heartbeat
from cdc_debezium.history_metrics import SchemaHistoryMetrics
from cdc_debezium.metrics import Periodic, SourceLag, StreamingMetrics
from cdc_debezium.naming import TopicNamingStrategy
from cdc_debezium.progress import SnapshotProgress
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.incremental import Collection
from cdc_debezium.signals.new_tables import SIGNAL_ID as NEW_TABLES_SIGNAL
from cdc_debezium.signals.new_tables import NewTables
from cdc_debezium.transaction import TransactionMonitor
from cdc_mysql import __version__, server_ids
from cdc_mysql.config import CONNECT_TIMEOUT_MS, MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection
from cdc_mysql.debezium_keys import SNAPSHOT_DELAY_MS, STREAMING_DELAY_MS
from cdc_mysql.dispatcher import EventDispatcher
from cdc_mysql.gtid import MariaDbGtidSet, mariadb_missing, mariadb_open_transaction_missing
from cdc_mysql.gtid import contains as gtid_contains
from cdc_mysql.history import MeteredSchemaHistory, open_history
from cdc_mysql.incremental import MySqlIncrementalSnapshot
from cdc_mysql.lineage import BinlogLineage, position, sequence_text
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.retention import BinlogRetention, snapshot_on_loss
from cdc_mysql.schema import MySqlSchema
from cdc_mysql.snapshot import MySqlSnapshotChangeEventSource, captured_tables, missing_rows_advice
from cdc_mysql.source_info import SourceInfo
from cdc_mysql.streaming import MySqlStreamingChangeEventSource
from cdc_mysql.value_converters import MySqlValueConverters

log = logging.getLogger(__name__)

# How often the stored offset's binlog retention is read for the metrics (a few queries; a short
# binlog dump only when the offset moved into another file). Readers subtract the time since.
RETENTION_SAMPLE_S = 10.0
RETENTION_CONNECT_MS = 5000


def _source_ts_ms(record: SourceRecord) -> int | None:
    """When the record's change happened: its `source.ts_ms` (the binlog event's time).

    Records carry no Kafka timestamp (the producer stamps the send time, as with Debezium),
    so the lag metrics read the envelope; heartbeats have no source block and count as none.
    """
    value = record.value
    if not isinstance(value, Struct) or value.schema.field("source") is None:
        return None
    source = value.get("source")
    return source.get("ts_ms") if isinstance(source, Struct) else None


def _transaction_key(record: SourceRecord) -> tuple[Any, Any] | None:
    """A transaction's binlog file and the position of its BEGIN (the offset's `file`/`pos`)."""
    offset = record.source_offset
    return (offset.get("file"), offset.get("pos")) if offset else None


class MySqlConnectorTask(SourceTask):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        self.config = config = MySqlConnectorConfig(props)
        connector = "mariadb" if str(props.get("connector.class", "")).endswith("MariaDbConnector") else "mysql"
        self.connection = connection = MySqlConnection(config)
        connection.check_binlog_settings()
        self.is_mariadb = connection.is_mariadb()
        self.partition = {"server": config.topic_prefix}
        stored = self.context.offset_storage_reader().offset(self.partition)
        # The reader's server id: the config's, else the one in the offsets, else one chosen now (server_ids.py).
        self.reader_id = server_ids.resolve(
            config.server_id, server_ids.stored_server_id(stored), connection.choose_server_id
        )
        connection.server_id = self.reader_id.server_id
        connection.check_server_id(self.reader_id.described())
        connection.check_binlog_access()
        if config.include_query and self.is_mariadb:
            log.warning(
                "include.query=true: on MariaDB the query comes from ANNOTATE_ROWS events, which "
                "python-mysql-replication requests only for GTID-positioned streams; source.query stays null "
                "for streams resumed by file/pos"
            )
        self.stored_offset = stored
        self.stored = MySqlOffsetContext.load(stored) if stored else None
        self.plan = self._plan(self.stored)

        self.stop_event = threading.Event()
        self.poll_interval_s = min(config.poll_interval_ms, 5000) / 1000
        self.high_water = 0
        self._error: BaseException | None = None
        topics = TopicNamingStrategy(config.topic_prefix)
        self.source_info = SourceInfo(connector, __version__, config.topic_prefix)
        self.schema = MySqlSchema(
            topics,
            MySqlValueConverters(
                config.decimal_mode, config.time_mode, config.bigint_mode, config.binary_mode, config.time_adjuster
            ),
            self.source_info.schema,
            config.captures_column,
            config.column_mappers,
            config.key_columns.for_table,
            config.schema_options,
        )
        self.history_metrics = SchemaHistoryMetrics()  # Debezium's context=schema-history
        self.history = MeteredSchemaHistory(open_history(config, self.context), self.history_metrics)
        heartbeat = Heartbeat(config.heartbeat_interval_ms, topics.heartbeat_topic(), config.topic_prefix)
        tx = TransactionMonitor(topics.transaction_topic()) if config.provide_transaction_metadata else None
        self.dispatcher = EventDispatcher(config, self.source_info, self.history, heartbeat, tx)
        if config.heartbeat_action_query:
            query = config.heartbeat_action_query
            self.dispatcher.on_heartbeat = lambda: self._heartbeat_action(query)
        self.progress = SnapshotProgress(log)
        # Signals and incremental snapshots: None (and nothing of them runs) unless a signal channel is enabled.
        signal_config = SignalConfig.from_props(props, config.topic_prefix)
        # snapshot.new.tables=parallel: offsets carry the filters; newly captured tables are snapshotted incrementally.
        self.new_tables = NewTables.of(props, config.values(), (DATABASE_INCLUDE_LIST, DATABASE_EXCLUDE_LIST))
        self.new_tables.require(bool(signal_config.data_collection) or config.read_only, " (or read.only=true)")
        self.signals: MySqlIncrementalSnapshot | None = None
        if signal_config.active or self.new_tables.enabled:
            self.signals = MySqlIncrementalSnapshot(
                config, signal_config, connection, self.schema, self.source_info, self.dispatcher, self.is_mariadb,
                self.context, stored,
            )  # fmt: skip
        self.streaming: MySqlStreamingChangeEventSource | None = None
        self.stream_metrics = StreamingMetrics(
            _source_ts_ms, _transaction_key, lambda: self.dispatcher.unchanged_skipped
        )
        self.source_lag = SourceLag(self._binlog_bytes_behind)
        # Its own connection (the metrics run between polls, but the task's connection may be inside the
        # snapshot's transaction), quick to give up: a server that does not answer must not hold up poll().
        self._retention_config = MySqlConnectorConfig({**props, CONNECT_TIMEOUT_MS: str(RETENTION_CONNECT_MS)})
        self._retention: BinlogRetention | None = None
        self.position_retention = Periodic(self._read_retention, RETENTION_SAMPLE_S, "the binlog retention")
        self._snapshot_tail = 0  # snapshot records still buffered when streaming starts: not streaming events
        TaskMetrics.of(self.context).register(self._metrics)
        self._snapshot: MySqlSnapshotChangeEventSource | None = None
        # Snapshot and streaming run as one generator driven by poll() on the runtime's task thread.
        self._events: Iterator[None] | None = self._execute()

    # -- what to do at start -----------------------------------------------------------------------
    def _plan(self, stored: MySqlOffsetContext | None) -> str:
        """One of: snapshot, resume, schema_only, recovery, stream, idle (snapshot.mode semantics of Debezium).

        `resume`: the stored offset is an interrupted initial snapshot's with its progress keys
        (offset_context.py) and the binlog from its position is still here: the snapshot reads
        only what is left, then streams from its first position (snapshot.py, "Resuming").
        """
        mode = self.config.snapshot_mode
        if stored is None:
            return "schema_only" if mode in ("no_data", "recovery") else "snapshot"
        if mode == "always":
            return "snapshot"
        if stored.snapshot and mode in ("initial", "initial_only", "when_needed"):
            why_not = self._why_not_resumable(stored)
            if why_not is None:
                return "resume"
            log.info("The previous snapshot did not complete and %s; snapshotting again", why_not)
            return "snapshot"
        if mode == "initial_only":
            return "idle"
        reset = self._history_lost(stored)
        if reset is not None:
            if mode == "when_needed":
                log.warning("%s; snapshot.mode=when_needed: taking a new snapshot", reset)
                return "snapshot"
            raise ConnectException(
                f"{reset}, so the changes after the stored offset cannot be read here. Set snapshot.mode=when_needed "
                "to take a new snapshot (the Spark sink then also removes the rows it lacks), or delete the "
                "connector's offsets"
            )
        purged = stored.file not in self.connection.binlog_files()
        if purged:
            if mode == "when_needed":
                log.warning("Binlog file %s of the stored offset was purged; taking a new snapshot", stored.file)
                return "snapshot"
            if not stored.gtids:
                raise ConnectException(
                    f"The binlog file {stored.file} named in the stored offset (pos {stored.pos}) has been purged "
                    f"from the server, so the changes after it are lost to this connector. Set "
                    "snapshot.mode=when_needed to take a new snapshot, or delete the connector's offsets; raise "
                    "binlog_expire_logs_seconds/expire_logs_days to keep binlogs longer"
                )
        if mode == "recovery":
            return "recovery"
        return "stream"

    def _why_not_resumable(self, stored: MySqlOffsetContext) -> str | None:
        """Why an interrupted snapshot's offset cannot be resumed (None if it can)."""
        if stored.tables_done is None:
            return "its offset has no snapshot progress (snapshot_tables_done)"
        lost = self._history_lost(stored)
        if lost is not None:
            return lost
        if stored.file not in self.connection.binlog_files():
            return f"binlog file {stored.file} of its position was purged"
        return None

    def _history_lost(self, stored: MySqlOffsetContext) -> str | None:
        """Why this server's binlog cannot continue the stored offset (None if it can).

        A GTID offset continues on any server whose GTID state holds it (a failover to a replica);
        but on the same server, a binlog position below the stored one means the history restarted
        (RESET MASTER, a restore) even when new GTIDs have passed the stored sequence numbers.
        Without GTIDs, only the same server's binlog at or past the stored position continues it.
        """
        if stored.lineage_break:
            # The stream stopped on a lineage break: what it read just before may be the new history's
            # (its GTIDs or positions then look valid here), and what that history wrote below the old
            # position was never read. Only a new snapshot knows the rows again.
            return f"the connector stopped streaming on a binlog lineage break ({stored.lineage_break})"
        identity = self.connection.server_identity()
        current = position(*self.connection.master_status())
        stored_at = position(stored.file, stored.pos)
        same_server = stored.server_identity == identity
        went_back = f"the server's binlog position {current} is below the stored offset's {stored_at} ({stored.file})"
        if stored.gtids:
            executed = self.connection.executed_gtids(self.is_mariadb)
            if not gtid_contains(executed, stored.gtids, self.is_mariadb):
                return (
                    f"the server's GTID state {executed or '(empty)'} does not hold the stored offset's GTID set "
                    f"{stored.gtids} (RESET MASTER, a restore, or a failover to a server missing transactions)"
                )
            if self.is_mariadb:
                state = self.connection.variable("gtid_binlog_state")
                missing = mariadb_missing(state, self.connection.variable("gtid_slave_pos"), stored.gtids)
                if missing is not None:
                    return (
                        f"the server's binlog does not hold GTID {missing} of the stored offset (its binlog state is "
                        f"{state}; a failover to a server missing transactions, a restore, or RESET MASTER)"
                    )
                if not same_server and (stored.event or stored.row):
                    slave_pos = self.connection.variable("gtid_slave_pos")
                    open_tx = mariadb_open_transaction_missing(state, slave_pos, stored.gtids, stored.server_id)
                    if open_tx is not None:
                        return (
                            f"the stored offset stopped inside a transaction of server {stored.server_id} ({open_tx}, "
                            f"after {stored.gtids}) that this server's binlog does not hold (its binlog state is "
                            f"{state}; a failover to a server missing transactions)"
                        )
            return f"{went_back}: RESET MASTER or a restore" if same_server and current < stored_at else None
        if stored.server_identity is not None and not same_server:
            return (
                f"this is another server ({identity}; the offset's is {stored.server_identity}) and the offset "
                "has no GTIDs to resume by"
            )
        return f"{went_back}: RESET MASTER or a restore" if current < stored_at else None

    def _execute(self) -> Iterator[None]:
        config, plan, stored = self.config, self.plan, self.stored
        snapshot = MySqlSnapshotChangeEventSource(
            config, self.connection, self.schema, self.source_info, self.dispatcher, self.is_mariadb,
            self.progress, self.stop_event,
        )  # fmt: skip
        self._snapshot = snapshot
        if plan in ("idle", "stream"):
            snapshot.notify.skipped()  # the stored offset says the snapshot is done (Debezium: SnapshotResult SKIPPED)
        if plan == "idle":
            log.info("snapshot.mode=initial_only and the snapshot is complete: nothing to stream")
            return
        use_gtid = (
            plan == "stream"
            and stored is not None
            and bool(stored.gtids)
            and (stored.file not in self.connection.binlog_files() or not self._position_matches_gtids(stored))
        )
        lineage = self._lineage(stored, use_gtid)
        added: list[str] = []
        self.source_info.sequence = sequence_text(lineage.epoch)
        snapshots = plan in ("snapshot", "resume", "schema_only", "recovery")
        if snapshots:
            yield from self._delay(config.get(SNAPSHOT_DELAY_MS), "snapshot.delay.ms", "The snapshot")
        if plan in ("snapshot", "resume"):
            resume = stored if plan == "resume" else None
            offset = yield from snapshot.execute(with_data=True, lineage=lineage, resume=resume)
            if config.snapshot_mode == "initial_only":
                log.info("snapshot.mode=initial_only: snapshot complete, not streaming")
                return
        elif plan == "schema_only":
            offset = yield from snapshot.execute(with_data=False, lineage=lineage)
        elif plan == "recovery":
            assert stored is not None
            added = self._newly_captured()
            records = self._history_records()
            if records is not None:  # before the history is rebuilt with every captured table
                self._warn_about_tables_never_read(added, records)
            yield from snapshot.execute(with_data=False, at=stored, lineage=lineage)
            offset = stored
        else:
            assert stored is not None
            offset = stored
            added = self._newly_captured()
            # read once: a Kafka history is read from its start; Debezium's recovery of the history
            records = self._history_records(recover=True)
            if records is not None:
                self._warn_about_tables_never_read(added, records)
                # The declared column types of the DDL in the history, as the run that wrote it had them
                # (declared_types.py): only the history is read, not the server.
                self.schema.recover(records)
        if snapshots:
            yield from self._delay(config.get(STREAMING_DELAY_MS), "streaming.delay.ms", "Streaming")
        # offset.server_id stays: inside a transaction it names the server that wrote it, which the
        # stream checks the resumed transaction against (streaming.py, resume_origin).
        offset.epoch, offset.server_identity = lineage.epoch, lineage.server_identity
        self._snapshot_tail = len(self.dispatcher.buffer)
        self.streaming = MySqlStreamingChangeEventSource(
            config, self.connection, self.schema, self.source_info, self.dispatcher, offset, self.is_mariadb,
            self.stop_event, use_gtid_start=use_gtid, reader_id=self.reader_id,
        )  # fmt: skip
        if self.signals is not None:
            self.signals.attach(self.streaming)
            if plan in ("stream", "recovery") and added:
                self.signals.add_collections([Collection(t) for t in added], NEW_TABLES_SIGNAL)
        yield from self.streaming.execute()

    def _delay(self, ms: int, key: str, what: str) -> Iterator[None]:
        """Debezium's snapshot.delay.ms / streaming.delay.ms: waits in steps of at most 100 ms, so a poll
        returns and a stop is seen."""
        if ms <= 0:
            return
        log.info("%s starts in %d ms (%s)", what, ms, key)
        deadline = time.monotonic() + ms / 1000
        while not self.stop_event.is_set() and (left := deadline - time.monotonic()) > 0:
            self.stop_event.wait(min(left, 0.1))
            yield

    def _lineage(self, stored: MySqlOffsetContext | None, resumes_by_gtid: bool) -> BinlogLineage:
        """The epoch the emitted positions carry: the stored one, bumped if this is another binlog lineage."""
        identity = self.connection.server_identity()
        current = position(*self.connection.master_status())
        if stored is None:
            return BinlogLineage.decide(0, None, None, identity, current, False)
        return BinlogLineage.decide(
            stored.epoch,
            stored.server_identity,
            position(stored.file, stored.pos),
            identity,
            current,
            resumes_by_gtid,
            lineage_break=stored.lineage_break,
        )

    def _position_matches_gtids(self, stored: MySqlOffsetContext) -> bool:
        """False when the stored file/pos is not where the stored GTID set says on this server.

        After a failover the new primary may have a binlog file of the same name with other
        contents: resuming there by file/pos would skip or repeat changes silently. Debezium resumes
        by GTID whenever the offset has GTIDs; this connector resumes by file/pos (exact, and safe
        against the library's GTID reconnect issues) unless this check fails. MariaDB answers it
        with BINLOG_GTID_POS; on MySQL the file name alone is checked.
        """
        if not self.is_mariadb:
            return True
        try:
            at = self.connection.mariadb_gtid_pos_at(stored.file, stored.pos)
        except Exception as e:  # a server without the function: keep resuming by file/pos
            log.debug("BINLOG_GTID_POS(%s, %d) failed: %s", stored.file, stored.pos, e)
            return True
        ours = MariaDbGtidSet(stored.gtids)
        theirs = MariaDbGtidSet(at) if at is not None else None
        if theirs is not None and all(theirs.by_domain.get(d) == v for d, v in ours.by_domain.items()):
            return True
        log.warning(
            "The stored offset %s:%d is %s on this server, but its GTID set is %s: the binlog files were "
            "replaced (a failover to another server, or RESET MASTER). Resuming by GTID from %s",
            stored.file, stored.pos,
            "no event boundary" if theirs is None else f"at GTID position {at}", stored.gtids, stored.gtids,
        )  # fmt: skip
        return False

    def _newly_captured(self) -> list[str]:
        """snapshot.new.tables=parallel: the captured tables the stored offset's filters did not capture."""
        if not self.new_tables.enabled:
            return []
        return self.new_tables.newly_captured(self.stored_offset, captured_tables(self.connection.conn, self.config))

    def _history_records(self, recover: bool = False) -> list[dict[str, Any]] | None:
        """The schema history's records at a restart; None (with a warning) if it cannot be read, which
        does not stop the restart: decoding does not need it (history.py). `recover`: read as the
        restart's recovery of the history, which the schema-history metrics count."""
        try:
            return self.history.recover() if recover else self.history.records()
        except ConnectException as e:
            log.warning(
                "Could not read the schema history (%s): newly captured tables are not checked for, and the "
                "tables created before this restart take the server's column types (declared_types.py)", e,
            )  # fmt: skip
            return None

    def _warn_about_tables_never_read(self, queued: list[str], records: list[dict[str, Any]]) -> None:
        """Names each captured table the schema history has never seen: its existing rows were never read.

        A table added to table.include.list (or database.include.list) after the snapshot is streamed
        from the stored position on, as with Debezium, which has incremental snapshots for the rest.
        The schema history holds every table the snapshot read and every table a streamed DDL
        created, so a table missing from it had rows before the connector looked at it.
        """
        if not records:
            return  # no durable history (memory), or nothing in it yet
        known: set[str] = set()
        for record in records:
            for change in record.get("tableChanges") or []:
                table_id = change.get("id")
                if change.get("type") == "DROP":
                    known.discard(table_id)
                else:
                    known.add(table_id)
        for db, table in captured_tables(self.connection.conn, self.config):
            if f'"{db}"."{table}"' not in known and f"{db}.{table}" not in queued:
                log.warning(
                    "Table %s.%s is captured but was not when the snapshot ran (it was added to "
                    "table.include.list/database.include.list, or removed from an exclude list, since): its "
                    "changes are streamed from the stored offset on, but the rows it held before were never "
                    "read and will not be emitted. %s",
                    db, table, missing_rows_advice(db, table),
                )  # fmt: skip

    def _heartbeat_action(self, query: str) -> None:
        conn = MySqlConnection(self.config).connect(autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute(query)
        finally:
            conn.close()

    # -- SourceTask --------------------------------------------------------------------------------
    def poll(self) -> list[SourceRecord] | None:
        """Decodes until a batch of max.batch.size is ready or poll.interval.ms has passed.

        An idle stream wakes up with the server's binlog heartbeat (1 s), so a poll returns within
        about a second even when nothing happens. Records decoded before a failure are returned
        first; the failure is raised by the next poll.
        """
        dispatcher = self.dispatcher
        if self._error is not None and not dispatcher.buffer:
            error, self._error = self._error, None
            raise error
        limit = self.config.max_batch_size
        deadline = time.monotonic() + self.poll_interval_s
        signals = self.signals if self.streaming is not None else None
        byte_bound = self.config.max_queue_size_in_bytes  # max.queue.size.in.bytes (0: none)
        while self._events is not None and len(dispatcher.buffer) < limit and not self.stop_event.is_set():
            if byte_bound and dispatcher.buffer and dispatcher.buffered_bytes() >= byte_bound:
                break  # as Debezium's queue: full by size; what is buffered is returned
            try:
                if signals is None or not signals.tick():  # True: a blocking snapshot holds the binlog
                    next(self._events)
            except StopIteration:
                self._events = None
            except InterruptedError:
                self._events = None
            except Exception as e:
                self._events = None
                if self.stop_event.is_set():
                    break
                log.error("MySQL connector task failed: %s", e)
                if not dispatcher.buffer:
                    raise
                self._error = e
            if time.monotonic() >= deadline:
                break
            streaming = self.streaming
            if dispatcher.buffer and streaming is not None and not streaming.data_ready():
                break  # idle stream: return what is decoded rather than wait for the next event
        if len(dispatcher.buffer) > self.high_water:
            self.high_water = len(dispatcher.buffer)
        batch = dispatcher.take(limit)
        self.new_tables.stamp(batch)
        # A chosen id is kept for restarts; a given one is the config's and not stored.
        if self.reader_id.origin != server_ids.FROM_CONFIG:
            server_ids.stamp(batch, self.reader_id.server_id)
        if batch and self.streaming is not None:
            if self._snapshot_tail:
                tail, self._snapshot_tail = self._snapshot_tail, max(0, self._snapshot_tail - len(batch))
                if len(batch) > tail:
                    self.stream_metrics.batch(batch[tail:])
            else:
                self.stream_metrics.batch(batch)
        if not batch and self._events is None:
            # Finished (initial_only) or stopped: idle instead of spinning.
            self.stop_event.wait(self.poll_interval_s)
        return batch or None

    def stop(self) -> None:
        """Called from another thread while poll() may block on the binlog socket: close it to wake it."""
        stop = getattr(self, "stop_event", None)
        if stop is None:
            return
        stop.set()
        snapshot = getattr(self, "_snapshot", None)
        if snapshot is not None:
            snapshot.close()
        if self.streaming is not None:
            self.streaming.close()
        if self.signals is not None:
            self.signals.close()
        self.history.close()
        self.connection.close()
        retention = getattr(self, "_retention", None)
        if retention is not None:
            retention.connection.close()

    def _metrics(self) -> dict[str, Any]:
        """Debezium's snapshot and streaming metrics, computed only when the runtime publishes."""
        out = self.progress.metrics()
        queue_size = self.config.max_queue_size
        out[m.QUEUE_TOTAL_CAPACITY] = queue_size
        out[m.QUEUE_REMAINING_CAPACITY] = max(0, queue_size - len(self.dispatcher.buffer))
        stopping = self.stop_event.is_set()  # at stop: no new connection, the last reading
        out[m.POSITION_RETENTION] = self.position_retention.last if stopping else self.position_retention.value()
        streaming = self.streaming
        if streaming is not None:
            connected = getattr(streaming, "_reader", None) is not None  # None while reconnecting
            out.update(self.stream_metrics.values(connected))
            out[m.BYTES_BEHIND_SOURCE] = self.source_lag.value()
        out[m.SCHEMA_HISTORY] = self.history_metrics.values()
        return out

    def _read_retention(self) -> dict[str, Any]:
        """How long the server keeps the binlog file the stored offset needs (cdc_mysql.retention): the
        stored offset, not the reader's position, because a restart resumes from the stored one."""
        if self._retention is None:
            # Its probe dumps draw throwaway ids, never this task's (which a dump would disconnect).
            connection = MySqlConnection(self._retention_config, server_id=self.reader_id.server_id)
            self._retention = BinlogRetention(connection, snapshot_on_loss(self.config.snapshot_mode))
        offset = self.context.offset_storage_reader().offset(self.partition)
        return self._retention.read(offset).to_json()

    def _binlog_bytes_behind(self) -> int | None:
        """The server's binlog end minus the reader's position, across binlog files (SHOW BINARY LOGS)."""
        streaming = self.streaming
        reader = getattr(streaming, "_reader", None) if streaming is not None else None
        file, pos = getattr(reader, "log_file", None), getattr(reader, "log_pos", None)
        if not file or pos is None:
            return None
        return self.connection.bytes_after(file, int(pos))

    def status(self) -> dict[str, Any]:
        """Snapshot progress and buffer depth, for logs and the task status trace."""
        return {
            "snapshot": self.progress.summary(),
            "buffered": len(self.dispatcher.buffer),
            "buffer_high_water": self.high_water,
            "events": self.dispatcher.events,
        }

"""PostgresConnectorTask: snapshot (if needed), then pgoutput streaming, fed through a bounded queue."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Any

import psycopg

from cdc.api import ConfigException, ConnectException, SourceRecord, SourceTask, TaskMetrics
from cdc.api import metrics as m
from cdc.api.metrics import RETAINED_WAL_BYTES
from cdc_debezium.heartbeat import Heartbeat
from cdc_debezium.metrics import StreamingMetrics
from cdc_debezium.notifications import InitialSnapshotNotifier
from cdc_debezium.progress import SnapshotProgress
from cdc_debezium.queue import ChangeEventQueue
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.incremental import Collection
from cdc_debezium.signals.new_tables import SIGNAL_ID as NEW_TABLES_SIGNAL
from cdc_debezium.signals.new_tables import NewTables
from cdc_debezium.transaction import TransactionMonitor
from cdc_postgres import __version__, replica_identity
from cdc_postgres.change_records import PostgresChangeRecordEmitter
from cdc_postgres.config import SCHEMA_EXCLUDE_LIST, SCHEMA_INCLUDE_LIST, PostgresConnectorConfig
from cdc_postgres.connection import PostgresConnection, PostgresConnectorError
from cdc_postgres.incremental import PostgresIncrementalSnapshot
from cdc_postgres.lsn import format_lsn
from cdc_postgres.offset_context import PostgresOffsetContext
from cdc_postgres.replication import ReplicationConnection, ReplicationError
from cdc_postgres.reselect import ColumnReselector
from cdc_postgres.retention import WalRate, current_lsn, estimate, read_slot, snapshot_on_loss
from cdc_postgres.schema import PostgresSchema, SchemaOptions
from cdc_postgres.snapshot import PostgresSnapshotChangeEventSource, captured_tables
from cdc_postgres.source_info import SourceInfo
from cdc_postgres.streaming import Position, PostgresStreamingChangeEventSource
from cdc_postgres.value_converters import ConverterSettings, PostgresValueConverters

log = logging.getLogger(__name__)

WAL_SAMPLE_S = 4.0  # how often the slot's retained WAL is read for the metrics


def _source_ts_ms(record: SourceRecord) -> int | None:
    ts = (record.source_offset or {}).get("ts_usec")
    return ts // 1000 if ts else None


def _transaction_key(record: SourceRecord) -> Any:
    """The record's transaction: its txId, else its commit LSN (the offset's `lsn_commit`)."""
    offset = record.source_offset
    return (offset.get("txId") or offset.get("lsn_commit")) if offset else None


def slot_in_use(slot_name: str, pid: int | None, retries: int, delay_ms: int) -> PostgresConnectorError:
    holder = f"process {pid}" if pid else "another connection"
    return PostgresConnectorError(
        f"replication slot {slot_name!r} is in use by {holder} (still after slot.max.retries={retries} x "
        f"slot.retry.delay.ms={delay_ms}): another connector or client is reading it. Give this connector its own "
        f"slot.name, or stop the other reader (SELECT pg_terminate_backend({pid or '<active_pid>'}); ends it)"
    )


class PostgresConnectorTask(SourceTask):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        self.config = PostgresConnectorConfig.parse(props)
        c = self.config
        self.server = c.topic_prefix
        self.partition = {"server": self.server}
        self.dsn = c.dsn()
        self.queue: ChangeEventQueue[SourceRecord] = ChangeEventQueue(
            c.max_batch_size, c.max_queue_size, c.poll_interval_ms, c.max_queue_size_in_bytes
        )
        self.stop_event = threading.Event()
        self.progress = SnapshotProgress(log)
        self.stream_metrics = StreamingMetrics(_source_ts_ms, _transaction_key)
        self._wal_conn: PostgresConnection | None = None
        self._wal_bytes: int | None = None
        self._wal_behind: int | None = None
        self._wal_next = 0.0
        self._wal_rate = WalRate()  # the WAL positions read for the metrics, over the last few minutes
        self._retention: dict[str, Any] | None = None  # the slot's PositionRetention, as published
        TaskMetrics.of(self.context).register(self._metrics)
        stored_offset = self.context.offset_storage_reader().offset(self.partition)
        stored = PostgresOffsetContext.from_offset(stored_offset)
        self._restarted = stored is not None  # an offset to go on from: Initial Snapshot SKIPPED if it needs none
        table_match, schema_match = c.table_filter, c.schema_filter
        self.table_filter = lambda t: schema_match(t.split(".", 1)[0]) and table_match(t)
        # Signals and incremental snapshots: None (and nothing of them runs) unless a signal channel is enabled.
        signal_config = SignalConfig.from_props(props, self.server)
        # snapshot.new.tables=parallel: offsets carry the filters; newly captured tables are snapshotted incrementally.
        self.new_tables = NewTables.of(props, c.values(), (SCHEMA_INCLUDE_LIST, SCHEMA_EXCLUDE_LIST))
        self._new_tables: list[str] = []
        self.signals: PostgresIncrementalSnapshot | None = None
        if signal_config.active or self.new_tables.enabled:
            self.signals = PostgresIncrementalSnapshot(
                signal_config, self.dsn, self.server, self.table_filter, self.context, stored_offset
            )
        read_only = self.signals is not None and self.signals.read_only
        try:
            self.new_tables.require(bool(signal_config.data_collection) or read_only, " (or read.only=true)")
        except ConfigException:
            if self.signals is not None:
                self.signals.close()  # its file/kafka channels are open
            raise

        admin = PostgresConnection(self.dsn)
        try:
            admin.check_wal_level()
            admin.check_replication_privilege()
            if c.stream_in_progress_transactions:
                admin.check_streaming_support()
            tables = captured_tables(admin.conn, self.table_filter)
            replica_identity.apply(admin, c.replica_identity_autoset_values, tables)
            self._check_identities(admin, tables)
            added = admin.ensure_publication(
                c.publication_name, c.publication_autocreate_mode, [(ns, n) for _, ns, n in tables]
            )
            self._warn_unpublished(admin, tables)
            self.via_partition_root = admin.publishes_via_root(c.publication_name)
            if not self.via_partition_root:
                self._warn_uncaptured_partitions(admin, tables)
            plan = self._plan(admin, stored)
            if not plan[0] and not plan[5]:  # streaming on from a stored offset: no snapshot reads the new tables
                self._new_tables = self.new_tables.newly_captured(stored_offset, [(ns, n) for _, ns, n in tables])
                self._warn_added_after_snapshot([t for t in added if t not in self._new_tables] if stored else [])
        finally:
            admin.close()
        self._thread = threading.Thread(target=self._run, args=plan, name=f"postgres-{self.server}", daemon=True)
        self._thread.start()

    # -- start-up decisions --------------------------------------------------------------------
    def _check_identities(self, admin: PostgresConnection, tables: list[tuple[int, str, str]]) -> None:
        """As Debezium, a table without a replica identity is captured (its inserts); say what it lacks.

        Its events have a null key (or its first unique index's columns, or message.key.columns), and
        PostgreSQL itself refuses UPDATE and DELETE on a table a publication publishes them for while it
        has no identity, so only FULL (or an identity index) lets them happen and be captured.
        """
        for table, ident, has_pk in admin.replica_identities(tables):
            if (ident == "d" and not has_pk) or ident == "n":
                what = "no primary key and REPLICA IDENTITY DEFAULT" if ident == "d" else "REPLICA IDENTITY NOTHING"
                log.warning(
                    "table %s has %s: its inserts are captured (with a null message key unless it has a unique "
                    "index or a message.key.columns entry), but PostgreSQL refuses UPDATE and DELETE on it while "
                    "publication %s publishes them. To capture them, run ALTER TABLE %s REPLICA IDENTITY FULL; "
                    "(or set replica.identity.autoset.values=%s:FULL)",
                    table, what, self.config.publication_name, table, table.replace(".", "\\."),
                )  # fmt: skip

    def _warn_unpublished(self, admin: PostgresConnection, tables: list[tuple[int, str, str]]) -> None:
        name = self.config.publication_name
        for table in admin.unpublished_tables(name, [oid for oid, _, _ in tables]):
            log.warning(
                "table %s matches the table/schema include lists but is not in publication %s, so PostgreSQL "
                "sends none of its changes. Run ALTER PUBLICATION \"%s\" ADD TABLE %s; (or use "
                "publication.autocreate.mode=filtered), or exclude it with table.exclude.list",
                table, name, name, table,
            )  # fmt: skip

    def _warn_uncaptured_partitions(self, admin: PostgresConnection, tables: list[tuple[int, str, str]]) -> None:
        for parent, missing in admin.uncaptured_partitions([oid for oid, _, _ in tables], self.table_filter):
            log.warning(
                "table %s is partitioned: pgoutput streams its changes under its partitions' names (%s), which the "
                "table/schema include lists do not capture, so none of them are emitted (and the snapshot reads "
                "each table with ONLY, so not its rows either). Capture the partitions (e.g. table.include.list="
                "%s.*), or create publication %s WITH (publish_via_partition_root = true) to stream them as %s",
                parent, ", ".join(missing), parent.replace(".", "\\."), self.config.publication_name, parent,
            )  # fmt: skip

    def _warn_added_after_snapshot(self, added: list[str]) -> None:
        """As Debezium, a table added to the include list later is streamed without its existing rows: say so."""
        for table in added:
            log.warning(
                "table %s was added to the captured tables after the snapshot: its changes are streamed from now "
                "on, but its existing rows are not read. To get them, run a one-off connector with "
                "snapshot.mode=initial_only, table.include.list=%s, the same topic.prefix and its own name and "
                "slot.name (or restart this one with snapshot.mode=always to re-read every table), or send an "
                "execute-snapshot signal for it (signal.data.collection set). With snapshot.new.tables=parallel, "
                "tables added to the include lists from then on are read by themselves",
                table, table.replace(".", "\\."),
            )  # fmt: skip

    def _plan(self, admin: PostgresConnection, stored: PostgresOffsetContext | None) -> tuple[Any, ...]:
        c = self.config
        mode = c.snapshot_mode
        slot_name = c.slot_name
        slot = admin.slot(slot_name)
        if slot is not None and slot[1]:
            # A restarted task's predecessor may still be letting go: judge the slot against the
            # offset it stored last, once it has.
            slot = self._await_slot_released(admin, slot_name)
            stored = PostgresOffsetContext.from_offset(self.context.offset_storage_reader().offset(self.partition))
        completed = stored is not None and (stored.snapshot_completed or stored.last_snapshot_record)
        streaming_offset = stored is not None and not stored.snapshot and stored.lsn_commit is not None
        if mode == "initial_only" and completed:
            log.info("snapshot.mode=initial_only: the stored offset says the snapshot is complete; nothing to do")
            return (False, None, 0, 0, Position(None, None), True)
        if stored is not None and (streaming_offset or completed) and mode != "always":
            problem = self._resume_problem(slot_name, slot, stored, streaming_offset)
            if problem is not None and mode == "when_needed":
                log.warning("%s; snapshot.mode=when_needed: taking a new snapshot", problem)
                stored, completed, streaming_offset = None, False, False
            elif problem is not None:
                raise PostgresConnectorError(
                    f"{problem}. Changes since then cannot be streamed, and skipping them would lose them. "
                    "Recover with a new snapshot: set snapshot.mode=when_needed (or always), or delete this "
                    "connector's offsets, and restart"
                    + (" (slot.drop.on.stop=true drops the slot at every stop)" if c.drop_slot_on_stop else "")
                )
        needs_snapshot = mode == "always" or (
            mode in ("initial", "initial_only", "when_needed") and not completed and not streaming_offset
        )
        resume_from: PostgresOffsetContext | None = None
        if needs_snapshot and mode != "always" and stored is not None and stored.snapshot:
            why_not = self._why_not_resumable(slot_name, slot, stored)
            if why_not is None:
                resume_from = stored
            else:
                log.info("The previous snapshot did not complete and %s; snapshotting again", why_not)
        snapshot_name: str | None = None
        consistent_point = 0
        if slot is not None and slot[2] == "lost" and not needs_snapshot:
            # no_data without a stored offset: nothing to resume, so a fresh slot loses nothing.
            log.warning("replication slot %s was invalidated; no_data: dropping and recreating it", slot_name)
            admin.drop_slot(slot_name)
            slot = None
        if resume_from is not None:
            # The slot stays at P1; the rest is read in a new snapshot at P2.
            snapshot_name, consistent_point = self._open_resume_snapshot(slot_name, resume_from)
            if snapshot_name is None:
                resume_from = None
        if needs_snapshot and resume_from is None:
            # A snapshot must meet the stream at one LSN: (re)create the slot with an exported snapshot.
            if slot is not None:
                admin.drop_slot(slot_name)
            self._slot_conn = ReplicationConnection(self.dsn)
            info = self._slot_conn.create_slot(slot_name, export_snapshot=True)
            snapshot_name, consistent_point = info.snapshot_name, info.consistent_point
        elif not needs_snapshot:
            self._slot_conn = None
            if slot is None:
                with ReplicationConnection(self.dsn) as rc:
                    consistent_point = rc.create_slot(slot_name, export_snapshot=False).consistent_point
        resume = Position(None, None)
        start_lsn = consistent_point if resume_from is None else resume_from.lsn or 0
        if stored is not None and streaming_offset and not needs_snapshot:
            resume = Position(stored.lsn_commit, stored.lsn, int(self._stored_events()))
            start_lsn = stored.lsn_commit or 0
        elif stored is not None and completed and not needs_snapshot:
            start_lsn = stored.lsn or 0
        return (needs_snapshot, snapshot_name, consistent_point, start_lsn, resume, mode == "initial_only", resume_from)

    def _open_resume_snapshot(self, slot_name: str, resume_from: PostgresOffsetContext) -> tuple[str | None, int]:
        """The new snapshot (its name and consistent point P2) the rest of an interrupted one is read in.

        The connector's slot stays at P1; a TEMPORARY slot exports a snapshot at P2 (dropped once the rest
        is read, or by the server with its connection). None when no slot can be created (e.g. every one
        of max_replication_slots is taken): the snapshot is then taken again from the start.
        """
        conn = None
        try:
            conn = ReplicationConnection(self.dsn)
            name = f"{slot_name[:40]}_resume_{secrets.token_hex(4)}"
            info = conn.create_slot(name, export_snapshot=True, temporary=True)
        except ReplicationError as e:
            if conn is not None:
                conn.close()
            log.warning("Cannot open a new snapshot to resume the interrupted one (%s); snapshotting again", e)
            return None, 0
        self._slot_conn, self._resume_slot = conn, name
        log.info(
            "Resuming the interrupted snapshot taken at %s (%d tables done%s): the rest is read at %s, then "
            "slot %s is streamed from %s",
            format_lsn(resume_from.lsn or 0), len(resume_from.tables_done or ()),
            f", {resume_from.snapshot_table} after key {resume_from.snapshot_last_key}"
            if resume_from.snapshot_last_key else "",
            format_lsn(info.consistent_point), slot_name, format_lsn(resume_from.lsn or 0),
        )  # fmt: skip
        return info.snapshot_name, info.consistent_point

    @classmethod
    def _why_not_resumable(cls, slot_name: str, slot: Any, stored: PostgresOffsetContext) -> str | None:
        """Why an interrupted snapshot's offset cannot be resumed (None if it can): it lacks the progress
        keys (Debezium's, an older cdc's), or the slot no longer holds the WAL from its point P1 on."""
        if stored.tables_done is None or stored.lsn is None:
            return "its offset has no snapshot progress (snapshot_tables_done)"
        return cls._resume_problem(slot_name, slot, stored, False)

    @staticmethod
    def _resume_problem(slot_name: str, slot: Any, stored: PostgresOffsetContext, streaming_offset: bool) -> str | None:
        """Why the stored offset cannot be resumed from the slot (None: it can).

        The slot keeps WAL only from its confirmed_flush_lsn on; the connector confirms only
        stored positions, so a slot that is gone, invalidated or past the stored position
        has lost changes the offset still needs.
        """
        resume_lsn = (stored.lsn_commit if streaming_offset else stored.lsn) or 0
        where = "lsn_commit" if streaming_offset else "snapshot lsn"
        if slot is None:
            return (
                f"replication slot {slot_name!r} does not exist, but the stored offset points into it "
                f"({where} {format_lsn(resume_lsn)}); it was dropped while the connector was stopped"
            )
        if slot[2] == "lost":
            return (
                f"replication slot {slot_name!r} was invalidated (max_slot_wal_keep_size): the WAL it needed "
                f"from the stored offset's {where} {format_lsn(resume_lsn)} on is gone"
            )
        confirmed = slot[0]
        if confirmed is not None and resume_lsn < confirmed:
            return (
                f"replication slot {slot_name!r} has confirmed_flush_lsn {format_lsn(confirmed)}, past the stored "
                f"offset's {where} {format_lsn(resume_lsn)}: the changes in between were consumed by another "
                "reader of the slot, skipped with pg_replication_slot_advance(), or the offsets are older than "
                "the slot (restored or lost offset storage)"
            )
        return None

    def _await_slot_released(self, admin: PostgresConnection, slot_name: str) -> Any:
        """Wait up to slot.max.retries x slot.retry.delay.ms for another reader to let go of the slot.

        A restarted task's predecessor releases it within moments, so the slot is checked often;
        a slot held by another connector fails the task with the holder's PID and the fix.
        """
        c = self.config
        deadline = time.monotonic() + c.slot_max_retries * c.slot_retry_delay_ms / 1000
        while True:
            slot = admin.slot(slot_name)
            if slot is None or not slot[1]:
                return slot
            if time.monotonic() >= deadline or self.stop_event.wait(0.2):
                raise slot_in_use(slot_name, slot[3], c.slot_max_retries, c.slot_retry_delay_ms)

    def _stored_events(self) -> int:
        offset = self.context.offset_storage_reader().offset(self.partition) or {}
        return int(offset.get("lsn_events_processed", 0))

    # -- the reader thread ------------------------------------------------------------------------
    def _build(self) -> tuple[PostgresSchema, PostgresChangeRecordEmitter, Any]:
        c = self.config
        settings = ConverterSettings(
            decimal_handling_mode=c.decimal_mode.value,
            time_precision_mode=c.time_mode.value,
            binary_handling_mode=c.binary_mode.value,
            interval_handling_mode=c.interval_handling_mode,
            hstore_handling_mode=c.hstore_handling_mode,
            money_fraction_digits=c.money_fraction_digits,
            include_unknown_datatypes=c.include_unknown_datatypes,
        )
        options = SchemaOptions(c.column_mappers, c.field_name_adjustment_mode, c.schema_name_adjustment_mode)
        conn = PostgresConnection(self.dsn)
        schema = PostgresSchema(
            conn.conn,
            c.topic_naming,
            PostgresValueConverters(settings),
            c.unavailable_value_placeholder,
            c.column_filter,
            c.key_columns,
            options,
        )
        reselect = c.reselect
        self._reselector = ColumnReselector(self.dsn, reselect, self.stop_event) if reselect.enabled else None
        emitter = PostgresChangeRecordEmitter(
            self.server,
            SourceInfo(self.server, c.dbname),
            self.queue.enqueue,
            c.skipped_operations,
            c.tombstones_on_delete,
            c.binary_mode.value,
            self._reselector,
        )
        return schema, emitter, conn

    def _run(
        self,
        needs_snapshot: bool,
        snapshot_name: str | None,
        consistent_point: int,
        start_lsn: int,
        resume: Position,
        only_snapshot: bool,
        resume_from: PostgresOffsetContext | None = None,
    ) -> None:
        try:
            if only_snapshot and not needs_snapshot:
                return
            schema, emitter, _conn = self._build()
            c = self.config
            if needs_snapshot and self.stop_event.wait(c.snapshot_delay_ms / 1000):
                return
            notify = InitialSnapshotNotifier(c.originals(), self.server, emitter.emit)
            if not needs_snapshot and self._restarted:
                notify.skipped()  # the stored offset says the snapshot is done (Debezium: SnapshotResult SKIPPED)
            if needs_snapshot:
                snap = PostgresSnapshotChangeEventSource(
                    self.dsn,
                    schema,
                    emitter,
                    self.table_filter,
                    c.fetch_size,
                    self.progress,
                    locking_mode=c.locking_mode,
                    lock_timeout_ms=c.lock_timeout_ms,
                    via_partition_root=self.via_partition_root,
                    select_overrides=c.select_overrides(),
                    notify=notify,
                )
                snap.run(snapshot_name, consistent_point, self.stop_event.is_set, resume=resume_from)
                self._release_snapshot_slot()
                if only_snapshot:
                    # As Debezium's initial_only, which never streams: no slot may be left behind
                    # holding WAL for a reader that never comes.
                    self._drop_slot(c.slot_name)
                    log.info("snapshot.mode=initial_only: snapshot done, slot %s dropped", c.slot_name)
                    return
            if self.stop_event.wait(c.streaming_delay_ms / 1000):
                return
            topics = c.topic_naming
            heartbeat = None
            if c.heartbeat_interval_ms > 0:
                heartbeat = Heartbeat(c.heartbeat_interval_ms, topics.heartbeat_topic(), self.server)
            query = c.heartbeat_action_query
            self.streaming = PostgresStreamingChangeEventSource(
                self.dsn,
                c.slot_name,
                c.publication_name,
                schema,
                emitter,
                self.table_filter,
                c.message_prefix_filter,
                f"{self.server}.message",
                heartbeat,
                (lambda: self._heartbeat_action(query)) if query else None,
                c.status_update_interval_ms / 1000,
                TransactionMonitor(topics.transaction_topic()) if c.provide_transaction_metadata else None,
                c.stream_buffer_memory_bytes if c.stream_in_progress_transactions else None,
                c.processing_failure,
            )
            if self.signals is not None:
                self.signals.attach(self.streaming)
                if self._new_tables:
                    self.signals.add_collections([Collection(t) for t in self._new_tables], NEW_TABLES_SIGNAL)
            self._stream_with_reconnect(start_lsn, resume)
        except InterruptedError:
            pass
        except BaseException as e:
            self.queue.producer_failure(
                e if isinstance(e, ConnectException) else ConnectException(f"PostgreSQL reader failed: {e}")
            )
        finally:
            reselector = getattr(self, "_reselector", None)
            if reselector is not None:
                reselector.close()

    def _release_snapshot_slot(self) -> None:
        """Close the connection holding the exported snapshot, dropping a resume's temporary slot first."""
        conn, self._slot_conn = getattr(self, "_slot_conn", None), None
        if conn is None:
            return
        temporary, self._resume_slot = getattr(self, "_resume_slot", None), None
        try:
            if temporary is not None:
                conn.drop_slot(temporary)
        except psycopg.Error as e:  # the server drops a temporary slot with its connection anyway
            log.debug("dropping temporary slot %s: %s", temporary, e)
        finally:
            conn.close()

    def _heartbeat_action(self, query: str) -> None:
        """heartbeat.action.query, on the catalog connection (reopened after a server restart)."""
        schema = self.streaming.schema
        if schema.conn.closed or schema.conn.broken:
            schema.conn = psycopg.connect(autocommit=True, connect_timeout=10, **self.dsn)
        try:
            schema.conn.execute(query)
        except psycopg.OperationalError:
            raise  # a lost connection: the stream reconnects and the next heartbeat runs it again
        except psycopg.Error as e:
            raise PostgresConnectorError(
                f"heartbeat.action.query failed: {str(e).strip()}. Fix the statement (it runs in database "
                f"{self.config.dbname!r} as {self.config.user!r}, which needs the rights "
                "to it), or unset heartbeat.action.query"
            ) from e

    def _drop_slot(self, slot_name: str, timeout: float = 10.0) -> None:
        """Drop the slot once its walsender has let go of it (that happens a moment after we disconnect)."""
        admin = PostgresConnection(self.dsn)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    admin.drop_slot(slot_name)
                    return
                except psycopg.errors.UndefinedObject:
                    return
                except psycopg.errors.ObjectInUse:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.1)
        finally:
            admin.close()

    def _stream_with_reconnect(self, start_lsn: int, resume: Position) -> None:
        """Stream; on a lost connection (server restart, network) reconnect with backoff.

        The resume point is the last event handed to the queue, so nothing is lost or
        repeated across the reconnect.
        """
        delay = 0.5
        in_use_since: float | None = None  # since when starts are refused because the slot is active elsewhere
        while not self.stop_event.is_set():
            try:
                schema = self.streaming.schema
                if schema.conn.closed or schema.conn.broken:
                    schema.conn = psycopg.connect(autocommit=True, connect_timeout=10, **self.dsn)
                self.streaming.run(start_lsn, resume, self.stop_event)
                return
            except (ReplicationError, psycopg.OperationalError) as e:
                if self.stop_event.is_set():
                    return
                c = self.config
                if not isinstance(e.__cause__, psycopg.errors.ObjectInUse):
                    in_use_since = None
                elif in_use_since is None:
                    in_use_since = time.monotonic()
                elif time.monotonic() - in_use_since > c.slot_max_retries * c.slot_retry_delay_ms / 1000:
                    # Someone else took the slot while we were away: retrying forever would hide it.
                    raise slot_in_use(c.slot_name, None, c.slot_max_retries, c.slot_retry_delay_ms) from e
                emitted = self.streaming.emitted
                if emitted.lsn_commit is not None:
                    resume, start_lsn = emitted, emitted.lsn_commit
                log.warning("PostgreSQL stream interrupted (%s); retrying in %.1fs", str(e).strip(), delay)
                self.stop_event.wait(delay)
                delay = min(delay * 2, 10.0)

    # -- SourceTask -------------------------------------------------------------------------------
    def poll(self) -> list[SourceRecord] | None:
        batch = self.queue.poll()
        if batch:
            self.new_tables.stamp(batch)
            last = batch[-1].source_offset
            if last is not None and not last.get("snapshot"):  # streaming: one check per batch
                first = batch[0].source_offset
                if first is not None and first.get("snapshot"):  # the batch where the snapshot ends
                    self.stream_metrics.batch([r for r in batch if not (r.source_offset or {}).get("snapshot")])
                else:
                    self.stream_metrics.batch(batch)
        return batch

    # -- metrics -----------------------------------------------------------------------------------
    def _metrics(self) -> dict[str, Any]:
        """Debezium's snapshot and streaming metrics plus RetainedWalBytes; runs only when published."""
        out = self.progress.metrics()
        streaming = getattr(self, "streaming", None)
        if streaming is not None:
            out.update(self.stream_metrics.values(streaming.connected))
        out[RETAINED_WAL_BYTES] = self._retained_wal()
        out[m.POSITION_RETENTION] = self._retention
        if streaming is not None:
            out[m.BYTES_BEHIND_SOURCE] = self._wal_behind
        out[m.QUEUE_TOTAL_CAPACITY] = self.queue.max_queue_size
        out[m.QUEUE_REMAINING_CAPACITY] = max(0, self.queue.max_queue_size - len(self.queue))
        return out

    def _retained_wal(self) -> int | None:
        """pg_current_wal_lsn() - the slot's restart_lsn, read at most every WAL_SAMPLE_S; with it what
        is not read yet and how long the slot keeps its WAL (cdc_postgres.retention)."""
        now = time.monotonic()
        if now < self._wal_next or self.stop_event.is_set():
            return self._wal_bytes
        self._wal_next = now + WAL_SAMPLE_S
        try:
            if self._wal_conn is None:
                self._wal_conn = PostgresConnection(self.dsn, connect_timeout=5)
            slot_name = self.config.slot_name
            self._wal_bytes = self._wal_conn.retained_wal_bytes(slot_name)
            head = current_lsn(self._wal_conn.conn)
            self._wal_behind = self._unread_wal(head)
            # The rate over the readings of the last few minutes: steadier than two readings, and free.
            # Published from the second reading on: before it there is no rate, and +Inf would be a guess.
            self._wal_rate.add(now, head)
            if (rate := self._wal_rate.rate()) is not None:
                offset = self.context.offset_storage_reader().offset(self.partition)
                slot = read_slot(self._wal_conn.conn, slot_name)
                mode = snapshot_on_loss(self.config.snapshot_mode)
                self._retention = estimate(slot_name, slot, offset, rate, mode, int(time.time() * 1000)).to_json()
        except (psycopg.Error, ConnectException) as e:  # e.g. a server restart: try again next time
            log.debug("reading the retained WAL of slot %s failed: %s", self.config.slot_name, e)
            self._close_wal_conn()
        return self._wal_bytes

    def _unread_wal(self, head: int) -> int | None:
        """pg_current_wal_lsn() (`head`) minus what the replication stream received (keepalives included)."""
        streaming = getattr(self, "streaming", None)
        received = getattr(streaming, "last_received_lsn", 0) if streaming is not None else 0
        if not received:
            return None
        return max(0, head - int(received))

    def _close_wal_conn(self) -> None:
        conn, self._wal_conn = self._wal_conn, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error as e:
                log.debug("closing the metrics connection: %s", e)

    def commit(self) -> None:
        # Only what is stored may be confirmed: the slot then lets PostgreSQL recycle older WAL.
        offset = self.context.offset_storage_reader().offset(self.partition) or {}
        lsn = offset.get("lsn_commit")
        streaming = getattr(self, "streaming", None)
        if lsn and streaming is not None and not offset.get("snapshot"):
            streaming.confirm(int(lsn))

    def stop(self) -> None:
        self.stop_event.set()
        if getattr(self, "signals", None) is not None:
            self.signals.close()
        if hasattr(self, "queue"):
            self.queue.close()
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join(10)
        if getattr(self, "_slot_conn", None) is not None:
            self._release_snapshot_slot()
        if getattr(self, "_wal_conn", None) is not None:
            self._close_wal_conn()
        if getattr(self, "config", None) is not None and self.config.drop_slot_on_stop:
            try:
                self._drop_slot(self.config.slot_name)
            except Exception as e:
                log.warning("slot.drop.on.stop: could not drop replication slot %s: %s", self.config.slot_name, e)

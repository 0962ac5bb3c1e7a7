"""Debezium's notifications of snapshot progress (incremental and initial), on the `log` and `sink` channels.

Mirrors io.debezium.pipeline.notification: `NotificationService` with the channels of
`notification.enabled.channels` (`LogNotificationChannel` logs `[Notification Service] ...`,
`SinkNotificationChannel` writes a record to `notification.sink.topic.name`), and the
`IncrementalSnapshotNotificationService` types: STARTED, PAUSED, RESUMED, ABORTED,
IN_PROGRESS (per chunk), TABLE_SCAN_COMPLETED (per table, with a `status`) and COMPLETED.
The JMX channel has no Python counterpart; naming it logs one warning and it is ignored.

Record shape, as Debezium's: key `io.debezium.connector.common.NotificationKey` {id}, value
`io.debezium.connector.common.Notification` {id, aggregate_type, type, additional_data
(map<string,string>), timestamp}; an incremental snapshot's `id` is the signal's id that
started it. A sink notification has no source partition: the runtime stores no offset for it.

`InitialSnapshotNotifier` is Debezium's `InitialSnapshotNotificationService` (aggregate_type
"Initial Snapshot"; every notification has its own random UUID `id`; `connector_name` is the
logical name, topic.prefix): STARTED, then per table IN_PROGRESS {current_collection_in_progress,
data_collections (the tables whose rows the snapshot reads)} when its read starts and
TABLE_SCAN_COMPLETED {scanned_collection, data_collections (every captured table),
total_rows_scanned, status SUCCEEDED} when it ends (an empty table: SUCCEEDED, 0 rows; a
database error: {scanned_collection, status SQL_EXCEPTION}), then COMPLETED, or ABORTED when the
snapshot fails or is stopped; SKIPPED when no snapshot runs; TABLE_CHUNK_IN_PROGRESS and
TABLE_CHUNK_COMPLETED per chunk of a chunked (snapshot.max.threads > 1) snapshot. Lists are
joined by "," (Debezium's LIST_DELIMITER). As in Debezium, a table's TABLE_SCAN_COMPLETED goes
out when its read ends, while its last row is still held back for its `last*` marker (Debezium's
buffering snapshot receiver), so it precedes that row. `tracking` wraps a snapshot's
`SnapshotProgress` so its start_table/finish_table calls send the per-table notifications.
Differences from Debezium:
- Debezium's initial snapshot notifications carry the snapshot's partition and offset; these carry
  none, so committing one stores nothing (a stored offset ahead of a held-back row would make a
  resumed snapshot skip it).
- A resumed snapshot (Debezium starts over) sends STARTED again and notifies only the tables it
  still reads; their total_rows_scanned counts the rows this attempt read.
- Only a data snapshot notifies: Debezium also sends STARTED and COMPLETED around a schema-only
  one (snapshot.mode=no_data, recovery), and SKIPPED when a connector restarts past its snapshot
  (`skipped()` is here; the connectors' tasks do not call it yet).
- MySQL (cdc_mysql/snapshot.py): SQL_EXCEPTION only when a database error hits while one table is
  being read (with snapshot.max.threads > 1 the failing chunk's table is not known there). The
  TABLE_CHUNK_* notifications come from snapshot_parallel.py, when a reader takes a chunk
  (total_rows_scanned: the table's rows taken before it) and when its last row is taken.
- The data_collections lists are in the snapshot's table order (Debezium's: a HashSet's). The key is
  `data_collections` as in Debezium's source (its docs' TABLE_SCAN_COMPLETED example says
  `data_collection`).

The connector calls the notifier methods at its transitions; `emit` puts a record on the
connector's queue (the stream's order).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from cdc.api import Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.progress import SnapshotProgress
from cdc_debezium.signals import keys
from cdc_debezium.signals.incremental import IncrementalSnapshotContext

log = logging.getLogger(__name__)

CHANNELS = "notification.enabled.channels"
SINK_TOPIC = "notification.sink.topic.name"
INCREMENTAL = "Incremental Snapshot"
INITIAL = "Initial Snapshot"
# TABLE_SCAN_COMPLETED's status values (Debezium's TableScanCompletionStatus)
SUCCEEDED, EMPTY, NO_PRIMARY_KEY, SKIPPED, SQL_EXCEPTION, UNKNOWN_SCHEMA = (
    "SUCCEEDED", "EMPTY", "NO_PRIMARY_KEY", "SKIPPED", "SQL_EXCEPTION", "UNKNOWN_SCHEMA",
)  # fmt: skip

KEY_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.common.NotificationKey")
    .field("id", Schema.STRING_SCHEMA)
    .build()
)
VALUE_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.common.Notification")
    .field("id", Schema.STRING_SCHEMA)
    .field("aggregate_type", Schema.STRING_SCHEMA)
    .field("type", Schema.STRING_SCHEMA)
    .field("additional_data", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).optional().build())
    .field("timestamp", Schema.INT64_SCHEMA)
    .build()
)


@dataclass(frozen=True)
class Notification:
    id: str
    aggregate_type: str
    type: str
    additional_data: dict[str, str] = field(default_factory=dict)
    timestamp: int = 0

    def __str__(self) -> str:  # Debezium's Notification.toString
        return (
            f"Notification{{id='{self.id}', aggregateType='{self.aggregate_type}', type='{self.type}', "
            f"additionalData={self.additional_data}, timestamp={self.timestamp}}}"
        )

    def record(self, topic: str) -> SourceRecord:
        key = Struct(KEY_SCHEMA).put("id", self.id)
        value = (
            Struct(VALUE_SCHEMA)
            .put("id", self.id)
            .put("aggregate_type", self.aggregate_type)
            .put("type", self.type)
            .put("additional_data", dict(self.additional_data))
            .put("timestamp", self.timestamp)
        )
        return SourceRecord(None, None, topic, None, KEY_SCHEMA, key, VALUE_SCHEMA, value, self.timestamp)


@dataclass(frozen=True)
class NotificationConfig:
    log: bool = False
    sink_topic: str | None = None

    @property
    def enabled(self) -> bool:
        return self.log or self.sink_topic is not None

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> NotificationConfig:
        names = [c.strip().lower() for c in str(props.get(CHANNELS) or "").split(",") if c.strip()]
        for unknown in sorted(set(names) - {"log", "sink"}):
            log.warning("%s=%s: channel %r is not available here (use log, sink); ignored", CHANNELS, ",".join(names),
                        unknown)  # fmt: skip
        topic = str(props.get(SINK_TOPIC) or "").strip()
        if "sink" in names and not topic:
            from cdc.api.errors import ConfigException

            raise ConfigException(
                f"{CHANNELS} includes sink: set {SINK_TOPIC} to the topic notifications go to", SINK_TOPIC
            )
        return cls("log" in names, topic if "sink" in names else None)


class Notifier:
    """Sends notifications to the enabled channels."""

    def __init__(self, config: NotificationConfig, emit: Callable[[SourceRecord], None]) -> None:
        self.config = config
        self.emit = emit

    def send(self, notification: Notification) -> None:
        if self.config.log:
            log.info("[Notification Service] %s", notification)
        if self.config.sink_topic is not None:
            self.emit(notification.record(self.config.sink_topic))


class IncrementalSnapshotNotifier:
    """Debezium's IncrementalSnapshotNotificationService: one call per snapshot transition."""

    def __init__(self, props: Mapping[str, Any], connector_name: str, emit: Callable[[SourceRecord], None]) -> None:
        self.config = NotificationConfig.from_props(props)
        self.notifier = Notifier(self.config, emit)
        self.connector_name = connector_name
        self.id = ""
        self.scanned: dict[str, int] = {}

    def _send(self, kind: str, **data: Any) -> None:
        if not self.config.enabled:
            return
        extra = {"connector_name": self.connector_name, **{k: str(v) for k, v in data.items() if v is not None}}
        self.notifier.send(Notification(self.id, INCREMENTAL, kind, extra, int(time.time() * 1000)))

    def started(self, ctx: IncrementalSnapshotContext, signal_id: str, added: list[str]) -> None:
        if not added:
            return
        self.id = ctx.correlation_id or signal_id
        self._send("STARTED", data_collections=",".join(added))

    def chunk(self, ctx: IncrementalSnapshotContext, table_id: str, rows: int) -> None:
        """After a chunk's rows were emitted (the window closed)."""
        self.id = self.id or ctx.correlation_id or ""
        self.scanned[table_id] = self.scanned.get(table_id, 0) + rows
        current = ctx.current
        if current is not None and current.id == table_id:
            self._send(
                "IN_PROGRESS",
                data_collections=",".join(c.id for c in ctx.collections),
                current_collection_in_progress=table_id,
                maximum_key=keys.dumps(ctx.maximum_key),
                last_processed_key=keys.dumps(ctx.last_key),
            )
            return
        self.table_done(ctx, table_id, SUCCEEDED)

    def table_done(self, ctx: IncrementalSnapshotContext, table_id: str, status: str) -> None:
        """A table's scan ended (read to its end, or skipped with `status`); COMPLETED after the last."""
        self._send(
            "TABLE_SCAN_COMPLETED",
            data_collections=",".join([table_id, *(c.id for c in ctx.collections)]),
            scanned_collection=table_id,
            total_rows_scanned=self.scanned.pop(table_id, 0),
            status=status,
        )
        if not ctx.running:
            self._send("COMPLETED")

    def aborted(self, ctx: IncrementalSnapshotContext, signal_id: str, dropped: list[str]) -> None:
        if dropped:
            self.id = self.id or signal_id
            self._send("ABORTED", data_collections=",".join(dropped))
            for table_id in dropped:
                self.scanned.pop(table_id, None)

    def paused(self, ctx: IncrementalSnapshotContext) -> None:
        self._send("PAUSED", data_collections=",".join(c.id for c in ctx.collections))

    def resumed(self, ctx: IncrementalSnapshotContext) -> None:
        self._send("RESUMED", data_collections=",".join(c.id for c in ctx.collections))


class InitialSnapshotNotifier:
    """Debezium's InitialSnapshotNotificationService: one call per initial (or blocking) snapshot transition."""

    def __init__(self, props: Mapping[str, Any], connector_name: str, emit: Callable[[SourceRecord], None]) -> None:
        self.config = NotificationConfig.from_props(props)
        self.notifier = Notifier(self.config, emit)
        self.connector_name = connector_name

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    def _send(self, kind: str, **data: Any) -> None:
        if not self.config.enabled:
            return
        extra = {**{k: str(v) for k, v in data.items()}, "connector_name": self.connector_name}
        self.notifier.send(Notification(str(uuid.uuid4()), INITIAL, kind, extra, int(time.time() * 1000)))

    def started(self) -> None:
        self._send("STARTED")

    def completed(self) -> None:
        self._send("COMPLETED")

    def aborted(self) -> None:
        self._send("ABORTED")

    def skipped(self) -> None:
        """No snapshot runs (its offset says it is done)."""
        self._send("SKIPPED")

    def table_in_progress(self, table_id: str, data_collections: Sequence[str]) -> None:
        """A table's read starts; `data_collections`: the tables whose rows the snapshot reads."""
        self._send("IN_PROGRESS", current_collection_in_progress=table_id, data_collections=",".join(data_collections))

    def table_completed(self, table_id: str, rows: int, captured: Sequence[str]) -> None:
        """A table's read ended with `rows` rows; `captured`: every captured table."""
        self._send(
            "TABLE_SCAN_COMPLETED",
            scanned_collection=table_id,
            data_collections=",".join(captured),
            total_rows_scanned=rows,
            status=SUCCEEDED,
        )

    def table_failed(self, table_id: str) -> None:
        """A table's read failed on a database error (Debezium's notifyCompletedTableWithError)."""
        self._send("TABLE_SCAN_COMPLETED", scanned_collection=table_id, status=SQL_EXCEPTION)

    def chunk_in_progress(self, table_id: str, index: int, total: int, rows_so_far: int) -> None:
        """A chunk's read starts (`index` of `total`, from 0); `rows_so_far`: the table's rows read before it."""
        self._send(
            "TABLE_CHUNK_IN_PROGRESS",
            current_collection_in_progress=table_id,
            chunk_index=index,
            total_chunks=total,
            total_rows_scanned=rows_so_far,
        )

    def chunk_completed(self, table_id: str, index: int, total: int, captured: Sequence[str]) -> None:
        self._send(
            "TABLE_CHUNK_COMPLETED",
            scanned_collection=table_id,
            data_collections=",".join(captured),
            chunk_index=index,
            total_chunks=total,
            status=SUCCEEDED,
        )

    def tracking(self, progress: SnapshotProgress, read: Sequence[str], captured: Sequence[str]) -> SnapshotProgress:
        """`progress`, also sending IN_PROGRESS at start_table and TABLE_SCAN_COMPLETED at finish_table."""
        if not self.config.enabled:
            return progress
        return cast(SnapshotProgress, NotifyingProgress(progress, self, list(read), list(captured)))

    def in_progress_tables(self, progress: SnapshotProgress) -> list[str]:
        """The tables `tracking(progress)` saw start and not finish (the one a database error hit, if one)."""
        return list(progress.reading) if isinstance(progress, NotifyingProgress) else []


class NotifyingProgress:
    """A snapshot's view of the task's shared `SnapshotProgress` that notifies its table transitions.

    Every call and attribute goes to the shared object (the task's status and metrics read it);
    only the per-table calls add a notification.
    """

    def __init__(
        self, inner: SnapshotProgress, notifier: InitialSnapshotNotifier, read: list[str], captured: list[str]
    ) -> None:
        self.inner, self.notifier, self.read, self.captured = inner, notifier, read, captured
        self.reading: list[str] = []
        self.row = inner.row  # the per-row call costs what it did

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def start_table(self, table: str, estimate: int) -> None:
        self.inner.start_table(table, estimate)
        self.reading.append(table)
        self.notifier.table_in_progress(table, self.read)

    def finish_table(self, table: str) -> None:
        self.inner.finish_table(table)
        if table in self.reading:
            self.reading.remove(table)
        self.notifier.table_completed(table, self.inner.tables[table].rows, self.captured)

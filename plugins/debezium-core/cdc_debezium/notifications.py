"""Debezium's notifications of incremental snapshot progress, on the `log` and `sink` channels.

Mirrors io.debezium.pipeline.notification: `NotificationService` with the channels of
`notification.enabled.channels` (`LogNotificationChannel` logs `[Notification Service] ...`,
`SinkNotificationChannel` writes a record to `notification.sink.topic.name`), and the
`IncrementalSnapshotNotificationService` types: STARTED, PAUSED, RESUMED, ABORTED,
IN_PROGRESS (per chunk), TABLE_SCAN_COMPLETED (per table, with a `status`) and COMPLETED.
The JMX channel has no Python counterpart; naming it logs one warning and it is ignored.

Record shape, as Debezium's: key `io.debezium.connector.common.NotificationKey` {id}, value
`io.debezium.connector.common.Notification` {id, aggregate_type, type, additional_data
(map<string,string>), timestamp}; `id` is the signal's id that started the snapshot. A sink
notification has no source partition (nothing to store in the offsets), as Debezium's has none.

The connector calls the `IncrementalSnapshotNotifier` methods at its transitions; `emit` puts a
record on the connector's queue (the stream's order).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc.api import Schema, SchemaBuilder, SourceRecord, Struct
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

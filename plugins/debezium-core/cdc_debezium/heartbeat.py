"""Heartbeat records on `__debezium-heartbeat.<prefix>`: they move offsets forward while idle.

Each also carries the offset it stands at in the `cdc.watermark` header (cdc.api.WATERMARK_HEADER):
a heartbeat is emitted only between transactions, so every change before that position has been
emitted before it. The runtime writes it after them, and a sink that commits it has applied them
all (`cdc status` then says how far the lake reflects the database).
"""

from __future__ import annotations

import json
import time
from typing import Any

from cdc.api import WATERMARK_HEADER, Headers, Schema, SchemaBuilder, SourceRecord, Struct

KEY_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.common.ServerNameKey")
    .field("serverName", Schema.STRING_SCHEMA)
    .build()
)
VALUE_SCHEMA = (
    SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").field("ts_ms", Schema.INT64_SCHEMA).build()
)


class Heartbeat:
    """Emits at most one heartbeat per `heartbeat.interval.ms` (0 disables it)."""

    def __init__(self, interval_ms: int, topic: str, server_name: str) -> None:
        self.interval = interval_ms / 1000
        self.topic = topic
        self.server_name = server_name
        self._last = time.monotonic()

    @property
    def enabled(self) -> bool:
        return self.interval > 0

    def due(self) -> bool:
        return self.enabled and time.monotonic() - self._last >= self.interval

    def record(self, partition: dict[str, Any], offset: dict[str, Any]) -> SourceRecord:
        self._last = time.monotonic()
        ts = int(time.time() * 1000)
        key = Struct(KEY_SCHEMA).put("serverName", self.server_name)
        value = Struct(VALUE_SCHEMA).put("ts_ms", ts)
        headers = Headers().add(WATERMARK_HEADER, json.dumps(offset, sort_keys=True), Schema.STRING_SCHEMA)
        return SourceRecord(partition, offset, self.topic, None, KEY_SCHEMA, key, VALUE_SCHEMA, value, ts, headers)

"""Debezium-shaped change events for the tests, encoded with cdc's own JsonConverter.

The MySQL connector is written elsewhere; these events have its shape: key struct,
envelope with before/after/source/op/ts_ms, MySQL source position (file, pos, row).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.data import Schema, SchemaBuilder, Struct
from cdc.converters.json import JsonConverter
from cdc.log import LogProducer, TopicLog, TopicSpec


def _value_schema(prefix: str, columns: Mapping[str, Schema]) -> Schema:
    b = SchemaBuilder.struct().name(f"{prefix}.Value").optional()
    for name, s in columns.items():
        b.field(name, s)
    return b.build()


SOURCE = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.mysql.Source")
    .field("connector", Schema.STRING_SCHEMA)
    .field("ts_ms", Schema.INT64_SCHEMA)
    .field("snapshot", Schema.OPTIONAL_STRING_SCHEMA)
    .field("db", Schema.STRING_SCHEMA)
    .field("table", Schema.OPTIONAL_STRING_SCHEMA)
    .field("file", Schema.STRING_SCHEMA)
    .field("pos", Schema.INT64_SCHEMA)
    .field("row", Schema.INT32_SCHEMA)
    .build()
)

DEFAULT_COLUMNS: dict[str, Schema] = {
    "id": Schema.INT32_SCHEMA,
    "name": Schema.OPTIONAL_STRING_SCHEMA,
    "qty": Schema.OPTIONAL_INT64_SCHEMA,
}


class Table:
    """Encodes change events of one table (primary key `id`) for topic `<prefix>.<db>.<table>`."""

    def __init__(
        self,
        topic: str,
        columns: Mapping[str, Schema] | None = None,
        *,
        schemas_enable: bool = True,
    ) -> None:
        self.topic = topic
        self.columns = dict(columns or DEFAULT_COLUMNS)
        id_schema = self.columns.get("id", Schema.INT32_SCHEMA)
        self.key_schema = SchemaBuilder.struct().name(f"{topic}.Key").field("id", id_schema).build()
        self.row_schema = _value_schema(topic, self.columns)
        self.envelope = (
            SchemaBuilder.struct()
            .name(f"{topic}.Envelope")
            .field("before", self.row_schema)
            .field("after", self.row_schema)
            .field("source", SOURCE)
            .field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .build()
        )
        self.keys = JsonConverter()
        self.keys.configure({"schemas.enable": schemas_enable}, is_key=True)
        self.values = JsonConverter()
        self.values.configure({"schemas.enable": schemas_enable}, is_key=False)

    def _row(self, data: Mapping[str, Any] | None) -> Struct | None:
        if data is None:
            return None
        s = Struct(self.row_schema)
        for name in self.columns:
            s.put(name, data.get(name))
        return s

    def event(
        self,
        op: str,
        id_: int,
        row: Mapping[str, Any] | None,
        seq: int,
        before: Mapping[str, Any] | None = None,
        snapshot: str | None = None,
    ) -> tuple[bytes | None, bytes]:
        """(key, value) bytes; `seq` becomes the binlog position (file 1, pos = seq); `snapshot`
        the `source.snapshot` marker of a read (default "true")."""
        source = Struct(SOURCE)
        for k, v in {
            "connector": "mysql",
            "ts_ms": 1_700_000_000_000 + seq,
            "db": "shop",
            "file": "mysql-bin.000001",
            "pos": seq,
            "row": 0,
            "snapshot": "false" if op != "r" else (snapshot or "true"),
            "table": self.topic.rsplit(".", 1)[-1],
        }.items():
            source.put(k, v)
        env = Struct(self.envelope)
        full = {"id": id_, **(row or {})}
        env.put("before", self._row(before if before is not None else (full if op == "d" else None)))
        env.put("after", None if op in ("d", "t") else self._row(full))
        env.put("source", source)
        env.put("op", op)
        env.put("ts_ms", 1_700_000_000_000 + seq)
        key = None
        if op != "t":
            k = Struct(self.key_schema)
            k.put("id", id_)
            key = self.keys.from_connect_data(self.topic, self.key_schema, k)
        value = self.values.from_connect_data(self.topic, self.envelope, env)
        assert value is not None
        return key, value


def produce(
    log: TopicLog,
    topic: str,
    records: list[tuple[bytes | None, bytes | None]],
    partitions: int = 1,
    partition: int | None = None,
    headers: list[tuple[str, bytes | None]] | None = None,
) -> None:
    """Append records (by key with murmur2 unless `partition` is given) and wait until durable."""
    log.create_topics([TopicSpec(topic, partitions)])
    producer: LogProducer = log.producer()
    try:
        for key, value in records:
            producer.send(topic, value, key=key, partition=partition, headers=headers or ())
        assert producer.flush(30) == 0
    finally:
        producer.close()

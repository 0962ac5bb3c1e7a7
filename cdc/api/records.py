"""Records that flow through the runtime (Kafka Connect's ConnectRecord, SourceRecord, SinkRecord)."""

from __future__ import annotations

from typing import Any, Self

from cdc.api.data.schema import Schema
from cdc.api.header import Headers


class ConnectRecord:
    """A keyed, schema'd value bound for (or read from) a topic partition (Kafka Connect's ConnectRecord).

    `kafka_partition` None lets the runtime place the record by key (murmur2, as Kafka's
    default partitioner does). `timestamp` is milliseconds since the epoch.

    `key` and `value` are Connect data (see `cdc.api.data`) described by `key_schema` and
    `value_schema`; a None schema means schemaless data (dicts, lists, strings ...). The
    converters turn them into bytes on the way into the log and back on the way out, so a
    connector works with Connect data, never with the log's serialized bytes. A None value is
    a tombstone. Records are mutable objects, but treat them as values: SMTs build changed
    copies with `new_record`.
    """

    __slots__ = (
        "headers",
        "kafka_partition",
        "key",
        "key_schema",
        "timestamp",
        "topic",
        "value",
        "value_schema",
    )

    def __init__(
        self,
        topic: str,
        kafka_partition: int | None = None,
        key_schema: Schema | None = None,
        key: Any = None,
        value_schema: Schema | None = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
    ) -> None:
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self.headers = headers if headers is not None else Headers()

    def new_record(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        timestamp: int | None,
        headers: Headers | None = None,
    ) -> Self:
        """A copy with the given parts replaced; SMTs use it so subclass fields survive.

        `headers` None keeps a copy of this record's headers. Subclasses implement it; the
        base class raises NotImplementedError.
        """
        raise NotImplementedError

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.topic,
            self.kafka_partition,
            self.key_schema,
            self.key,
            self.value_schema,
            self.value,
            self.timestamp,
            self.headers,
        )

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._fields() == other._fields()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(topic={self.topic!r}, partition={self.kafka_partition}, "
            f"key={self.key!r}, value={self.value!r}, timestamp={self.timestamp})"
        )


class SourceRecord(ConnectRecord):
    """A record produced by a source task, carrying the source position it came from.

    `source_partition` names the stream (for example `{"server": "dbserver1"}`) and
    `source_offset` the position in it; the runtime stores the latest acknowledged offset
    per partition and hands it back through `OffsetStorageReader` after a restart.

    Both are small dicts of JSON values (str keys; str, int, float, bool, None, lists, dicts):
    they are stored as JSON and read back with `json.loads`, so tuples come back as lists. The
    offset is where to resume *after* this record, so a restart does not emit it again. A
    partition of None means "no position to store" (for example a heartbeat).
    """

    __slots__ = ("source_offset", "source_partition")

    def __init__(
        self,
        source_partition: dict[str, Any] | None,
        source_offset: dict[str, Any] | None,
        topic: str,
        kafka_partition: int | None = None,
        key_schema: Schema | None = None,
        key: Any = None,
        value_schema: Schema | None = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
    ) -> None:
        super().__init__(topic, kafka_partition, key_schema, key, value_schema, value, timestamp, headers)
        self.source_partition = source_partition
        self.source_offset = source_offset

    def new_record(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        timestamp: int | None,
        headers: Headers | None = None,
    ) -> SourceRecord:
        """A copy with the given parts replaced, keeping this record's source partition and offset."""
        return SourceRecord(
            self.source_partition,
            self.source_offset,
            topic,
            kafka_partition,
            key_schema,
            key,
            value_schema,
            value,
            timestamp,
            self.headers.duplicate() if headers is None else headers,
        )

    def _fields(self) -> tuple[Any, ...]:
        return (*super()._fields(), self.source_partition, self.source_offset)


WATERMARK_HEADER = "cdc.watermark"
"""The header of a watermark record: a source record that stands for a position, not a change.

Its value (a string: the JSON of the source offset the record stands at, as in
`source_offset`) says "the task has emitted every change before this position". The runtime
writes a record carrying this header only once every record the task sent before it is in the
log (and, for a transactional log, committed in an earlier transaction), so a reader that sees
the watermark in the log also sees everything before it, whatever the topics and partitions. A
sink that plans the watermark's topic with its data topics (the Spark sink's `watermark.topic`)
has applied every change before that position once it commits a batch that includes it.
Debezium's heartbeats carry it (`heartbeat.interval.ms`).
"""


class SinkRecord(ConnectRecord):
    """A record delivered to a sink task, with the log position it was read from.

    The original topic/partition/offset survive SMTs that rename topics (KIP-793), so a
    sink can commit the position it actually consumed.

    `kafka_offset` is the record's offset in its partition of the log; `timestamp_type` is
    Kafka's name for the timestamp's origin (this runtime always passes "CreateTime"). The
    runtime builds these; a sink reads them, and its tests build them by hand.
    """

    __slots__ = (
        "kafka_offset",
        "original_kafka_offset",
        "original_kafka_partition",
        "original_topic",
        "timestamp_type",
    )

    def __init__(
        self,
        topic: str,
        kafka_partition: int,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        kafka_offset: int,
        timestamp: int | None = None,
        timestamp_type: str = "CreateTime",
        headers: Headers | None = None,
        original_topic: str | None = None,
        original_kafka_partition: int | None = None,
        original_kafka_offset: int | None = None,
    ) -> None:
        super().__init__(topic, kafka_partition, key_schema, key, value_schema, value, timestamp, headers)
        self.kafka_offset = kafka_offset
        self.timestamp_type = timestamp_type
        self.original_topic = original_topic if original_topic is not None else topic
        self.original_kafka_partition = (
            original_kafka_partition if original_kafka_partition is not None else kafka_partition
        )
        self.original_kafka_offset = original_kafka_offset if original_kafka_offset is not None else kafka_offset

    def new_record(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        timestamp: int | None,
        headers: Headers | None = None,
    ) -> SinkRecord:
        """A copy with the given parts replaced, keeping the log offset and the original position.

        `kafka_partition` None keeps this record's partition.
        """
        return SinkRecord(
            topic,
            kafka_partition if kafka_partition is not None else self.kafka_partition,  # type: ignore[arg-type]
            key_schema,
            key,
            value_schema,
            value,
            self.kafka_offset,
            timestamp,
            self.timestamp_type,
            self.headers.duplicate() if headers is None else headers,
            self.original_topic,
            self.original_kafka_partition,
            self.original_kafka_offset,
        )

    def _fields(self) -> tuple[Any, ...]:
        return (*super()._fields(), self.kafka_offset)

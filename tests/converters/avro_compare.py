"""What confluent-kafka's AvroDeserializer (fastavro with logical types) gives for a Connect value, and
a NaN-tolerant equality: the oracle of the wire-compatibility tests."""

from __future__ import annotations

import math
from typing import Any

from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc.api.data import Schema, Struct, Time, Timestamp, Type


def plain(schema: Schema, value: Any) -> Any:
    """The dict/list/scalar fastavro reads for a Connect value written by AvroConverter: structs are dicts,
    maps without required string keys are lists of {key, value}, logical types as Python's."""
    if value is None:
        return schema.default_value
    t = schema.type
    if t is Type.STRUCT:
        return {f.name: plain(f.schema, value.get(f)) for f in schema.fields}
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return [plain(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if schema.key_schema.type is Type.STRING and not schema.key_schema.optional:
            return {k: plain(schema.value_schema, v) for k, v in value.items()}
        return [{"key": plain(schema.key_schema, k), "value": plain(schema.value_schema, v)} for k, v in value.items()]
    if t is Type.BYTES and schema.name != "org.apache.kafka.connect.data.Decimal":
        return bytes(value)
    return value


def same(a: Any, b: Any) -> bool:
    """Equality with NaN equal to NaN (PostgreSQL's 'NaN'::float8), through Structs, dicts and lists."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, Struct) and isinstance(b, Struct):
        return a.schema == b.schema and all(
            same(a.get_without_default(f.name), b.get_without_default(f.name)) for f in a.schema.fields
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b if not isinstance(a, int | float) else a == b


def confluent_decode(registry: Any, topic: str, data: bytes, is_key: bool = False) -> Any:
    """confluent-kafka's own AvroDeserializer, with the registry the converter used."""
    field = MessageField.KEY if is_key else MessageField.VALUE
    return AvroDeserializer(registry)(data, SerializationContext(topic, field))


def confluent_encode(registry: Any, schema_str: str, topic: str, value: Any, is_key: bool = False) -> bytes:
    """confluent-kafka's own AvroSerializer (TopicNameStrategy, auto-register)."""
    field = MessageField.KEY if is_key else MessageField.VALUE
    return AvroSerializer(registry, schema_str)(value, SerializationContext(topic, field))


def connect_millis(schema: Schema, value: Any) -> Any:
    """`value` with Kafka Connect's Time and Timestamp at their own precision, milliseconds (Kafka's
    Time/Timestamp.fromLogical drop the rest in every converter, JsonConverter's included)."""
    if value is None:
        return None
    logical = {L.LOGICAL_NAME: L for L in (Time, Timestamp)}.get(schema.name or "")
    if logical is not None:
        return logical.to_logical(schema, logical.from_logical(schema, value))
    if schema.type is Type.STRUCT:
        return Struct.from_values(
            schema, [connect_millis(f.schema, value.get_without_default(f.name)) for f in schema.fields]
        )
    if schema.type is Type.ARRAY:
        assert schema.value_schema is not None
        return [connect_millis(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        return {connect_millis(schema.key_schema, k): connect_millis(schema.value_schema, v) for k, v in value.items()}
    return value

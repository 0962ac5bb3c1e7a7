"""Helpers the Debezium SMTs share: envelope detection (Debezium's SmtManager), Kafka-style config
errors, and the small schema utilities of Kafka's SchemaUtil that the SMTs delegate to.

The plugin may import only cdc.api, so these restate what cdc.transforms._util offers the Kafka SMTs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, TypeVar

from cdc.api import ConfigException, ConnectRecord, DataException, Headers, Schema, SchemaBuilder, Struct
from cdc.api.data import Type

R = TypeVar("R", bound=ConnectRecord)

ENVELOPE_SUFFIX = ".Envelope"


def is_envelope(schema: Schema | None) -> bool:
    """Debezium's Envelope.isEnvelopeSchema: a value schema whose name ends with `.Envelope`."""
    return schema is not None and schema.type is Type.STRUCT and (schema.name or "").endswith(ENVELOPE_SUFFIX)


def config_error(name: str, value: Any, message: str) -> ConfigException:
    """Kafka's `new ConfigException(name, value, message)`; the chain prefixes the key with the alias."""
    shown = "null" if value is None else str(value)
    return ConfigException(f"Invalid value {shown} for configuration {name}: {message}", name, value)


def require_struct(value: object, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        found = "null" if value is None else type(value).__name__
        raise DataException(f"Only Struct objects supported for [{purpose}], found: {found}")
    return value


def copy_schema_basics(source: Schema, builder: SchemaBuilder) -> SchemaBuilder:
    """Kafka's SchemaUtil.copySchemaBasics(source, builder): name, version, doc, parameters."""
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters is not None:
        builder.parameters(source.parameters)
    return builder


def builder_like(source: Schema) -> SchemaBuilder:
    """Kafka's SchemaUtil.copySchemaBasics(source): a builder of the same type (and element
    schemas), name, version, doc and parameters; struct fields are copied too."""
    if source.type is Type.ARRAY:
        assert source.value_schema is not None
        builder = SchemaBuilder.array(source.value_schema)
    elif source.type is Type.MAP:
        assert source.key_schema is not None and source.value_schema is not None
        builder = SchemaBuilder.map(source.key_schema, source.value_schema)
    else:
        builder = SchemaBuilder.of(source.type)
        for field in source.fields:
            builder.field(field.name, field.schema)
    return copy_schema_basics(source, builder)


def optional_copy(schema: Schema) -> Schema:
    """The schema made optional and without its default (what Debezium adds as metadata fields)."""
    if schema.optional and schema.default_value is None:
        return schema
    return builder_like(schema).optional().build()


def struct_values(value: Struct, names: Iterable[str]) -> list[Any]:
    return [value.get_without_default(n) for n in names]


def with_value(record: R, schema: Schema | None, value: Any, topic: str | None = None) -> R:
    return record.new_record(
        record.topic if topic is None else topic,
        record.kafka_partition,
        record.key_schema,
        record.key,
        schema,
        value,
        record.timestamp,
    )


def with_key(record: R, schema: Schema | None, key: Any) -> R:
    return record.new_record(
        record.topic, record.kafka_partition, schema, key, record.value_schema, record.value, record.timestamp
    )


def with_headers(record: R, headers: Headers) -> R:
    return record.new_record(
        record.topic,
        record.kafka_partition,
        record.key_schema,
        record.key,
        record.value_schema,
        record.value,
        record.timestamp,
        headers,
    )


def with_topic(record: R, topic: str | None) -> R:
    """Debezium's setTopic: a blank or null topic leaves the record as it is."""
    if topic is None or not str(topic).strip():
        return record
    return with_value(record, record.value_schema, record.value, topic=str(topic))


class SchemaCache:
    """A small thread-safe LRU of rebuilt schemas (Debezium's BoundedConcurrentHashMap)."""

    def __init__(self, max_size: int = 64) -> None:
        self._max = max_size
        self._items: OrderedDict[Any, Schema] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Schema | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Any, value: Schema) -> Schema:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)
        return value


def drop_struct_fields(value: Struct | None, schema: Schema | None, names: set[str], cache: SchemaCache) -> tuple:
    """Kafka's ReplaceField with `exclude`: the struct (and schema) without the named fields.

    A null value, or a schema without any of the names, comes back unchanged.
    """
    if value is None or schema is None or not any(schema.field(n) is not None for n in names):
        return schema, value
    key = (schema, frozenset(names))
    updated = cache.get(key)
    if updated is None:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        if schema.optional:
            builder.optional()
        for field in schema.fields:
            if field.name not in names:
                builder.field(field.name, field.schema)
        updated = cache.put(key, builder.build())
    kept = [f.name for f in updated.fields]
    return updated, Struct.from_values(updated, struct_values(value, kept))


_AVRO_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_AVRO_REST = _AVRO_FIRST | frozenset("0123456789.")
SCHEMA_NAME_MODES = ("none", "avro", "avro_unicode")


def adjust_schema_name(name: str, mode: str) -> str:
    """Debezium's SchemaNameAdjuster for a schema fullname: `avro` turns invalid characters into `_`
    (a leading digit keeps itself after the `_`), `avro_unicode` into `_uXXXX`; `none` keeps the name."""
    if mode == "none" or not name:
        return name

    def replaced(c: str) -> str:
        return "_" if mode == "avro" else f"_u{ord(c):04x}"

    first = name[0]
    out = [first] if first in _AVRO_FIRST else [replaced(first) + (first if first.isdigit() and mode == "avro" else "")]
    out.extend(c if c in _AVRO_REST else replaced(c) for c in name[1:])
    return "".join(out)

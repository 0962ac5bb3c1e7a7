"""Helpers shared by the SMTs (Kafka's `transforms.util` package: Requirements, SchemaUtil,
SchemaUpdateCache, the list/string validators) plus the Key/Value "operating side" mixins."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, TypeVar

from cdc.api.data import Schema, SchemaBuilder, Struct, Type
from cdc.api.errors import ConfigException, DataException
from cdc.api.records import ConnectRecord, SinkRecord

R = TypeVar("R", bound=ConnectRecord)


# -- record-shape requirements (Kafka's Requirements) -------------------------------------
def class_name(value: object) -> str:
    """A null-safe class name for error messages: builtins bare, everything else qualified."""
    if value is None:
        return "null"
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def require_struct(value: object, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataException(f"Only Struct objects supported for [{purpose}], found: {class_name(value)}")
    return value


def require_map(value: object, purpose: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DataException(
            f"Only Map objects supported in absence of schema for [{purpose}], found: {class_name(value)}"
        )
    return value


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataException(f"Only SinkRecord supported for [{purpose}], found: {class_name(record)}")
    return record


def schemaless_type(value: object) -> Type | None:
    """Kafka's ConnectSchema.schemaType(Class) for a Python value: None when Connect has no type for it.

    Python ints are INT64 and floats FLOAT64 (Java's Long and Double); logical values
    (date, time, datetime, Decimal) have no schemaless type, as in Kafka.
    """
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, bytes | bytearray | memoryview):
        return Type.BYTES
    if isinstance(value, list | tuple):
        return Type.ARRAY
    if isinstance(value, Mapping):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    return None


# -- schemas --------------------------------------------------------------------------------
def copy_schema_basics(source: Schema, builder: SchemaBuilder) -> SchemaBuilder:
    """Name, version, doc and parameters, exactly what Kafka's SchemaUtil copies.

    Optionality and the default are deliberately not copied (as in Kafka): the rebuilt struct
    has different fields, so the old default would not fit it anyway.
    """
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters is not None:
        builder.parameters(source.parameters)
    return builder


def put_present(target: Struct, name: str, value: Any) -> None:
    """Put a copied field value, leaving nulls unset.

    A fresh Struct already holds None everywhere, and Struct.put(None) on a required field
    with a default would be rejected even though reading it back yields the default.
    """
    if value is not None:
        target.put(name, value)


class SchemaUpdateCache:
    """A small thread-safe LRU of input schema -> rebuilt schema (Kafka's SynchronizedCache(LRUCache(16))).

    Tasks may share a transform across threads, and rebuilding a schema per record would also
    defeat identity-based fast paths downstream (the same output schema object is reused).
    """

    def __init__(self, max_size: int = 16) -> None:
        self._max = max_size
        self._items: OrderedDict[Schema, Schema] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Schema) -> Schema | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Schema, value: Schema) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


# -- config helpers -------------------------------------------------------------------------
def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list | tuple):  # Java's List.toString(), as Kafka prints it
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def config_error(name: str, value: Any, message: str) -> ConfigException:
    """Kafka's `new ConfigException(name, value, message)` wording, keeping the key on `.name`."""
    return ConfigException(f"Invalid value {_shown(value)} for configuration {name}: {message}", name, value)


def non_empty_list(name: str, value: Any) -> None:
    if not value:
        raise config_error(name, value, "Empty list; list at least one field name")


def non_empty_string_or_null(name: str, value: Any) -> None:
    # Kafka's NonEmptyString lets null through (it means "not set"); cdc.api's rejects it.
    if value is not None and not str(value):
        raise config_error(name, value, "String must be non-empty")


# -- Key / Value variants -------------------------------------------------------------------
class OperatingSide(ABC):
    """Which half of the record a Key/Value SMT reads and rewrites."""

    @abstractmethod
    def operating_schema(self, record: ConnectRecord) -> Schema | None: ...

    @abstractmethod
    def operating_value(self, record: ConnectRecord) -> Any: ...

    @abstractmethod
    def new_record(self, record: R, schema: Schema | None, value: Any) -> R: ...


class KeySide(OperatingSide):
    def operating_schema(self, record: ConnectRecord) -> Schema | None:
        return record.key_schema

    def operating_value(self, record: ConnectRecord) -> Any:
        return record.key

    def new_record(self, record: R, schema: Schema | None, value: Any) -> R:
        return record.new_record(
            record.topic, record.kafka_partition, schema, value, record.value_schema, record.value, record.timestamp
        )


class ValueSide(OperatingSide):
    def operating_schema(self, record: ConnectRecord) -> Schema | None:
        return record.value_schema

    def operating_value(self, record: ConnectRecord) -> Any:
        return record.value

    def new_record(self, record: R, schema: Schema | None, value: Any) -> R:
        return record.new_record(
            record.topic, record.kafka_partition, record.key_schema, record.key, schema, value, record.timestamp
        )


def non_null(name: str, value: Any) -> None:
    """Kafka's ConfigDef.NonNullValidator."""
    if value is None:
        raise config_error(name, None, "entry must be non null")

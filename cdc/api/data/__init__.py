"""The Connect data model: schemas, structs and logical types (Kafka Connect's `data` package).

A record's key and value are plain Python values described by a `Schema`: a source connector
builds its schemas once (per table version) with `SchemaBuilder` and fills `Struct`s; a sink
reads them back through the same classes, whatever converter carried them through the log.
"""

from typing import Any, NamedTuple

from cdc.api.data.logical import LOGICAL_TYPES, Date, Decimal, Time, Timestamp, is_logical
from cdc.api.data.schema import Field, Schema, SchemaBuilder, Type, validate_value
from cdc.api.data.struct import Struct


class SchemaAndValue(NamedTuple):
    """A value with its schema, as converters return it; `SchemaAndValue.NULL` is (None, None)."""

    schema: Schema | None
    value: Any


SchemaAndValue.NULL = SchemaAndValue(None, None)  # type: ignore[attr-defined]

__all__ = [
    "LOGICAL_TYPES",
    "Date",
    "Decimal",
    "Field",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "Struct",
    "Time",
    "Timestamp",
    "Type",
    "is_logical",
    "validate_value",
]

"""The Connect data model: schemas, structs and logical types."""

from typing import Any, NamedTuple

from cdc.api.data.logical import LOGICAL_TYPES, Date, Decimal, Time, Timestamp, is_logical
from cdc.api.data.schema import Field, Schema, SchemaBuilder, Type, validate_value
from cdc.api.data.struct import Struct


class SchemaAndValue(NamedTuple):
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

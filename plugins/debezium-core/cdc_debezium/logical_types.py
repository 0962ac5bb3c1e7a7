"""Debezium's logical type names and schema builders (io.debezium.time.*, io.debezium.data.*)."""

from __future__ import annotations

from cdc.api import Schema, SchemaBuilder
from cdc.api.data.logical import Decimal

# io.debezium.time
DATE = "io.debezium.time.Date"
TIME = "io.debezium.time.Time"
MICRO_TIME = "io.debezium.time.MicroTime"
NANO_TIME = "io.debezium.time.NanoTime"
TIMESTAMP = "io.debezium.time.Timestamp"
MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
ZONED_TIME = "io.debezium.time.ZonedTime"
YEAR = "io.debezium.time.Year"
ISO_DATE = "io.debezium.time.IsoDate"
ISO_TIME = "io.debezium.time.IsoTime"
ISO_TIMESTAMP = "io.debezium.time.IsoTimestamp"
INTERVAL = "io.debezium.time.Interval"
MICRO_DURATION = "io.debezium.time.MicroDuration"
# io.debezium.data
JSON = "io.debezium.data.Json"
ENUM = "io.debezium.data.Enum"
ENUM_SET = "io.debezium.data.EnumSet"
BITS = "io.debezium.data.Bits"
GEOMETRY = "io.debezium.data.geometry.Geometry"
POINT = "io.debezium.data.geometry.Point"
XML = "io.debezium.data.Xml"
UUID = "io.debezium.data.Uuid"
LTREE = "io.debezium.data.Ltree"
TSVECTOR = "io.debezium.data.Tsvector"  # Debezium's spelling
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
DECIMAL_PRECISION_PARAMETER = "connect.decimal.precision"


def _named(builder: SchemaBuilder, name: str) -> SchemaBuilder:
    return builder.name(name).version(1)


def date() -> SchemaBuilder:
    return _named(SchemaBuilder.int32(), DATE)


def micro_time() -> SchemaBuilder:
    return _named(SchemaBuilder.int64(), MICRO_TIME)


def timestamp() -> SchemaBuilder:
    return _named(SchemaBuilder.int64(), TIMESTAMP)


def micro_timestamp() -> SchemaBuilder:
    return _named(SchemaBuilder.int64(), MICRO_TIMESTAMP)


def zoned_timestamp() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), ZONED_TIMESTAMP)


def year() -> SchemaBuilder:
    return _named(SchemaBuilder.int32(), YEAR)


def iso(name: str) -> SchemaBuilder:
    return _named(SchemaBuilder.string(), name)


def json() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), JSON)


def enum(allowed: list[str]) -> SchemaBuilder:
    return _named(SchemaBuilder.string(), ENUM).parameter("allowed", ",".join(allowed))


def enum_set(allowed: list[str]) -> SchemaBuilder:
    return _named(SchemaBuilder.string(), ENUM_SET).parameter("allowed", ",".join(allowed))


def bits(length: int) -> SchemaBuilder:
    return _named(SchemaBuilder.bytes(), BITS).parameter("length", str(length))


def decimal(precision: int | None, scale: int) -> SchemaBuilder:
    b = Decimal.builder(scale)
    if precision is not None:
        b.parameter(DECIMAL_PRECISION_PARAMETER, str(precision))
    return b


def geometry() -> SchemaBuilder:
    """STRUCT `{wkb: bytes, srid: optional int32}` as Debezium's Geometry."""
    return (
        SchemaBuilder.struct()
        .name(GEOMETRY)
        .version(1)
        .doc("Geometry")
        .field("wkb", Schema.BYTES_SCHEMA)
        .field("srid", Schema.OPTIONAL_INT32_SCHEMA)
    )

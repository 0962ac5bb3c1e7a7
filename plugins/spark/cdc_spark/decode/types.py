"""Kafka Connect JSON schemas → Arrow types, with the value conversion each one needs."""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from cdc.api.data.calendar import days_from_civil

Convert = Callable[[Any], Any]
_EPOCH_DATE = datetime.date(1970, 1, 1)
# Field metadata naming the SQL column type when the Arrow type alone does not say it: a
# VariableScaleDecimal or a DECIMAL wider than 38 digits travels as exact decimal text
# (the lakes' decimals stop at 38 digits and need a fixed scale), but PostgreSQL stores
# it as numeric.
SQL_TYPE = b"cdc.sql.type"
# Field metadata carrying the column's DEFAULT (the Connect schema's `default`, which Debezium and
# our connectors set from the column's DDL) as JSON text of the value in the field's Arrow type:
# a number, boolean or string as itself, binary as base64, anything else (decimal, date,
# timestamp, a float that is not finite) as Arrow's text of it. The sink writes it into the rows
# a table held before the column was added (apply/evolution.py, SchemaChange.filled).
DEFAULT = b"cdc.default"
# Field metadata naming the unit of a time-of-day carried as an integer (Delta has no TIME type):
# ms for Connect's and Debezium's Time (int32), us for MicroTime, ns for NanoTime (int64). A
# column whose precision changes (PostgreSQL TIME(3) → TIME(6) under adaptive precision) keeps
# its values right by it: the sink scales the coarser ones (apply/evolution.py, flatbatch.py).
TIME_UNIT = b"cdc.time.unit"
_TIME_UNITS = {
    "org.apache.kafka.connect.data.Time": b"ms",
    "io.debezium.time.Time": b"ms",
    "io.debezium.time.MicroTime": b"us",
    "io.debezium.time.NanoTime": b"ns",
}
_PER_SECOND = {b"ms": 1_000, b"us": 1_000_000, b"ns": 1_000_000_000}


def time_unit(field: pa.Field) -> bytes | None:
    """The unit of a time-of-day integer field (TIME_UNIT), or None for any other field."""
    return (field.metadata or {}).get(TIME_UNIT)


def time_factor(coarse: bytes, fine: bytes) -> int:
    """What a value in unit `coarse` is multiplied by to be in unit `fine` (1000 for ms → us)."""
    return _PER_SECOND[fine] // _PER_SECOND[coarse]


# What Debezium sends for PostgreSQL's 'infinity' / '-infinity' timestamps (PGStatement's
# DATE_POSITIVE_INFINITY / DATE_NEGATIVE_INFINITY), whatever the unit of the field.
POSITIVE_INFINITY = 9223372036825200000
NEGATIVE_INFINITY = -9223372036832400000


def _ident(v: Any) -> Any:
    return v


def _b64(v: Any) -> Any:
    return base64.b64decode(v) if isinstance(v, str) else v


def _json_text(v: Any) -> Any:
    return None if v is None else json.dumps(v, separators=(",", ":"))


def _days(v: Any) -> Any:
    """Days since the epoch, kept as the number: Arrow's date32 holds every int32 day (Python's
    date stops at years 1 and 9999, and PostgreSQL's ±infinity arrive as ±2^31)."""
    return None if v is None else int(v)


# Decimal arithmetic rounds to the context's 28 digits by default; PostgreSQL numerics and
# MySQL DECIMAL(65) are wider, and a rounded value would reach the lake without a word.
_EXACT = decimal.Context(prec=decimal.MAX_PREC)


def _unscaled(v: Any, scale: int) -> decimal.Decimal:
    """base64 (or raw bytes) of the unscaled big-endian two's complement → the exact Decimal."""
    raw = base64.b64decode(v) if isinstance(v, str) else bytes(v)
    return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale, _EXACT)


def _decimal(scale: int) -> Convert:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, str | bytes):
            d = _unscaled(v, scale)
        elif isinstance(v, float):  # decimal.format=NUMERIC read by a float parser: its shortest text
            d = decimal.Decimal(repr(v))
        else:  # decimal.format=NUMERIC: Decimal or int
            d = decimal.Decimal(v)
        # A negative scale (PostgreSQL 15's numeric(3,-2)) is stored with scale 0: same value.
        return d.quantize(decimal.Decimal(1), context=_EXACT) if scale < 0 else d

    return conv


def decimal_text(d: Any) -> Any:
    """Plain positional text of a Decimal (never '0E-30' or '1.2E+5')."""
    return None if d is None else format(d, "f")


def _variable_scale_decimal(v: Any) -> Any:
    """io.debezium.data.VariableScaleDecimal `{scale, value}` → its exact decimal text."""
    if v is None:
        return None
    if isinstance(v, str):  # a struct kept as JSON text by an upstream step
        v = json.loads(v)
    return decimal_text(_unscaled(v["value"], int(v["scale"])))


_ZONED = re.compile(
    r"([+-]?\d{4,})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
    r"(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)"
)


def _zoned_timestamp(v: Any) -> Any:
    """io.debezium.time.ZonedTimestamp text (ISO-8601 with an offset) → microseconds since the epoch (UTC).

    Any year is read (Java writes '+10000-…' and '-0001-…'); PostgreSQL's 'infinity' and
    '-infinity' become Debezium's infinity timestamps, which each target writes or refuses."""
    if v is None:
        return None
    text = v.strip()
    if text in ("infinity", "+infinity"):
        return POSITIVE_INFINITY
    if text == "-infinity":
        return NEGATIVE_INFINITY
    m = _ZONED.fullmatch(text)
    if m is None:
        raise ValueError(f"{v!r} is not an io.debezium.time.ZonedTimestamp (ISO-8601 date-time with an offset)")
    year, month, day, hour, minute = (int(m.group(i)) for i in range(1, 6))
    second = int(m.group(6) or 0)
    micros = int((m.group(7) or "").ljust(6, "0")[:6])
    offset = 0
    if m.group(8) != "Z":
        sign = -1 if m.group(8)[0] == "-" else 1
        digits = m.group(8)[1:].replace(":", "")
        hh, mm, ss = int(digits[:2]), int(digits[2:4] or 0), int(digits[4:6] or 0)
        offset = sign * (hh * 3600 + mm * 60 + ss)
    seconds = ((days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60 + second - offset
    return seconds * 1_000_000 + micros


def _float(v: Any) -> Any:
    """JsonConverter writes NaN and the infinities as the strings "NaN", "Infinity", "-Infinity"."""
    return float(v) if isinstance(v, str) else v


_PRIMITIVE: dict[str, pa.DataType] = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float": pa.float32(),
    "float32": pa.float32(),
    "double": pa.float64(),
    "float64": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
}
_TIMESTAMPS = {
    "org.apache.kafka.connect.data.Timestamp": "ms",
    "io.debezium.time.Timestamp": "ms",
    "io.debezium.time.MicroTimestamp": "us",
    "io.debezium.time.NanoTimestamp": "ns",
}


DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"


def _decimal_shape(params: dict[str, Any]) -> tuple[int, int, int]:
    """(precision, scale) of the stored column, and the scale of the unscaled value on the wire."""
    scale = int(params.get("scale", 0))
    precision = int(params.get("connect.decimal.precision", 38))
    if scale < 0:  # numeric(3,-2) holds up to 99900: 5 digits at scale 0
        return max(precision - scale, 1), 0, scale
    return max(precision, scale, 1), scale, scale


def arrow_type(schema: dict[str, Any]) -> tuple[pa.DataType, Convert]:
    """The Arrow type for one Connect field schema, and how to turn JSON values into it."""
    name = schema.get("name")
    kind = schema.get("type")
    params = schema.get("parameters") or {}
    if name == DECIMAL:
        precision, scale, wire_scale = _decimal_shape(params)
        conv = _decimal(wire_scale)
        if precision <= 38:
            return pa.decimal128(precision, scale), conv
        return pa.string(), lambda v: decimal_text(conv(v))  # exact text; PostgreSQL: see sql_type
    if name == VARIABLE_SCALE_DECIMAL:
        return pa.string(), _variable_scale_decimal
    if name == ZONED_TIMESTAMP and kind == "string":
        return pa.timestamp("us", tz="UTC"), _zoned_timestamp
    if name in _TIMESTAMPS:
        return pa.timestamp(_TIMESTAMPS[name]), _ident
    if name in ("org.apache.kafka.connect.data.Date", "io.debezium.time.Date"):
        return pa.date32(), _days
    if kind == "bytes":
        return pa.binary(), _b64
    if kind in ("float", "float32", "double", "float64"):
        return _PRIMITIVE[kind], _float
    if kind in _PRIMITIVE:
        return _PRIMITIVE[kind], _ident
    return pa.string(), _json_text  # struct, array, map: kept as JSON text


def sql_type(schema: dict[str, Any]) -> str | None:
    """The SQL column type of a field whose Arrow type is exact text standing in for a number."""
    name = schema.get("name")
    if name == VARIABLE_SCALE_DECIMAL:
        return "numeric"
    if name == DECIMAL:
        precision, scale, _ = _decimal_shape(schema.get("parameters") or {})
        if precision > 38:
            return f"numeric({precision},{scale})"
    return None


def field_metadata(schema: dict[str, Any]) -> dict[bytes, bytes] | None:
    """Arrow field metadata for one Connect field (SQL_TYPE, DEFAULT, TIME_UNIT), or None."""
    meta: dict[bytes, bytes] = {}
    sql = sql_type(schema)
    if sql:
        meta[SQL_TYPE] = sql.encode()
    default = default_text(schema)
    if default is not None:
        meta[DEFAULT] = default
    unit = _TIME_UNITS.get(schema.get("name") or "")
    if unit is not None:
        meta[TIME_UNIT] = unit
    return meta or None


# Temporal types whose default at the epoch (or midnight) is the stand-in Debezium's default
# converters put for a value the database computes (MySQL's CURRENT_TIMESTAMP on a NOT NULL
# column, PostgreSQL's now() and CURRENT_DATE), and the UUID type whose all-zero default stands
# for gen_random_uuid(): not a value the stored rows hold, so not a DEFAULT to fill them with.
_TEMPORAL = {
    "org.apache.kafka.connect.data.Date",
    "org.apache.kafka.connect.data.Time",
    "org.apache.kafka.connect.data.Timestamp",
    "io.debezium.time.Date",
    "io.debezium.time.Time",
    "io.debezium.time.MicroTime",
    "io.debezium.time.NanoTime",
    "io.debezium.time.Timestamp",
    "io.debezium.time.MicroTimestamp",
    "io.debezium.time.NanoTimestamp",
    ZONED_TIMESTAMP,
}
_ZERO_UUID = ("io.debezium.data.Uuid", "00000000-0000-0000-0000-000000000000")


def _stands_in(schema: dict[str, Any], value: Any) -> bool:
    """Whether a converted default is the placeholder of a value the database computes."""
    name = schema.get("name")
    if name in _TEMPORAL:
        return value == 0
    return (name, value) == _ZERO_UUID


def default_text(schema: dict[str, Any]) -> bytes | None:
    """The DEFAULT metadata of one Connect field: its `default` converted as the field's values are
    (the same Convert), as JSON text; None when it has none, when the value does not convert (the
    default is then left out, as the connectors leave out one that does not fit the column), or
    when it is the placeholder of a computed default (`_stands_in`: the epoch, a zero UUID)."""
    raw = schema.get("default")
    if raw is None:
        return None
    dtype, conv = arrow_type(schema)
    try:
        converted = conv(raw)
        value = pa.array([converted], dtype)
        if value.null_count or _stands_in(schema, converted):
            return None
        text = _default_json(value)
    except (ValueError, TypeError, KeyError, OverflowError):  # ArrowInvalid is a ValueError
        return None
    back = _default_array(text, dtype)
    return text if back is not None and _same(back, value) else None


def default_of(field: pa.Field) -> pa.Scalar | None:
    """The column DEFAULT the field's metadata carries, in the field's type (which may be wider than
    the one it was decoded in: the lakes' types, a widened column); None without one, or when it
    does not cast to that type."""
    text = (field.metadata or {}).get(DEFAULT)
    if text is None:
        return None
    values = _default_array(text, field.type)
    return None if values is None else values[0]


def with_default(field: pa.Field, value: pa.Scalar | None) -> pa.Field:
    """`field` carrying `value` as its DEFAULT metadata (`default_of` reads it back); unchanged
    for None."""
    if value is None:
        return field
    return field.with_metadata({**(field.metadata or {}), DEFAULT: _default_json(pa.repeat(value, 1))})


def _default_json(value: pa.Array) -> bytes:
    """JSON text of the single value of `value` (DEFAULT's format)."""
    t = value.type
    out: Any
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        out = base64.b64encode(value[0].as_py()).decode("ascii")
    elif (
        pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or (pa.types.is_floating(t) and math.isfinite(value[0].as_py()))
    ):
        out = value[0].as_py()
    else:  # decimal, date, timestamp (any year: Python's date stops at 1-9999), NaN, ±inf
        out = value.cast(pa.string())[0].as_py()
    return json.dumps(out, separators=(",", ":")).encode()


def _default_array(text: bytes, to: pa.DataType) -> pa.Array | None:
    """The DEFAULT text as a one-value array of type `to`, or None when it does not cast."""
    try:
        v = json.loads(text)
        if pa.types.is_binary(to) or pa.types.is_large_binary(to) or pa.types.is_fixed_size_binary(to):
            return pa.array([base64.b64decode(v)], pa.binary()).cast(to)
        if pa.types.is_decimal(to) and not isinstance(v, str):  # int64 → decimal(12,2) needs 21 digits
            v = str(v)
        return pa.array([v]).cast(to)
    except (ValueError, TypeError, OverflowError, pa.ArrowNotImplementedError):
        return None


def _same(a: pa.Array, b: pa.Array) -> bool:
    """Equal values (NaN equal to NaN)."""
    if a.equals(b):
        return True
    if pa.types.is_floating(a.type) and pa.types.is_floating(b.type):
        x, y = a[0].as_py(), b[0].as_py()
        return x is not None and y is not None and math.isnan(x) and math.isnan(y)
    return False


_INTS = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]


def common_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type that holds every value of both `a` and `b` exactly, or None.

    One batch can hold rows from both sides of an ALTER TABLE … MODIFY (the latest event of
    one key before it, of another key after it): int → bigint, float → double, a wider
    decimal, a finer timestamp. Their rows meet in one column of this type."""
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    if a in _INTS and b in _INTS:
        return max(a, b, key=_INTS.index)
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return pa.float64()
    if pa.types.is_floating(a) != pa.types.is_floating(b) and (a in _INTS[:2] or b in _INTS[:2]):
        return pa.float64()  # a small int next to a float: doubles hold every int16
    if pa.types.is_decimal(a) and pa.types.is_decimal(b):
        scale = max(a.scale, b.scale)
        precision = max(a.precision - a.scale, b.precision - b.scale) + scale
        return pa.decimal128(precision, scale) if precision <= 38 else None
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b) and a.tz == b.tz:
        units = ["s", "ms", "us", "ns"]
        return a if units.index(a.unit) >= units.index(b.unit) else b
    return None


def field_types(row_schema: dict[str, Any] | None) -> dict[str, tuple[pa.DataType, Convert]]:
    """Column name → (type, converter) for the `after`/`before` struct schema of an envelope."""
    if not row_schema:
        return {}
    return {f["field"]: arrow_type(f) for f in row_schema.get("fields", [])}


def envelope_row_schema(value_schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The row struct inside a Debezium envelope schema (the `after` field, else `before`)."""
    if not value_schema:
        return None
    fields = {f.get("field"): f for f in value_schema.get("fields", [])}
    return fields.get("after") or fields.get("before")

"""Debezium's PostgreSQL type mapping: a Connect schema and a text → value converter per column.

pgoutput sends text for every column; each converter turns that text into exactly the
value Debezium's PostgresValueConverter would emit, honouring `decimal.handling.mode`,
`time.precision.mode`, `binary.handling.mode`, `interval.handling.mode`,
`hstore.handling.mode`, `money.fraction.digits` and `include.unknown.datatypes`.

A type Debezium has no mapping for (circle, tsquery, pg_lsn, an extension's type, ...) is left out
unless `include.unknown.datatypes=true`; then it is the server's text as binary (binary.handling.mode),
geometric types written as pgjdbc writes them (`<(10.0,20.0),10.0>`).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc.api import DataException, Schema, SchemaBuilder, Struct
from cdc.api import Date as ConnectDate
from cdc.api import Decimal as ConnectDecimal
from cdc.api import Time as ConnectTime
from cdc.api import Timestamp as ConnectTimestamp
from cdc.api.data.calendar import civil_from_days
from cdc_debezium import logical_types
from cdc_postgres import text_values as tv
from cdc_postgres.geometric import GEOMETRIC, pgjdbc_text
from cdc_postgres.java_hashmap import iteration_order
from cdc_postgres.types import PgColumn, PgType

log = logging.getLogger(__name__)

# PGStatement.DATE_POSITIVE_INFINITY / DATE_NEGATIVE_INFINITY, which Debezium emits for
# ±infinity timestamps (documented in "TIMESTAMP type").
POSITIVE_INFINITY_TIMESTAMP = 9223372036825200000
NEGATIVE_INFINITY_TIMESTAMP = -9223372036832400000

Converter = Callable[[str], Any]


# What Python's datetime holds (years 1 to 9999), in days and milliseconds since the epoch.
_MIN_DAYS, _MAX_DAYS = -719_162, 2_932_896
_MIN_MILLIS, _MAX_MILLIS = _MIN_DAYS * 86_400_000, (_MAX_DAYS + 1) * 86_400_000 - 1
_SPECIAL_DECIMALS = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}
# quantize rounds to the context's 28 digits by default; numeric holds up to 131072 digits.
_EXACT = decimal.Context(prec=decimal.MAX_PREC)


@dataclass(frozen=True)
class ConverterSettings:
    decimal_handling_mode: str = "precise"  # precise | double | string
    time_precision_mode: str = "adaptive"  # adaptive | adaptive_time_microseconds | connect
    binary_handling_mode: str = "bytes"  # bytes | base64 | base64-url-safe | hex
    interval_handling_mode: str = "numeric"  # numeric | string
    hstore_handling_mode: str = "json"  # json | map
    money_fraction_digits: int = 2
    include_unknown_datatypes: bool = False


# Element types whose arrays Debezium's PostgresValueConverter.schemaBuilder lists one by one, each with an
# optional item schema (INT4_ARRAY: array(OPTIONAL_INT32_SCHEMA), TEXT_ARRAY: array(OPTIONAL_STRING_SCHEMA), ...).
# Any other array (of an enum, tsvector, isbn, or an unknown type under include.unknown.datatypes) takes its
# generic branch, SchemaBuilder.array(<the element's own builder>), whose items are required.
OPTIONAL_ITEM_ELEMENTS = frozenset(
    {
        "int2", "int4", "int8", "oid", "char", "varchar", "text", "bpchar", "inet", "cidr", "macaddr",
        "macaddr8", "tsrange", "tstzrange", "daterange", "int4range", "numrange", "int8range", "numeric",
        "float4", "float8", "bool", "date", "uuid", "jsonb", "json", "time", "timetz", "timestamp",
        "timestamptz", "bytea", "geometry", "hstore", "geography", "citext", "ltree",
    }
)  # fmt: skip


def array_items_optional(element: PgType) -> bool:
    """Whether Debezium's schema for an array of `element` has optional items (see OPTIONAL_ITEM_ELEMENTS)."""
    return element.kind in ("b", "r") and element.name in OPTIONAL_ITEM_ELEMENTS  # b base, r range


class UnsupportedTypeError(Exception):
    """A column type Debezium does not capture by default (`include.unknown.datatypes`)."""


def _named(builder: SchemaBuilder, name: str) -> SchemaBuilder:
    return builder.name(name).version(1)


def _variable_scale_decimal_schema() -> SchemaBuilder:
    return (
        SchemaBuilder.struct()
        .name(logical_types.VARIABLE_SCALE_DECIMAL)
        .version(1)
        .doc("Variable scaled decimal")
        .field("scale", Schema.INT32_SCHEMA)
        .field("value", Schema.BYTES_SCHEMA)
    )


def _point_schema() -> SchemaBuilder:
    return (
        SchemaBuilder.struct()
        .name(logical_types.POINT)
        .version(1)
        .doc("Geometry (POINT)")
        .field("x", Schema.FLOAT64_SCHEMA)
        .field("y", Schema.FLOAT64_SCHEMA)
        .field("wkb", Schema.OPTIONAL_BYTES_SCHEMA)
        .field("srid", Schema.OPTIONAL_INT32_SCHEMA)
    )


def _iso_time(micros: int, width: int = 0) -> str:
    """`HH:mm:ss[.f]`: with width 0 the fraction is trimmed as Java's ISO_LOCAL_TIME prints it;
    otherwise it has exactly `width` digits, zeros included (Debezium's ZonedTimestamp)."""
    seconds, us = divmod(micros, 1_000_000)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    text = f"{h % 24:02d}:{m:02d}:{s:02d}"
    if width:
        text += "." + f"{us:06d}"[:width]
    elif us:
        text += "." + f"{us:06d}".rstrip("0")
    return text


def _zoned_timestamp(micros_utc: int, width: int = 0) -> str:
    days, rest = divmod(micros_utc, tv.MICROS_PER_DAY)
    if -719_162 <= days <= 2_932_896:  # years 1..9999: what datetime can hold
        date = datetime.date.fromordinal(719_163 + days).isoformat()
    else:
        # Java's ISO_OFFSET_DATE_TIME (Debezium's format): years past 9999 get '+', BC years are
        # astronomical (1 BC = 0000, 2 BC = -0001).
        y, m, d = civil_from_days(days)
        year = f"+{y}" if y > 9999 else f"-{-y:04d}" if y < 0 else f"{y:04d}"
        date = f"{year}-{m:02d}-{d:02d}"
    return f"{date}T{_iso_time(rest, width)}Z"


def _bits(text: str) -> bytes:
    """Debezium's Bits value: little-endian bytes up to the highest bit set (`00` is no byte at all).

    As its PostgresValueConverter, the byte count follows the content (BitSet.length()), not the
    column's declared length: B'101' in a BIT VARYING(33) is one byte.
    """
    value = int(text, 2) if text else 0
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


def _hstore_map(text: str) -> dict[str, str | None]:
    parsed = tv.parse_hstore(text)
    return {k: parsed[k] for k in iteration_order(parsed)}


def _bit_flag(text: str) -> bool:
    """BIT(1) and (Debezium 3.6) BIT VARYING(1): a boolean; an empty BIT VARYING(1) is false."""
    return text == "1"


class PostgresValueConverters:
    def __init__(self, settings: ConverterSettings | None = None) -> None:
        self.settings = settings or ConverterSettings()
        self._warned: set[str] = set()

    # -- schemas -----------------------------------------------------------------------------
    def schema_builder(self, column: PgColumn) -> SchemaBuilder:
        b = self._builder(column, column.type)
        return b.optional() if column.optional else b

    def _builder(self, column: PgColumn, t: PgType) -> SchemaBuilder:
        if t.category == "A" and t.element_oid:
            raise UnsupportedTypeError("array types are resolved by the caller with the element type")
        known = self._known_builder(column, t)
        if known is not None:
            return known
        if self.settings.include_unknown_datatypes:
            return SchemaBuilder.bytes() if self.settings.binary_handling_mode == "bytes" else SchemaBuilder.string()
        raise UnsupportedTypeError(
            f"column {column.name!r} has type {t.name!r}, which is not captured; Debezium skips such columns "
            "unless include.unknown.datatypes=true"
        )

    def is_known(self, column: PgColumn, t: PgType) -> bool:
        """Debezium maps the type (it is captured whatever include.unknown.datatypes says)."""
        return self._known_builder(column, t) is not None

    def _known_builder(self, column: PgColumn, t: PgType) -> SchemaBuilder | None:
        s = self.settings
        name = t.name
        if t.kind == "e":
            return _named(SchemaBuilder.string(), logical_types.ENUM).parameter("allowed", ",".join(t.enum_labels))
        match name:
            case "bool":
                return SchemaBuilder.bool()
            case "bit" | "varbit":
                # Debezium 3.6: BIT VARYING(1) is a boolean like BIT(1) (3.5 emitted Bits)
                return SchemaBuilder.bool() if column.bit_length == 1 else self._bits_schema(column)
            case "int2":
                return SchemaBuilder.int16()
            case "int4":
                return SchemaBuilder.int32()
            case "int8" | "oid":
                return SchemaBuilder.int64()
            case "float4":
                return SchemaBuilder.float32()
            case "float8":
                return SchemaBuilder.float64()
            case "numeric":
                return self._decimal_schema(column.numeric_precision_scale)
            case "money":
                return self._decimal_schema((0, s.money_fraction_digits), precision=False)
            case "bpchar" | "varchar" | "text" | "name" | "char" | "citext" | "isbn":
                return SchemaBuilder.string()
            case "inet" | "cidr" | "macaddr" | "macaddr8":
                return SchemaBuilder.string()
            case "int4range" | "int8range" | "numrange" | "tsrange" | "tstzrange" | "daterange":
                return SchemaBuilder.string()
            case "bytea":
                return SchemaBuilder.bytes() if s.binary_handling_mode == "bytes" else SchemaBuilder.string()
            case "json" | "jsonb":
                return _named(SchemaBuilder.string(), logical_types.JSON)
            case "xml":
                return _named(SchemaBuilder.string(), logical_types.XML)
            case "uuid":
                return _named(SchemaBuilder.string(), logical_types.UUID)
            case "ltree":
                return _named(SchemaBuilder.string(), logical_types.LTREE)
            case "tsvector":
                return _named(SchemaBuilder.string(), logical_types.TSVECTOR)  # Debezium's spelling
            case "point":
                return _point_schema()
            case "hstore":
                if s.hstore_handling_mode == "map":
                    return SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA)
                return _named(SchemaBuilder.string(), logical_types.JSON)
            case "date":
                if s.time_precision_mode == "connect":
                    return ConnectDate.builder()
                return _named(SchemaBuilder.int32(), logical_types.DATE)
            case "time":
                if s.time_precision_mode == "connect":
                    return ConnectTime.builder()
                if s.time_precision_mode == "adaptive" and column.fractional_precision <= 3:
                    return _named(SchemaBuilder.int32(), logical_types.TIME)
                return _named(SchemaBuilder.int64(), logical_types.MICRO_TIME)
            case "timestamp":
                if s.time_precision_mode == "connect":
                    return ConnectTimestamp.builder()
                if column.fractional_precision <= 3:
                    return _named(SchemaBuilder.int64(), logical_types.TIMESTAMP)
                return _named(SchemaBuilder.int64(), logical_types.MICRO_TIMESTAMP)
            case "timestamptz":
                return _named(SchemaBuilder.string(), logical_types.ZONED_TIMESTAMP)
            case "timetz":
                return _named(SchemaBuilder.string(), logical_types.ZONED_TIME)
            case "interval":
                if s.interval_handling_mode == "string":
                    return _named(SchemaBuilder.string(), logical_types.INTERVAL)
                return _named(SchemaBuilder.int64(), logical_types.MICRO_DURATION)
        return None

    def _bits_schema(self, column: PgColumn) -> SchemaBuilder:
        length = column.bit_length or 2**31 - 1
        return _named(SchemaBuilder.bytes(), logical_types.BITS).parameter("length", str(length))

    def _decimal_schema(self, ps: tuple[int, int] | None, precision: bool = True) -> SchemaBuilder:
        mode = self.settings.decimal_handling_mode
        if mode == "double":
            return SchemaBuilder.float64()
        if mode == "string":
            return SchemaBuilder.string()
        if ps is None:
            return _variable_scale_decimal_schema()
        b = ConnectDecimal.builder(ps[1])
        if precision:
            b.parameter("connect.decimal.precision", str(ps[0]))
        return b

    # -- values ------------------------------------------------------------------------------
    def converter(self, column: PgColumn, element: PgType | None = None) -> Converter:
        t = column.type
        if t.category == "A" and element is not None:
            inner = self.converter(PgColumn(column.name, element, column.type_modifier), None)

            def array(text: str) -> list[Any]:
                items = tv.parse_array(text, inner)
                if any(isinstance(x, list) for x in items):
                    # PostgreSQL's array types have no fixed dimension; the event schema has one.
                    raise DataException(
                        f"column {column.name} holds a multi-dimensional array ({text[:60]}), which the "
                        "one-dimensional array schema of the change event cannot carry; exclude the column with "
                        "column.exclude.list, or store one dimension per column"
                    )
                return items

            return array
        return self._scalar(column, t)

    def _scalar(self, column: PgColumn, t: PgType) -> Converter:
        s = self.settings
        if t.kind == "e":
            return str
        if not self.is_known(column, t):
            return self._unknown(t)
        match t.name:
            case "bool":
                return tv.parse_bool
            case "bit" | "varbit":
                return _bit_flag if column.bit_length == 1 else _bits
            case "int2" | "int4" | "int8" | "oid":
                return int
            case "float4" | "float8":
                return tv.parse_float
            case "numeric":
                return self._decimal(column, column.numeric_precision_scale, tv.parse_numeric)
            case "money":
                digits = s.money_fraction_digits
                return self._decimal(column, (0, digits), lambda x: tv.parse_money(x, digits))
            case "bytea":
                return self._binary
            case "hstore":
                # Debezium (via pgjdbc) holds an hstore in a Java HashMap: its keys come in that map's order.
                if s.hstore_handling_mode == "map":
                    return _hstore_map
                return lambda x: json.dumps(_hstore_map(x), separators=(",", ":"), ensure_ascii=False)
            case "point":
                point_schema = self.schema_builder(column).build()
                return lambda x: self._point(x, point_schema)
            case "date":
                return self._date
            case "time":
                return self._time(column)
            case "timestamp":
                return self._timestamp(column)
            case "timestamptz":
                # Debezium writes the fraction with the column's precision (6 unless declared), zeros included.
                width = column.fractional_precision
                return lambda x: self._timestamptz(x, width)
            case "timetz":
                return self._timetz
            case "interval":
                if s.interval_handling_mode == "string":
                    return lambda x: tv.parse_interval(x).iso8601()
                return lambda x: tv.parse_interval(x).approximate_micros()
        return str  # text, json(b) as written, xml, uuid, ltree, tsvector, network, ranges

    def _decimal(
        self, column: PgColumn, ps: tuple[int, int] | None, parse: Callable[[str], decimal.Decimal]
    ) -> Converter:
        mode = self.settings.decimal_handling_mode
        if mode == "double":
            return lambda x: float(parse(x))
        if mode == "string":
            # Debezium's SpecialValueDecimal names: NAN, POSITIVE_INFINITY, NEGATIVE_INFINITY (PostgreSQL 14+)
            return lambda x: _SPECIAL_DECIMALS.get(x) or str(parse(x))

        if ps is None:
            vsd_schema = self.schema_builder(column).build()

            def variable(x: str) -> Any:
                d = parse(x)
                if not d.is_finite():
                    return self._nan(column)
                exp = d.as_tuple().exponent
                scale = -exp if isinstance(exp, int) and exp < 0 else 0
                d = d.quantize(decimal.Decimal(1).scaleb(-scale), context=_EXACT) if scale else d.to_integral_value()
                return (
                    Struct(vsd_schema)
                    .put("scale", scale)
                    .put("value", ConnectDecimal.from_logical(ConnectDecimal.schema(scale), d))
                )

            return variable
        quantum = decimal.Decimal(1).scaleb(-ps[1])

        def fixed(x: str) -> Any:
            d = parse(x)
            if not d.is_finite():
                return self._nan(column)
            return d.quantize(quantum, context=_EXACT)

        return fixed

    def _nan(self, column: PgColumn) -> None:
        # Connect's Decimal cannot hold NaN/Infinity; Debezium emits null in precise mode.
        if column.name not in self._warned:
            self._warned.add(column.name)
            log.warning(
                "column %s holds NaN/Infinity, which decimal.handling.mode=precise cannot represent; "
                "the value is emitted as null. Use decimal.handling.mode=double or string to keep it",
                column.name,
            )
        return None

    def _unknown(self, t: PgType) -> Converter:
        """include.unknown.datatypes=true: the value's text as binary, as Debezium's AbstractColumnValue.asDefault."""
        encode = self._encode_binary
        if t.name in GEOMETRIC:
            return lambda x: encode(pgjdbc_text(x).encode())
        return lambda x: encode(x.encode())

    def _binary(self, text: str) -> Any:
        return self._encode_binary(tv.parse_bytea(text))

    def _encode_binary(self, data: bytes) -> Any:
        match self.settings.binary_handling_mode:
            case "base64":
                return base64.b64encode(data).decode()
            case "base64-url-safe":
                return base64.urlsafe_b64encode(data).decode()
            case "hex":
                return data.hex()
        return data

    @staticmethod
    def _point(text: str, schema: Schema) -> Struct:
        # Structs carry the field's own schema (optional or not): JsonConverter, like
        # Kafka's, rejects a Struct whose schema differs from the field's.
        x, y = tv.parse_point(text)
        wkb = struct.pack("<BIdd", 1, 1, x, y)  # little-endian WKB Point
        return Struct(schema).put("x", x).put("y", y).put("wkb", wkb)

    def _date(self, text: str) -> Any:
        days = tv.parse_date(text)
        if isinstance(days, str):
            # ±infinity has no day count; Debezium (via pgjdbc) maps it to the extreme timestamps.
            days = 2**31 - 1 if days == tv.POSITIVE_INFINITY else -(2**31)
        if self.settings.time_precision_mode == "connect":
            return ConnectDate.to_logical(ConnectDate.SCHEMA, self._in_python_range(days, _MIN_DAYS, _MAX_DAYS, text))
        return days

    def _in_python_range(self, value: int, low: int, high: int, text: str) -> int:
        """time.precision.mode=connect: Connect's Date and Timestamp are Python dates here, years 1 to 9999.

        Java's hold PostgreSQL's whole range (and pgjdbc's infinity); a value outside Python's is clamped to
        its nearest end, with one WARN per kind of value, rather than failing the task.
        """
        if low <= value <= high:
            return value
        key = "connect-range"
        if key not in self._warned:
            self._warned.add(key)
            log.warning(
                "time.precision.mode=connect: %s is outside the years 1 to 9999 that Connect's Date and Timestamp "
                "hold in Python, so it is emitted as the nearest of those (Debezium, in Java, keeps it); use "
                "time.precision.mode=adaptive to keep every value",
                text,
            )
        return min(max(value, low), high)

    def _time(self, column: PgColumn) -> Converter:
        mode = self.settings.time_precision_mode
        if mode == "connect":
            return lambda x: ConnectTime.to_logical(ConnectTime.SCHEMA, min(tv.parse_time(x) // 1000, 86_399_999))
        if mode == "adaptive" and column.fractional_precision <= 3:
            return lambda x: tv.parse_time(x) // 1000
        return tv.parse_time

    def _timestamp(self, column: PgColumn) -> Converter:
        mode = self.settings.time_precision_mode
        millis = mode == "connect" or column.fractional_precision <= 3

        def convert(x: str) -> Any:
            v = tv.parse_timestamp(x)
            if isinstance(v, str):
                v = POSITIVE_INFINITY_TIMESTAMP if v == tv.POSITIVE_INFINITY else NEGATIVE_INFINITY_TIMESTAMP
                if mode != "connect":
                    return v
                ms = self._in_python_range(v, _MIN_MILLIS, _MAX_MILLIS, x)
                return ConnectTimestamp.to_logical(ConnectTimestamp.SCHEMA, ms)
            if mode == "connect":
                ms = self._in_python_range(v // 1000, _MIN_MILLIS, _MAX_MILLIS, x)
                return ConnectTimestamp.to_logical(ConnectTimestamp.SCHEMA, ms)
            return v // 1000 if millis else v

        return convert

    @staticmethod
    def _timestamptz(text: str, width: int = 0) -> str:
        """ISO text in UTC; the fraction has exactly `width` digits (0: trimmed, none when zero).

        The connector's sessions run with TimeZone=UTC, so pgoutput writes `YYYY-MM-DD HH:MM:SS[.f]+00`
        (fraction zeros trimmed), already Debezium's text but for the 'T', the 'Z' and the padding.
        Anything else takes the full parse.
        """
        n = len(text)
        if (
            22 <= n <= 29
            and text[10] == " "
            and text[4] == "-"
            and text[13] == ":"
            and text[16] == ":"
            and text[-3:] == "+00"
            and (n == 22 or (text[19] == "." and text[-4] != "0"))  # PostgreSQL trims fraction zeros
        ):
            if not width:
                return f"{text[:10]}T{text[11:-3]}Z"
            fraction = text[20:-3][:width].ljust(width, "0")
            return f"{text[:10]}T{text[11:19]}.{fraction}Z"
        v = tv.parse_timestamp(text)
        return v if isinstance(v, str) else _zoned_timestamp(v, width)

    @staticmethod
    def _timetz(text: str) -> str:
        micros, offset = tv.parse_timetz(text)
        return _iso_time((micros - offset * 1_000_000) % tv.MICROS_PER_DAY) + "Z"

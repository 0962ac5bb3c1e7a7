"""MySqlValueConverters: MySQL column → Connect schema and value, per Debezium's MySQL type mapping.

Values arrive in two shapes, both handled here: from python-mysql-replication (streaming:
BIT as a '0101' string, SET as a Python set, JSON parsed) and from PyMySQL (snapshot: BIT as
big-endian bytes, SET as 'a,b', zero dates as strings).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from collections.abc import Callable
from typing import Any

from cdc.api import DataException, Schema, SchemaBuilder, Struct
from cdc.api.data.logical import Date as ConnectDate
from cdc.api.data.logical import Time as ConnectTime
from cdc.api.data.logical import Timestamp as ConnectTimestamp
from cdc_debezium import logical_types as lt
from cdc_debezium.handling_modes import (
    BigIntUnsignedHandlingMode,
    BinaryHandlingMode,
    DecimalHandlingMode,
    TimePrecisionMode,
)
from cdc_mysql.table import ColumnDef

Converter = Callable[[Any], Any]

_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_DEC_CTX = decimal.Context(prec=100)
_GEOMETRY_SCHEMA_OPT = lt.geometry().optional().build()
_GEOMETRY_SCHEMA_REQ = lt.geometry().build()

INTEGER_TYPES = {"tinyint", "smallint", "mediumint", "int", "bigint"}
TEXT_TYPES = {"char", "varchar", "text"}
BINARY_TYPES = {"binary", "varbinary", "blob"}
GEOMETRY_TYPES = {
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
    "geomcollection",
}


def _is_zero(value: Any) -> bool:
    """PyMySQL hands back invalid/zero dates as their text, e.g. '0000-00-00'."""
    return isinstance(value, str | bytes)


def _micros(delta: datetime.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _iso_zoned(value: datetime.datetime, fsp: int) -> str:
    base = value.strftime("%Y-%m-%dT%H:%M:%S")
    if fsp > 0:
        base += "." + f"{value.microsecond:06d}"[:fsp]
    return base + "Z"


class MySqlValueConverters:
    """Builds the Connect schema and the value converter of each column once per table schema."""

    def __init__(
        self,
        decimal_mode: DecimalHandlingMode = DecimalHandlingMode.PRECISE,
        time_mode: TimePrecisionMode = TimePrecisionMode.ADAPTIVE_TIME_MICROSECONDS,
        bigint_mode: BigIntUnsignedHandlingMode = BigIntUnsignedHandlingMode.LONG,
        binary_mode: BinaryHandlingMode = BinaryHandlingMode.BYTES,
    ) -> None:
        self.decimal_mode = decimal_mode
        self.time_mode = time_mode
        self.bigint_mode = bigint_mode
        self.binary_mode = binary_mode

    # -- schema + converter -----------------------------------------------------------------
    def column(self, col: ColumnDef, where: str) -> tuple[Schema, Converter]:
        """(field schema, converter) for `col`; `where` names it (`db.table.column`) in errors."""
        builder, convert = self._for(col, where)
        if col.nullable:
            builder.optional()
        schema = builder.build()
        required = not col.nullable
        zero = self._zero_value(schema) if required else None

        if zero is None:
            return schema, convert

        def with_zero(value: Any) -> Any:
            out = convert(value)
            return zero if out is None else out

        return schema, with_zero

    def _zero_value(self, schema: Schema) -> Any:
        """What a NOT NULL column holding a zero date/empty set becomes (Debezium: the epoch, '')."""
        name = schema.name or ""
        if name in (lt.DATE, lt.TIMESTAMP, lt.MICRO_TIMESTAMP, lt.YEAR) or name == lt.MICRO_TIME:
            return 0
        if name == lt.ZONED_TIMESTAMP:
            return "1970-01-01T00:00:00Z"
        if name == lt.ENUM_SET:
            return ""
        if name == ConnectDate.LOGICAL_NAME:
            return _EPOCH_DATE
        if name == ConnectTimestamp.LOGICAL_NAME:
            return _EPOCH.replace(tzinfo=datetime.UTC)
        return None

    def _for(self, col: ColumnDef, where: str) -> tuple[SchemaBuilder, Converter]:
        t = col.type
        if t == "bool":
            return SchemaBuilder.bool(), lambda v: None if v is None else bool(v)
        if t in INTEGER_TYPES:
            return self._integer(col)
        if t == "decimal":
            return self._decimal(col, where)
        if t == "float":
            return SchemaBuilder.float32(), lambda v: None if v is None else float(v)
        if t == "double":
            return SchemaBuilder.float64(), lambda v: None if v is None else float(v)
        if t == "bit":
            return self._bit(col)
        if t in TEXT_TYPES:
            return SchemaBuilder.string(), self._text(where)
        if t in BINARY_TYPES:
            return self._binary(col)
        if t == "enum":
            return lt.enum(list(col.values)), self._text(where)
        if t == "set":
            return lt.enum_set(list(col.values)), self._set(col)
        if t == "json":
            return lt.json(), self._json(where)
        if t == "date":
            return self._date()
        if t == "time":
            return self._time(col, where)
        if t == "datetime":
            return self._datetime(col)
        if t == "timestamp":
            return self._timestamp(col)
        if t == "year":
            return lt.year(), lambda v: None if v is None or _is_zero(v) else int(v)
        if t in GEOMETRY_TYPES:
            return lt.geometry(), self._geometry(col)
        raise DataException(
            f"Column {where} has MySQL type {t!r}, which this connector cannot map; exclude it with column.exclude.list"
        )

    def _integer(self, col: ColumnDef) -> tuple[SchemaBuilder, Converter]:
        t, unsigned = col.type, col.unsigned
        if t == "tinyint" or (t == "smallint" and not unsigned):
            return SchemaBuilder.int16(), _identity
        if t == "mediumint" or (t == "smallint" and unsigned) or (t == "int" and not unsigned):
            return SchemaBuilder.int32(), _identity
        if t == "int" or not unsigned:
            return SchemaBuilder.int64(), _identity
        # BIGINT UNSIGNED
        if self.bigint_mode is BigIntUnsignedHandlingMode.PRECISE:
            return lt.decimal(20, 0), lambda v: None if v is None else decimal.Decimal(int(v))

        def as_long(v: Any) -> Any:
            # Debezium's `long` mode: values above 2^63-1 wrap, exactly like Java's long.
            if v is None:
                return None
            v = int(v)
            return v - (1 << 64) if v >= (1 << 63) else v

        return SchemaBuilder.int64(), as_long

    def _decimal(self, col: ColumnDef, where: str) -> tuple[SchemaBuilder, Converter]:
        scale = col.scale or 0
        if self.decimal_mode is DecimalHandlingMode.DOUBLE:
            return SchemaBuilder.float64(), lambda v: None if v is None else float(v)
        if self.decimal_mode is DecimalHandlingMode.STRING:
            return SchemaBuilder.string(), lambda v: None if v is None else format(decimal.Decimal(v), "f")
        quantum = decimal.Decimal(1).scaleb(-scale)

        def precise(v: Any) -> Any:
            if v is None:
                return None
            d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
            try:
                return d.quantize(quantum, context=_DEC_CTX)
            except decimal.InvalidOperation as e:
                raise DataException(f"Column {where}: {v!r} does not fit DECIMAL scale {scale}") from e

        return lt.decimal(col.length, scale), precise

    def _bit(self, col: ColumnDef) -> tuple[SchemaBuilder, Converter]:
        bits = col.length or 1
        size = (bits + 7) // 8

        def as_int(v: Any) -> int:
            if isinstance(v, str):
                return int(v, 2) if v else 0
            if isinstance(v, bytes | bytearray):
                return int.from_bytes(v, "big")
            return int(v)

        if bits == 1:
            return SchemaBuilder.bool(), lambda v: None if v is None else as_int(v) != 0
        # io.debezium.data.Bits: the bits as little-endian bytes.
        return lt.bits(bits), lambda v: None if v is None else as_int(v).to_bytes(size, "little")

    def _text(self, where: str) -> Converter:
        def text(v: Any) -> Any:
            if v is None or isinstance(v, str):
                return v
            if isinstance(v, bytes | bytearray):
                try:
                    return bytes(v).decode("utf-8")
                except UnicodeDecodeError as e:
                    raise DataException(
                        f"Column {where}: bytes {bytes(v)[:20]!r} are not valid in the column's character set "
                        "(decoded as UTF-8); check the column charset or exclude the column"
                    ) from e
            return str(v)

        return text

    def _binary(self, col: ColumnDef) -> tuple[SchemaBuilder, Converter]:
        pad = col.length if col.type == "binary" and col.length else 0

        def raw(v: Any) -> bytes:
            b = v.encode("utf-8", "surrogateescape") if isinstance(v, str) else bytes(v)
            # The binlog drops BINARY(n)'s trailing zero padding; a SELECT keeps it.
            return b.ljust(pad, b"\x00") if pad else b

        mode = self.binary_mode
        if mode is BinaryHandlingMode.BYTES:
            return SchemaBuilder.bytes(), lambda v: None if v is None else raw(v)
        if mode is BinaryHandlingMode.BASE64:
            return SchemaBuilder.string(), lambda v: None if v is None else base64.b64encode(raw(v)).decode()
        if mode is BinaryHandlingMode.BASE64_URL_SAFE:
            return SchemaBuilder.string(), lambda v: None if v is None else base64.urlsafe_b64encode(raw(v)).decode()
        return SchemaBuilder.string(), lambda v: None if v is None else raw(v).hex()

    def _set(self, col: ColumnDef) -> Converter:
        order = {name: i for i, name in enumerate(col.values)}

        def as_set(v: Any) -> Any:
            if v is None:
                return None
            if isinstance(v, set | frozenset | list | tuple):
                return ",".join(sorted(v, key=lambda m: order.get(m, len(order))))
            return str(v)

        return as_set

    def _json(self, where: str) -> Converter:
        def to_text(v: Any) -> Any:
            if v is None or isinstance(v, str):
                return v
            if isinstance(v, bytes | bytearray):
                return bytes(v).decode("utf-8")
            return json.dumps(_plain_json(v), separators=(",", ":"), ensure_ascii=False)

        return to_text

    def _date(self) -> tuple[SchemaBuilder, Converter]:
        def days(v: Any) -> Any:
            if v is None or _is_zero(v):
                return None
            if isinstance(v, datetime.datetime):
                v = v.date()
            return (v - _EPOCH_DATE).days

        if self.time_mode is TimePrecisionMode.CONNECT:
            return ConnectDate.builder(), lambda v: None if v is None or _is_zero(v) else _as_date(v)
        if self.time_mode is TimePrecisionMode.ISOSTRING:
            return lt.iso(lt.ISO_DATE), lambda v: None if v is None or _is_zero(v) else _as_date(v).isoformat()
        return lt.date(), days

    def _time(self, col: ColumnDef, where: str) -> tuple[SchemaBuilder, Converter]:
        def delta(v: Any) -> datetime.timedelta:
            if isinstance(v, datetime.time):
                return datetime.timedelta(hours=v.hour, minutes=v.minute, seconds=v.second, microseconds=v.microsecond)
            return v

        if self.time_mode is TimePrecisionMode.CONNECT:

            def connect_time(v: Any) -> Any:
                if v is None:
                    return None
                d = delta(v)
                if d < datetime.timedelta(0) or d >= datetime.timedelta(days=1):
                    raise DataException(
                        f"Column {where}: TIME value {d} is outside 00:00:00-23:59:59, which "
                        "time.precision.mode=connect cannot represent; use adaptive_time_microseconds"
                    )
                return (datetime.datetime.min + d).time()

            return ConnectTime.builder(), connect_time
        if self.time_mode is TimePrecisionMode.ISOSTRING:
            return lt.iso(lt.ISO_TIME), lambda v: None if v is None else _iso_time(delta(v), col.fsp)
        return lt.micro_time(), lambda v: None if v is None else _micros(delta(v))

    def _datetime(self, col: ColumnDef) -> tuple[SchemaBuilder, Converter]:
        if self.time_mode is TimePrecisionMode.CONNECT:
            return ConnectTimestamp.builder(), lambda v: None if v is None or _is_zero(v) else _as_utc(v)
        if self.time_mode is TimePrecisionMode.ISOSTRING:
            return lt.iso(lt.ISO_TIMESTAMP), lambda v: None if v is None or _is_zero(v) else _as_utc(v).isoformat()
        if col.fsp <= 3:
            return lt.timestamp(), lambda v: None if v is None or _is_zero(v) else _micros(v - _EPOCH) // 1000
        return lt.micro_timestamp(), lambda v: None if v is None or _is_zero(v) else _micros(v - _EPOCH)

    def _timestamp(self, col: ColumnDef) -> tuple[SchemaBuilder, Converter]:
        fsp = col.fsp

        def zoned(v: Any) -> Any:
            if v is None:
                return None
            if _is_zero(v):
                return "1970-01-01T00:00:00Z"
            if v.tzinfo is not None:
                v = v.astimezone(datetime.UTC).replace(tzinfo=None)
            return _iso_zoned(v, fsp)

        return lt.zoned_timestamp(), zoned

    def _geometry(self, col: ColumnDef) -> Converter:
        schema = _GEOMETRY_SCHEMA_OPT if col.nullable else _GEOMETRY_SCHEMA_REQ

        def geometry(v: Any) -> Any:
            if v is None:
                return None
            raw = bytes(v)
            # MySQL's internal format: a 4-byte little-endian SRID, then the WKB.
            srid = int.from_bytes(raw[:4], "little")
            s = Struct(schema)
            s.put("wkb", raw[4:])
            s.put("srid", srid if srid else None)
            return s

        return geometry


def _identity(v: Any) -> Any:
    return v


IDENTITY: Converter = _identity
"""The converter of columns whose decoded value is already the Connect value (row builders skip the call)."""


def _as_date(v: Any) -> datetime.date:
    return v.date() if isinstance(v, datetime.datetime) else v


def _as_utc(v: datetime.datetime) -> datetime.datetime:
    return v.replace(tzinfo=datetime.UTC) if v.tzinfo is None else v


def _iso_time(d: datetime.timedelta, fsp: int) -> str:
    sign = "-" if d < datetime.timedelta(0) else ""
    us = abs(_micros(d))
    s, us = divmod(us, 1_000_000)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    out = f"{sign}{h:02d}:{m:02d}:{s:02d}"
    return out + ("." + f"{us:06d}"[:fsp] if fsp else "")


def _plain_json(v: Any) -> Any:
    """python-mysql-replication decodes MySQL binary JSON with bytes keys/strings; make it text."""
    if isinstance(v, dict):
        return {(k.decode() if isinstance(k, bytes) else k): _plain_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain_json(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("utf-8")
    return v

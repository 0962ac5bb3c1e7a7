"""MySqlValueConverters: MySQL column → Connect schema and value, per Debezium's MySQL type mapping.

Values arrive in two shapes, both handled here: from python-mysql-replication (streaming:
BIT as a '0101' string, SET as a Python set, JSON parsed) and from PyMySQL (snapshot: BIT as
big-endian bytes, SET as 'a,b', zero dates as strings).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import json
import logging
import struct
import uuid
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
from cdc_mysql.declared_types import JDBC_REAL
from cdc_mysql.defaults import raw_default
from cdc_mysql.table import ColumnDef, ColumnMeta, TableDef, TableMeta

log = logging.getLogger(__name__)

Converter = Callable[[Any], Any]
CONVERTING_FAILURE_MODES = ("fail", "warn", "skip")

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
# MariaDB's fixed-size binary data types (10.5+ INET6, 10.7+ UUID, 10.10+ INET4) and their size in bytes.
# A SELECT returns their text; the binlog's table map calls them BINARY(n) (charset binary) and a row
# event holds their n bytes, most significant first.
MARIADB_BINARY_TYPES = {"uuid": 16, "inet6": 16, "inet4": 4}


def _is_zero(value: Any) -> bool:
    """PyMySQL hands back invalid/zero dates as their text, e.g. '0000-00-00'."""
    return isinstance(value, str | bytes)


def adjust_two_digit_year(value: Any) -> Any:
    """Debezium's `enable.time.adjuster` (BinlogValueConverters.adjustTemporal): years 0-69 are 2000-2069,
    70-99 are 1970-1999, as MySQL reads a two-digit year. A 29 February that the shifted year lacks
    becomes the 28th (java.time's plus(years) does the same)."""
    if not isinstance(value, datetime.date):
        return value
    year = value.year
    if year >= 100:
        return value
    year += 2000 if year <= 69 else 1900
    try:
        return value.replace(year=year)
    except ValueError:
        return value.replace(year=year, day=28)


def _float32(v: Any) -> float:
    """The value a 4-byte FLOAT column holds, as a double (Java's (double) floatValue)."""
    return struct.unpack("<f", struct.pack("<f", float(v)))[0]


def escape_enum_option(option: str) -> str:
    """An ENUM/SET member in the schema's `allowed` list: its commas escaped (`a\\,b`), as Debezium writes it."""
    return option.replace(",", "\\,")


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
        time_adjuster: bool = True,
        converting_failure: str = "warn",
    ) -> None:
        self.decimal_mode = decimal_mode
        self.time_mode = time_mode
        self.bigint_mode = bigint_mode
        self.binary_mode = binary_mode
        self.time_adjuster = time_adjuster
        self.converting_failure = converting_failure.lower()

    # -- schema + converter -----------------------------------------------------------------
    def column(self, col: ColumnDef, where: str, meta: ColumnMeta | None = None) -> tuple[Schema, Converter]:
        """(field schema, converter) for `col`; `where` names it (`db.table.column`) in errors.

        `meta` is what information_schema says of the column (FLOAT(M,D) is a FLOAT64 field, as
        Debezium maps it; the binlog's table map does not carry M and D).
        """
        builder, convert = self._for(col, where, meta)
        if col.nullable:
            builder.optional()
        schema = builder.build()
        required = not col.nullable
        zero = self._zero_value(schema) if required else None

        if zero is None:
            return schema, convert
        temporal = col.type in ("date", "datetime", "timestamp", "time", "year")
        if temporal and meta is not None and meta.default is not None and meta.type == col.type:
            # Debezium's convertValue: a zero date in a NOT NULL column is its schema default, if any.
            try:
                default = convert(raw_default(col, meta.default))
            except Exception:  # a default that does not convert is left out of the schema too
                default = None
            zero = zero if default is None else default

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

    def _for(self, col: ColumnDef, where: str, meta: ColumnMeta | None = None) -> tuple[SchemaBuilder, Converter]:
        t = col.type
        if t == "bool":
            return SchemaBuilder.bool(), lambda v: None if v is None else bool(v)
        if t in INTEGER_TYPES:
            return self._integer(col)
        if t == "decimal":
            return self._decimal(col, where)
        if t == "float":
            return self._float(meta)
        if t == "double":
            if meta is not None and meta.jdbc_type == JDBC_REAL:  # declared REAL: Debezium's FLOAT32 (floatValue)
                return SchemaBuilder.float32(), lambda v: None if v is None else _float32(v)
            return SchemaBuilder.float64(), lambda v: None if v is None else float(v)
        if t == "bit":
            return self._bit(col)
        if t in TEXT_TYPES:
            return SchemaBuilder.string(), self._text(where)
        if t in BINARY_TYPES:
            return self._binary(col)
        if t == "enum":
            return lt.enum([escape_enum_option(v) for v in col.values]), self._text(where)
        if t == "set":
            return lt.enum_set([escape_enum_option(v) for v in col.values]), self._set(col)
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
            if t == "point" or (meta is not None and meta.type == "point"):
                return _point_builder(), self._point(col)
            return lt.geometry(), self._geometry(col)
        if t == "uuid":
            # Debezium's MariaDbValueConverters: io.debezium.data.Uuid, the canonical lower-case text.
            return lt.iso(lt.UUID), _mariadb_text(where, _uuid_text, 16)
        if t == "inet4":
            # Debezium has no mapping for INET4/INET6 (its MariaDB grammar has no such data type):
            # here they are strings holding the address as MariaDB writes it.
            return SchemaBuilder.string(), _mariadb_text(where, _inet4_text, 4)
        if t == "inet6":
            return SchemaBuilder.string(), _mariadb_text(where, _inet6_text, 16)
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

    @staticmethod
    def _float(meta: ColumnMeta | None) -> tuple[SchemaBuilder, Converter]:
        """FLOAT is FLOAT32, but FLOAT(M,D) (and FLOAT(p) over 24) is FLOAT64 holding the 4-byte value
        widened, as Debezium's BinlogValueConverters maps it (5.61 in FLOAT(10,2) is 5.610000133514404)."""
        if meta is not None and meta.type == "float" and (meta.scale is not None or (meta.length or 0) > 24):
            return SchemaBuilder.float64(), lambda v: None if v is None else _float32(v)
        return SchemaBuilder.float32(), lambda v: None if v is None else float(v)

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

    def _adjusted(self, v: Any) -> Any:
        return adjust_two_digit_year(v) if self.time_adjuster else v

    def _date(self) -> tuple[SchemaBuilder, Converter]:
        adjust = self._adjusted

        adjusting = self.time_adjuster

        def days(v: Any) -> Any:
            if v is None or _is_zero(v):
                return None
            if isinstance(v, datetime.datetime):
                v = v.date()
            return (v - _EPOCH_DATE).days if v.year >= 100 or not adjusting else _epoch_days(adjust(v))

        if self.time_mode is TimePrecisionMode.CONNECT:
            return ConnectDate.builder(), lambda v: None if v is None or _is_zero(v) else adjust(_as_date(v))
        if self.time_mode is TimePrecisionMode.ISOSTRING:
            return lt.iso(lt.ISO_DATE), lambda v: None if v is None or _is_zero(v) else adjust(_as_date(v)).isoformat()
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
                    # Debezium's converter refuses it too; event.converting.failure.handling.mode decides.
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
        adjusting = self.time_adjuster

        def local(v: Any) -> datetime.datetime | None:
            # The hot path: one type check, and the adjuster only for years below 100.
            if v is None or _is_zero(v):
                return None
            return adjust_two_digit_year(v) if adjusting and v.year < 100 else v

        if self.time_mode is TimePrecisionMode.CONNECT:
            return ConnectTimestamp.builder(), lambda v: None if (d := local(v)) is None else _as_utc(d)
        if self.time_mode is TimePrecisionMode.ISOSTRING:
            return lt.iso(lt.ISO_TIMESTAMP), lambda v: None if (d := local(v)) is None else _as_utc(d).isoformat()
        if col.fsp <= 3:
            return lt.timestamp(), lambda v: None if (d := local(v)) is None else _micros(d - _EPOCH) // 1000
        return lt.micro_timestamp(), lambda v: None if (d := local(v)) is None else _micros(d - _EPOCH)

    def _timestamp(self, col: ColumnDef) -> tuple[SchemaBuilder, Converter]:
        fsp = col.fsp
        adjust = self._adjusted

        def zoned(v: Any) -> Any:
            # A zero TIMESTAMP ('0000-00-00 00:00:00': text from a SELECT, second 0 in the binlog, which
            # no real TIMESTAMP is) is null, the epoch where the column is NOT NULL: Debezium 3.6 on
            # MariaDB and MySQL 8 (DBZ-1912; 3.5 streamed the epoch).
            if v is None or _is_zero(v):
                return None
            if v.tzinfo is not None:
                v = v.astimezone(datetime.UTC).replace(tzinfo=None)
            elif v == _EPOCH:
                return None
            return _iso_zoned(adjust(v), fsp)

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

    def _point(self, col: ColumnDef) -> Converter:
        """POINT is Debezium's io.debezium.data.geometry.Point: x and y read from the WKB, beside wkb and srid."""
        schema = _POINT_SCHEMA_OPT if col.nullable else _POINT_SCHEMA_REQ

        def point(v: Any) -> Any:
            if v is None:
                return None
            raw = bytes(v)
            srid = int.from_bytes(raw[:4], "little")
            wkb = raw[4:]
            order = "<" if wkb[:1] == b"\x01" else ">"
            x, y = struct.unpack_from(order + "dd", wkb, 5)
            s = Struct(schema)
            s.put("x", x)
            s.put("y", y)
            s.put("wkb", wkb)
            s.put("srid", srid if srid else None)
            return s

        return point


POINT = "io.debezium.data.geometry.Point"


def _point_builder() -> SchemaBuilder:
    """Debezium's Point schema: x, y (FLOAT64), wkb (optional bytes), srid (optional INT32)."""
    return (
        SchemaBuilder.struct()
        .name(POINT)
        .version(1)
        .doc("Geometry (POINT)")
        .field("x", Schema.FLOAT64_SCHEMA)
        .field("y", Schema.FLOAT64_SCHEMA)
        .field("wkb", Schema.OPTIONAL_BYTES_SCHEMA)
        .field("srid", Schema.OPTIONAL_INT32_SCHEMA)
    )


_POINT_SCHEMA_OPT = _point_builder().optional().build()
_POINT_SCHEMA_REQ = _point_builder().build()


def _identity(v: Any) -> Any:
    return v


IDENTITY: Converter = _identity
"""The converter of columns whose decoded value is already the Connect value (row builders skip the call)."""


def _epoch_days(v: datetime.date) -> int:
    return (v - _EPOCH_DATE).days


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


# -- MariaDB's UUID, INET4 and INET6 ------------------------------------------------------------
def with_mariadb_binary_types(table: TableDef, meta: TableMeta | None) -> TableDef:
    """`table` (from a binlog table map) with each BINARY(n) column that information_schema calls UUID,
    INET4 or INET6 given that type: the table map has no type name for them, only BINARY(16) or (4).

    A column whose size does not match (the reader lags behind an ALTER of it) stays BINARY.
    """
    if meta is None:
        return table
    columns = list(table.columns)
    changed = False
    for i, col in enumerate(columns):
        column_meta = meta.columns.get(col.name)
        if col.type != "binary" or column_meta is None:
            continue
        size = MARIADB_BINARY_TYPES.get(column_meta.type)
        if size is not None and col.length == size:
            columns[i] = dataclasses.replace(col, type=column_meta.type, length=None, charset=None)
            changed = True
    return dataclasses.replace(table, columns=tuple(columns)) if changed else table


def _uuid_text(raw: bytes) -> str:
    """The 16 bytes of a MariaDB UUID (the binlog's order is the text's order) as 8-4-4-4-12 hex."""
    return str(uuid.UUID(bytes=raw))


def _inet4_text(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)


def _inet6_text(raw: bytes) -> str:
    """An INET6's 16 bytes as MariaDB writes them: the longest run of zero groups (the first of equal
    runs; unlike RFC 5952, even a single group: `1::2:3:4:5:6:7`) is `::`, and an IPv4-compatible
    (`::a.b.c.d`) or IPv4-mapped (`::ffff:a.b.c.d`) address ends in its dotted IPv4 address.
    Python 3.11's ipaddress writes both of those in hex groups, hence this function."""
    groups = [int.from_bytes(raw[i : i + 2], "big") for i in range(0, 16, 2)]
    best_start, best_len, start = -1, 0, -1
    for i, g in enumerate([*groups, 1]):  # the sentinel closes a run that reaches the end
        if g == 0 and start < 0:
            start = i
        elif g != 0 and start >= 0:
            if i - start > best_len:
                best_start, best_len = start, i - start
            start = -1
    if best_start == 0 and (best_len == 6 or (best_len == 5 and groups[5] == 0xFFFF)):
        return "::" + ("ffff:" if best_len == 5 else "") + _inet4_text(raw[12:])
    if best_len == 0:
        return ":".join(f"{g:x}" for g in groups)
    head = ":".join(f"{g:x}" for g in groups[:best_start])
    tail = ":".join(f"{g:x}" for g in groups[best_start + best_len :])
    return f"{head}::{tail}"


def _mariadb_text(where: str, text_of: Callable[[bytes], str], size: int) -> Converter:
    """A UUID/INET4/INET6 value: the snapshot's SELECT gives its text (kept as it is), the binlog its
    `size` bytes (written as text by `text_of`). The binlog drops trailing zero bytes, as of any
    BINARY(n), so they are put back first."""

    def convert(v: Any) -> str | None:
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, bytes | bytearray) and len(v) <= size:
            return text_of(bytes(v).ljust(size, b"\x00"))
        raise DataException(
            f"Column {where}: {v!r} is not a {size}-byte MariaDB value; check the column's type or exclude the column"
        )

    return convert

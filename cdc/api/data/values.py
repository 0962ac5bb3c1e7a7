"""Kafka Connect's `Values`: the string form of any Connect value and its inference back.

`convert_to_string` and `parse_string` follow `org.apache.kafka.connect.data.Values`
(Kafka 3.8+) closely, tokenizer included, because SimpleHeaderConverter headers written
here are read by Java workers and the other way round. Kafka's quirks are kept on
purpose and marked where they surprise.

`java_to_string` is Java's `Object.toString()` for Connect values (StringConverter).
"""

from __future__ import annotations

import binascii
import datetime
import decimal
import re
from collections.abc import Mapping
from typing import Any

from cdc.api.data import SchemaAndValue
from cdc.api.data._javafmt import bigdecimal_to_string, double_to_string, float_to_string, to_float32
from cdc.api.data.logical import Date, Decimal, Time, Timestamp
from cdc.api.data.schema import Schema, Type
from cdc.api.data.struct import Struct
from cdc.api.errors import DataException

__all__ = ["convert_to_string", "java_to_string", "parse_string"]

_MILLIS_PER_DAY = 86_400_000
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_BYTES = (bytes, bytearray, memoryview)


# -- Java toString ----------------------------------------------------------------------------
def _number_text(value: Any, schema: Schema | None) -> str:
    if isinstance(value, float):
        return float_to_string(value) if schema is not None and schema.type is Type.FLOAT32 else double_to_string(value)
    if isinstance(value, decimal.Decimal):
        return bigdecimal_to_string(value)
    return str(int(value))


def _millis(value: datetime.date | datetime.time) -> int:
    if isinstance(value, datetime.datetime):
        return Timestamp.from_logical(Timestamp.SCHEMA, value)
    if isinstance(value, datetime.date):
        return Date.from_logical(Date.SCHEMA, value) * _MILLIS_PER_DAY
    return Time.from_logical(Time.SCHEMA, value)


def java_to_string(value: Any, schema: Schema | None = None) -> str:
    """Java's `String.valueOf(value)` for the Python form of a Connect value."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | decimal.Decimal):
        return _number_text(value, schema)
    if isinstance(value, list | tuple):
        elem = schema.value_schema if schema is not None and schema.type is Type.ARRAY else None
        return "[" + ", ".join(java_to_string(v, elem) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{java_to_string(k)}={java_to_string(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Struct):
        # Kafka's Struct.toString(): only non-null fields, no default substitution.
        parts = []
        for f in value.schema.fields:
            v = value.get_without_default(f.name)
            if v is not None:
                parts.append(f"{f.name}={java_to_string(v, f.schema)}")
        return "Struct{" + ",".join(parts) + "}"
    if isinstance(value, datetime.date | datetime.time):
        # java.util.Date.toString() in a UTC JVM: "Thu Jan 01 00:00:00 UTC 1970".
        dt = _EPOCH + datetime.timedelta(milliseconds=_millis(value))
        return dt.strftime("%a %b %d %H:%M:%S UTC ") + str(dt.year)
    return str(value)


# -- Values.convertToString -------------------------------------------------------------------
def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """Kafka's `Values.convertToString`: strings raw, everything else in Kafka's literal syntax."""
    if value is None:
        return None
    out: list[str] = []
    _append(out, value, False, schema)
    return "".join(out)


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def _append(out: list[str], value: Any, embedded: bool, schema: Schema | None) -> None:
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int | float | decimal.Decimal):
        out.append(_number_text(value, schema))
    elif isinstance(value, str):
        out.append('"' + _escape(value) + '"' if embedded else value)
    elif isinstance(value, _BYTES):
        text = binascii.b2a_base64(value, newline=False).decode("ascii")
        out.append('"' + text + '"' if embedded else text)
    elif isinstance(value, list | tuple):
        elem = schema.value_schema if schema is not None and schema.type is Type.ARRAY else None
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _append(out, v, True, elem)
        out.append("]")
    elif isinstance(value, Mapping):
        is_map = schema is not None and schema.type is Type.MAP
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            _append(out, k, True, schema.key_schema if is_map else None)  # type: ignore[union-attr]
            out.append(":")
            _append(out, v, True, schema.value_schema if is_map else None)  # type: ignore[union-attr]
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for i, f in enumerate(value.schema.fields):
            if i:
                out.append(",")
            _append(out, f.name, True, None)
            out.append(":")
            _append(out, value.get(f), True, f.schema)
        out.append("}")
    elif isinstance(value, datetime.date | datetime.time):
        out.append(_format_temporal(_millis(value)))
    else:
        raise DataException(f"Failed to serialize unexpected value type {type(value).__qualname__}: {value}")


def _format_temporal(millis: int) -> str:
    """Kafka's `Values.dateFormatFor`: the pattern is picked from the epoch millis alone.

    Surprise kept for compatibility: anything before 1970-01-02 (every pre-epoch date or
    timestamp) is written as a time of day, and a timestamp at midnight as a date.
    """
    dt = _EPOCH + datetime.timedelta(milliseconds=millis)
    clock = f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}.{dt.microsecond // 1000:03d}Z"
    if millis < _MILLIS_PER_DAY:
        return clock
    day = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}"
    if millis % _MILLIS_PER_DAY == 0:
        return day
    return f"{day}T{clock}"


# -- Values.parseString -----------------------------------------------------------------------
_DELIMITERS = frozenset(':,{}[]"')
_JAVA_WS = "".join(map(chr, range(33)))  # String.trim() strips every char <= ' '
_TRUE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
_FALSE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TIME = re.compile(r"(\d+):(\d+):(\d+)\.(\d+)Z")
_DATE = re.compile(r"(\d+)-(\d+)-(\d+)")
_TIMESTAMP = re.compile(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)Z")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_BIGGER_THAN_LONG = decimal.Decimal("1e19")
_INT_SCHEMAS = (
    (Schema.INT8_SCHEMA, -(2**7), 2**7 - 1),
    (Schema.INT16_SCHEMA, -(2**15), 2**15 - 1),
    (Schema.INT32_SCHEMA, -(2**31), 2**31 - 1),
    (Schema.INT64_SCHEMA, _LONG_MIN, _LONG_MAX),
)


def _trim(s: str) -> str:
    return s.strip(_JAVA_WS)


class _Parser:
    """Kafka's `Values.Parser`: a tokenizer splitting on unescaped `:,{}[]"`."""

    __slots__ = ("end", "next_token", "original", "pos", "previous")

    def __init__(self, original: str) -> None:
        self.original = original
        self.pos = 0
        self.end = len(original)
        self.next_token: str | None = None
        self.previous: str | None = None

    def mark(self) -> int:
        return self.pos - (len(self.next_token) if self.next_token is not None else 0)

    def rewind_to(self, position: int) -> None:
        self.pos = position
        self.next_token = None
        self.previous = None

    def has_next(self) -> bool:
        return self.next_token is not None or self.pos < self.end

    def next(self) -> str:
        if self.next_token is not None:
            self.previous, self.next_token = self.next_token, None
        else:
            self.previous = self._consume()
        return self.previous

    def next_n(self, n: int) -> str | None:
        start = self.mark()
        for _ in range(n):
            if not self.has_next():
                self.rewind_to(start)
                return None
            self.next()
        return self.original[start : self.pos]

    def _consume(self) -> str:
        s, start, escaped = self.original, self.pos, False
        while self.pos < self.end:
            c = s[self.pos]
            if c == "\\":
                escaped = not escaped
            elif c in _DELIMITERS:
                if not escaped:
                    if start < self.pos:
                        return s[start : self.pos]
                    self.pos += 1
                    return c
                escaped = False
            else:
                escaped = False
            self.pos += 1
        return s[start : self.pos]

    def can_consume(self, expected: str) -> bool:
        if self.next_token is None:
            if not self.has_next():
                return False
            self.next_token = self._consume()
        # Whitespace-only tokens are skipped while looking for a delimiter or literal.
        while not _trim(self.next_token) and self.pos < self.end:
            self.next_token = self._consume()
        if _trim(self.next_token) == expected:
            self.next_token = None
            return True
        return False


def parse_string(value: str | None) -> SchemaAndValue:
    """Kafka's `Values.parseString`: infer a schema and value from a string form."""
    if value is None:
        return SchemaAndValue(None, None)
    if not value:
        return SchemaAndValue(Schema.STRING_SCHEMA, value)
    parsed = _parse(_Parser(value), False)
    return parsed if parsed is not None else SchemaAndValue(None, None)


def _literal(p: _Parser, embedded: bool, literal: str) -> bool:
    start = p.mark()
    # At top level a literal must be the whole string: "true}" is the string "true}".
    if p.can_consume(literal) and (embedded or not p.has_next()):
        return True
    p.rewind_to(start)
    return False


def _parse(p: _Parser, embedded: bool) -> SchemaAndValue | None:
    if not p.has_next():
        return None
    if embedded and p.can_consume('"'):
        return _parse_quoted(p)
    if _literal(p, embedded, "null"):
        return None
    if _literal(p, embedded, "true"):
        return _TRUE
    if _literal(p, embedded, "false"):
        return _FALSE
    start = p.mark()
    try:
        if p.can_consume("["):
            return _parse_array(p)
        if p.can_consume("{"):
            return _parse_map(p)
    except DataException:
        p.rewind_to(start)  # not a well-formed array or map: read it as a plain token
    token = p.next()
    if not _trim(token):
        return SchemaAndValue(Schema.STRING_SCHEMA, token)
    return _parse_token(p, embedded, _trim(token))


def _parse_token(p: _Parser, embedded: bool, token: str) -> SchemaAndValue:
    first = token[0]
    if first.isdecimal():
        temporal = _parse_multi_token_temporal(p, token)
        if temporal is not None:
            return temporal
    if first.isdecimal() or first in "+-":
        number = _parse_number(token)
        if number is not None:
            # Surprise kept from Kafka: at top level only this first token counts, so
            # "12,34" reads as the int 12 and "12:30" as 12.
            return number
    if embedded:
        raise DataException("Failed to parse embedded value")
    return SchemaAndValue(Schema.STRING_SCHEMA, p.original)


def _parse_quoted(p: _Parser) -> SchemaAndValue:
    parts = []
    while p.has_next():
        if p.can_consume('"'):
            break
        parts.append(p.next())
    # Escapes stay as written (Kafka does not unescape), and quoted temporal literals
    # become temporal values.
    content = "".join(parts)
    temporal = _parse_temporal(content)
    return temporal if temporal is not None else SchemaAndValue(Schema.STRING_SCHEMA, content)


def _parse_array(p: _Parser) -> SchemaAndValue:
    result: list[Any] = []
    merger = _SchemaMerger()
    while p.has_next():
        if p.can_consume("]"):
            if merger.common is None:
                return SchemaAndValue(Schema(Type.ARRAY), result)  # no element with a schema
            elem_schema = merger.common
            return SchemaAndValue(
                Schema(Type.ARRAY, value_schema=elem_schema), [_convert_to(elem_schema, v) for v in result]
            )
        if p.can_consume(","):
            raise DataException("Unable to parse an empty array element: " + p.original)
        element = _parse(p, True)
        merger.merge(element)
        result.append(element.value if element is not None else None)
        current = p.mark()
        if p.can_consume("]"):
            p.rewind_to(current)
        elif not p.can_consume(","):
            raise DataException("Array elements missing ',' delimiter")
    if p.previous == ",":
        raise DataException("Array is missing element after ',': " + p.original)
    raise DataException("Array is missing terminating ']': " + p.original)


def _parse_map(p: _Parser) -> SchemaAndValue:
    result: dict[Any, Any] = {}
    keys, values = _SchemaMerger(), _SchemaMerger()
    while p.has_next():
        if p.can_consume("}"):
            if keys.common is not None and values.common is not None:
                ks, vs = keys.common, values.common
                aligned = {_convert_to(ks, k): _convert_to(vs, v) for k, v in result.items()}
                return SchemaAndValue(Schema(Type.MAP, key_schema=ks, value_schema=vs), aligned)
            if keys.common is not None:
                ks = keys.common
                aligned = {_convert_to(ks, k): v for k, v in result.items()}
                return SchemaAndValue(Schema(Type.MAP, key_schema=ks), aligned)
            return SchemaAndValue(Schema(Type.MAP), result)
        if p.can_consume(","):
            raise DataException("Unable to parse a map entry with no key or value: " + p.original)
        key = _parse(p, True)
        if key is None or key.value is None:
            raise DataException("Map entry may not have a null key: " + p.original)
        if not p.can_consume(":"):
            raise DataException(f"Map entry is missing ':' at {p.pos} in {p.original}")
        entry = _parse(p, True)
        try:
            result[key.value] = entry.value if entry is not None else None
        except TypeError as e:  # a list or map key: no Python hash
            raise DataException("Map key is not hashable: " + p.original) from e
        p.can_consume(",")
        keys.merge(key)
        values.merge(entry)
    if p.previous == ",":
        raise DataException("Map is missing element after ',': " + p.original)
    raise DataException("Map is missing terminating '}': " + p.original)


def _parse_multi_token_temporal(p: _Parser, token: str) -> SchemaAndValue | None:
    # An unescaped ':' splits times into 5 tokens; try the joined form first.
    position = p.mark()
    remainder = p.next_n(4)
    if remainder is not None:
        temporal = _parse_temporal(token + remainder)
        if temporal is not None:
            return temporal
    p.rewind_to(position)
    return _parse_temporal(token)


def _parse_temporal(token: str) -> SchemaAndValue | None:
    """ISO-8601 forms Kafka writes; SimpleDateFormat is lenient, so fields roll over."""
    token = token.replace("\\:", ":")
    n = len(token)
    try:
        if n == 13 and (m := _TIME.match(token)):
            h, mi, s, ms = map(int, m.groups())
            millis = ((h * 60 + mi) * 60 + s) * 1000 + ms
            if 0 <= millis < _MILLIS_PER_DAY:
                return SchemaAndValue(Time.SCHEMA, Time.to_logical(Time.SCHEMA, millis))
        elif n == 24 and (m := _TIMESTAMP.match(token)):
            y, mo, d, h, mi, s, ms = map(int, m.groups())
            day = _lenient_date(y, mo, d)
            ts = datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC) + datetime.timedelta(
                hours=h, minutes=mi, seconds=s, milliseconds=ms
            )
            return SchemaAndValue(Timestamp.SCHEMA, ts)
        elif n == 10 and (m := _DATE.match(token)):
            return SchemaAndValue(Date.SCHEMA, _lenient_date(*map(int, m.groups())))
    except (ValueError, OverflowError):
        return None  # outside Python's date range
    return None


def _lenient_date(year: int, month: int, day: int) -> datetime.date:
    months = year * 12 + month - 1
    first = datetime.date(months // 12, months % 12 + 1, 1)
    return first + datetime.timedelta(days=day - 1)


def _parse_number(token: str) -> SchemaAndValue | None:
    """Smallest exact integer type, else float32/float64 when fractional, else Decimal."""
    if not _NUMBER.fullmatch(token):
        return None
    d = decimal.Decimal(token)
    exponent = d.as_tuple().exponent
    assert isinstance(exponent, int)
    scale = -exponent
    magnitude = abs(d)
    if not (magnitude > _BIGGER_THAN_LONG or (magnitude < 1 and magnitude != 0)) and d == d.to_integral_value():
        integral = int(d)
        for schema, lo, hi in _INT_SCHEMAS:
            if lo <= integral <= hi:
                return SchemaAndValue(schema, integral)
    if scale != 0:
        as_double = float(d)
        # Python has no float32: the value is the double nearest the text, with Kafka's schema.
        if abs(to_float32(as_double)) != float("inf"):
            return SchemaAndValue(Schema.FLOAT32_SCHEMA, as_double)
        if abs(as_double) != float("inf"):
            return SchemaAndValue(Schema.FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(Decimal.schema(scale), d)


class _SchemaMerger:
    """Kafka's `Values.SchemaMerger`: the common numeric schema of several values."""

    __slots__ = ("common", "compatible")

    def __init__(self) -> None:
        self.common: Schema | None = None
        self.compatible = True

    def merge(self, latest: SchemaAndValue | None) -> None:
        if latest is None or latest.schema is None or not self.compatible:
            return
        if self.common is None:
            self.common = latest.schema
        else:
            self.common = _merge_schemas(self.common, latest.schema)
            self.compatible = self.common is not None


_NUMERIC_ORDER = [Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64]


def _merge_schemas(previous: Schema, new: Schema) -> Schema | None:
    if previous.type is not new.type:
        if previous.type in _NUMERIC_ORDER and new.type in _NUMERIC_ORDER:
            # The wider numeric type wins, whatever its name (a Date can absorb an INT8).
            return new if _NUMERIC_ORDER.index(new.type) > _NUMERIC_ORDER.index(previous.type) else previous
        return None
    if previous.optional == new.optional:
        return previous if previous.optional else new
    return previous if previous == new else None


def _convert_to(schema: Schema, value: Any) -> Any:
    """Kafka's `Values.convertTo` for the cases parsed lists and maps need."""
    if value is None:
        if schema.optional:
            return None
        raise DataException("Unable to convert a null value to a schema that requires a value")
    name, t = schema.name, schema.type
    if name == Date.LOGICAL_NAME:
        return value if isinstance(value, datetime.date) else Date.to_logical(schema, _as_long(value))
    if name == Time.LOGICAL_NAME:
        return value if isinstance(value, datetime.time) else Time.to_logical(schema, _as_long(value))
    if name == Timestamp.LOGICAL_NAME:
        return value if isinstance(value, datetime.datetime) else Timestamp.to_logical(schema, _as_long(value))
    if name == Decimal.LOGICAL_NAME:
        if isinstance(value, decimal.Decimal):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return decimal.Decimal(double_to_string(float(value)))
        raise DataException(f"Unable to convert {value} to {schema}")
    if t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        bits = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}[t]
        n = _as_long(value) & ((1 << bits) - 1)  # Java's narrowing cast wraps around
        return n - (1 << bits) if n >= 1 << (bits - 1) else n
    if t in (Type.FLOAT32, Type.FLOAT64):
        if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
            return float(value)
        return float(_as_long(value))
    if t is Type.STRING:
        return convert_to_string(None, value)
    if t is Type.BOOLEAN:
        if isinstance(value, bool):
            return value
        return _as_long(value) != 0
    if t is Type.ARRAY and isinstance(value, list):
        return value
    if t is Type.MAP and isinstance(value, dict):
        return value
    if (t is Type.STRUCT and isinstance(value, Struct)) or (t is Type.BYTES and isinstance(value, _BYTES)):
        return value
    raise DataException(f"Unable to convert {value} ({type(value).__name__}) to {schema}")


def _as_long(value: Any) -> int:
    if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
        return int(value)  # Number.longValue() truncates toward zero
    if isinstance(value, str):
        try:
            return int(decimal.Decimal(value))
        except decimal.InvalidOperation:
            pass
    raise DataException(f"Unable to convert {value} ({type(value).__name__}) to a number")

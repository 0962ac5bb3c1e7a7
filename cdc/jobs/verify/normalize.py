"""Canonical text for one value of one column, so that equal data compares equal across engines.

Each source column gets a `Column` with a kind (what the value means, from the source
type) and the connector settings that decide how Debezium emitted it. `canon` accepts every
shape a value takes on either side (the database driver's Python object, or what the sink
stored: Arrow/Delta/Iceberg/PostgreSQL values, Debezium encodings such as days since the
epoch, micros, base64 or ISO strings) and returns one text per logical value.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_UTC = datetime.UTC


@dataclass(frozen=True)
class Column:
    """A source column and how its values travel (`unit`: ms or us for integer times)."""

    name: str
    kind: str | None  # None: not compared (`type` says why)
    type: str
    nullable: bool = True
    unit: str = "us"
    decimal_mode: str = "precise"
    binary_mode: str = "bytes"
    select: str | None = None  # SQL expression to read it with, when the plain column will not do
    default: str | None = None  # the column's literal DEFAULT, if it has one


# -- numbers ------------------------------------------------------------------------------------
def _exact(digits: int) -> decimal.Context:
    """A context that rounds nothing: the default one keeps 28 digits, which would make
    NUMERIC(60,3) values that differ past the 28th digit compare equal."""
    return decimal.Context(prec=max(digits, 28), Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def _dec_text(d: decimal.Decimal) -> str:
    if d.is_nan():
        return "NaN"
    if d.is_infinite():
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "0"
    return format(d.normalize(_exact(len(d.as_tuple().digits))), "f")


def _scaled(unscaled: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-scale, _exact(len(str(abs(unscaled)))))


def _float_text(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return _dec_text(decimal.Decimal(repr(f)))


def _number(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float_text(v)
    if isinstance(v, decimal.Decimal):
        return _dec_text(v)
    if isinstance(v, bytes | bytearray):
        v = bytes(v).decode()
    return _dec_text(decimal.Decimal(str(v).strip()))


def _decimal(v: Any, col: Column) -> str | None:
    if col.decimal_mode == "precise" and isinstance(v, decimal.Decimal) and not v.is_finite():
        return None  # Connect's Decimal cannot hold NaN/Infinity: Debezium emits null
    if isinstance(v, str) and v.startswith("{"):  # VariableScaleDecimal stored as JSON text
        node = json.loads(v)
        unscaled = int.from_bytes(base64.b64decode(node["value"]), "big", signed=True)
        v = _scaled(unscaled, int(node["scale"]))
    elif isinstance(v, dict) and "scale" in v:
        raw = v["value"]
        raw = base64.b64decode(raw) if isinstance(raw, str) else bytes(raw)
        v = _scaled(int.from_bytes(raw, "big", signed=True), int(v["scale"]))
    if col.decimal_mode == "double":  # Debezium sent a double: compare at double precision
        return _float_text(float(v))
    return _number(v)


def _wrapped64(v: Any) -> str:
    # bigint.unsigned.handling.mode=long: Debezium emits BIGINT UNSIGNED as a signed long, so
    # values above 2^63-1 arrive as their two's complement (a one-to-one mapping: no change hides).
    n = int(_number(v))
    return str(n - 2**64 if n >= 2**63 else n)


def _float32(v: Any) -> str:
    # MySQL prints FLOAT with 6 significant digits; the binlog carries the full float32.
    f = struct.unpack("f", struct.pack("f", float(v)))[0]
    if math.isnan(f) or math.isinf(f):
        return _float_text(f)
    return _dec_text(decimal.Decimal(format(f, ".6g")))


def _float(v: Any) -> str:
    return repr(float(v))  # both sides hold an IEEE double: its shortest repr is canonical


def _bool(v: Any) -> str:
    if isinstance(v, bytes | bytearray):
        return "1" if int.from_bytes(v, "big") else "0"
    if isinstance(v, str):
        return "1" if v.strip().lower() in ("1", "t", "true", "y", "yes", "on") else "0"
    return "1" if v else "0"


def _bits(v: Any) -> str:
    if isinstance(v, str):  # PostgreSQL bit/varbit text, e.g. '0101'
        return str(int(v, 2) if v else 0)
    if isinstance(v, bytes | bytearray):
        return str(int.from_bytes(v, "big"))  # MySQL's driver: big-endian bytes
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(int(v))


def _target_bits(v: Any) -> str:
    # io.debezium.data.Bits: little-endian bytes.
    return str(int.from_bytes(v, "little")) if isinstance(v, bytes | bytearray) else _bits(v)


# -- text and bytes ----------------------------------------------------------------------------
def _text(v: Any) -> str:
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v).decode("utf-8", "surrogateescape")
    return str(v)  # str, and uuid.UUID or ipaddress objects as PostgreSQL prints them


def _set(v: Any) -> str:
    items = v if isinstance(v, set | frozenset | list | tuple) else _text(v).split(",")
    return ",".join(sorted(str(i) for i in items if i != ""))


def _bytes(v: Any, col: Column) -> str:
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v).hex()
    text = str(v)
    mode = col.binary_mode
    if mode == "base64":
        return base64.b64decode(text).hex()
    if mode == "base64-url-safe":
        return base64.urlsafe_b64decode(text).hex()
    if mode == "hex":
        return text.lower()
    return text.encode("utf-8", "surrogateescape").hex()


def _plain(node: Any) -> Any:
    """JSON numbers as canonical text so 1, 1.0 and 1.00 agree."""
    if isinstance(node, dict):
        return {str(k): _plain(x) for k, x in node.items()}
    if isinstance(node, list | tuple):
        return [_plain(x) for x in node]
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return node
    if isinstance(node, int | float | decimal.Decimal):
        return {"#": _number(node)}
    return _text(node)


def _json(v: Any) -> str:
    if isinstance(v, bytes | bytearray):
        v = bytes(v).decode("utf-8")
    node = json.loads(v, parse_float=decimal.Decimal) if isinstance(v, str) else v
    return json.dumps(_plain(node), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _array(v: Any) -> str:
    if isinstance(v, str):
        v = json.loads(v, parse_float=decimal.Decimal)
    return json.dumps(_plain(_array_items(v)), separators=(",", ":"), ensure_ascii=False)


def _array_items(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return [_array_items(x) for x in v]
    if isinstance(v, bytes | bytearray):
        return v.hex()
    if isinstance(v, datetime.date | datetime.time):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    return v


# -- dates and times ---------------------------------------------------------------------------
def _from_int(v: int, unit: str) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=v) if unit == "ms" else datetime.timedelta(microseconds=v)


def _date(v: Any) -> str:
    if isinstance(v, datetime.datetime):
        v = v.date()
    elif isinstance(v, int):
        v = _EPOCH_DATE + datetime.timedelta(days=v)
    elif isinstance(v, str):
        v = datetime.date.fromisoformat(v[:10])
    return v.isoformat()


def _naive(v: Any, col: Column) -> datetime.datetime:
    if isinstance(v, int):
        return _EPOCH + _from_int(v, col.unit)
    if isinstance(v, str):
        v = datetime.datetime.fromisoformat(v)
    if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
        v = datetime.datetime.combine(v, datetime.time())
    if v.tzinfo is not None:
        v = v.astimezone(_UTC).replace(tzinfo=None)
    return v


def _datetime(v: Any, col: Column) -> str:
    d = _naive(v, col)
    if col.unit == "ms":  # Debezium's Timestamp carries milliseconds
        d = d.replace(microsecond=d.microsecond // 1000 * 1000)
    return d.isoformat(timespec="microseconds")


def _timestamptz(v: Any, col: Column) -> str:
    if isinstance(v, str):
        v = datetime.datetime.fromisoformat(v)
    if isinstance(v, datetime.datetime) and v.tzinfo is None:
        v = v.replace(tzinfo=_UTC)  # the source session runs in UTC; lake timestamps are UTC
    return v.astimezone(_UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _micros_of_day(v: Any, col: Column) -> int:
    if isinstance(v, datetime.timedelta):
        return (v.days * 86_400 + v.seconds) * 1_000_000 + v.microseconds
    if isinstance(v, datetime.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if isinstance(v, int):
        return v * 1000 if col.unit == "ms" else v
    if isinstance(v, str):
        sign = -1 if v.startswith("-") else 1
        h, m, s = v.lstrip("-").rstrip("Z").split(":")
        sec = decimal.Decimal(s)
        return sign * ((int(h) * 60 + int(m)) * 60_000_000 + int(sec * 1_000_000))
    raise TypeError(f"not a time: {v!r}")


def _time(v: Any, col: Column) -> str:
    micros = _micros_of_day(v, col)
    if col.unit == "ms":
        micros = micros // 1000 * 1000
    return str(micros)


def _timetz(v: Any, col: Column) -> str:
    if isinstance(v, datetime.time) and v.tzinfo is not None:
        offset = v.utcoffset() or datetime.timedelta()
        micros = _micros_of_day(v.replace(tzinfo=None), col) - int(offset.total_seconds() * 1_000_000)
        return str(micros % 86_400_000_000)
    return str(_micros_of_day(v, col) % 86_400_000_000)


_CANON: dict[str, Callable[[Any, Column], str | None]] = {
    "int": lambda v, c: _number(v),
    "uint64": lambda v, c: _wrapped64(v),
    "bool": lambda v, c: _bool(v),
    "decimal": _decimal,
    "float": lambda v, c: _float(v),
    "float32": lambda v, c: _float32(v),
    "text": lambda v, c: _text(v),
    "set": lambda v, c: _set(v),
    "bytes": _bytes,
    "bits": lambda v, c: _bits(v),
    "date": lambda v, c: _date(v),
    "datetime": _datetime,
    "timestamptz": _timestamptz,
    "time": _time,
    "timetz": _timetz,
    "json": lambda v, c: _json(v),
    "array": lambda v, c: _array(v),
}


def literal_default(text: str | None, generated: bool = False) -> str | None:
    """The value of a DEFAULT clause as information_schema shows it, or None for NULL/expressions.

    MariaDB quotes string literals ('abc'), MySQL 8 does not, PostgreSQL adds a cast
    ('abc'::text); calls (now(), nextval(…)) and CURRENT_TIMESTAMP are expressions.
    """
    if text is None or generated:
        return None
    t = text.strip()
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    if m := _QUOTED.match(t):
        return m.group(1).replace("''", "'")
    if _NUMBER.match(t):
        return t.split("::", 1)[0]
    low = t.lower()
    if low in ("true", "false"):
        return low
    if low.startswith("null") or "(" in t or low.startswith("current_") or "::" in t:
        return None
    return t


_QUOTED = re.compile(r"^'((?:[^']|'')*)'(::[\w\s\[\]\".]+)?$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?(::[\w\s]+)?$")
_ZERO: dict[str, Any] = {"date": _EPOCH_DATE, "datetime": _EPOCH, "timestamptz": _EPOCH}


Converter = Callable[[Any], "str | None"]


def converter(col: Column, target: bool = False) -> Converter:
    """The canonical-text function of one column (built once; called once per value)."""
    kind = col.kind or "text"
    fn = _CANON[kind]
    if target and kind == "bits":
        fn = lambda v, c: _target_bits(v)  # noqa: E731

    def slow(value: Any) -> str | None:
        if value is None:
            return None
        if not target and kind in _ZERO and isinstance(value, str | bytes) and value[:4] in ("0000", b"0000"):
            # MySQL's zero dates: Debezium emits null, or the epoch for a NOT NULL column.
            return None if col.nullable else fn(_ZERO[kind], col)
        try:
            return fn(value, col)
        except (ValueError, TypeError, ArithmeticError, KeyError, json.JSONDecodeError):
            return "?" + _text(value)  # unreadable: compare the raw text, so a mismatch still shows

    if kind == "text":
        return lambda v: v if v.__class__ is str else slow(v)
    if kind == "int":
        return lambda v: str(v) if v.__class__ is int else slow(v)
    return slow


def canon(col: Column, value: Any, target: bool = False) -> str | None:
    """Canonical text of `value` (None for SQL NULL); `target` for values read from the sink."""
    return converter(col, target)(value)

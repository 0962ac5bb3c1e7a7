"""Parse PostgreSQL's text output (what pgoutput sends for 't' columns) into exact parts.

Debezium's PostgreSQL types need the parts, not Python's nearest type: an interval is
months + days + microseconds (Debezium counts a month as 30.4375 days and a year as
365.25), timestamps keep microseconds and ±infinity, TIME allows 24:00:00, and JSON is
passed on as its text. psycopg's loaders fold these into timedelta/datetime and reject
the edge values, so the text grammar is parsed here. The walsender writes these with
DateStyle ISO and IntervalStyle postgres, which the connector sets on its connection.
"""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass

from cdc.api.data.calendar import days_from_civil

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND

POSITIVE_INFINITY = "infinity"
NEGATIVE_INFINITY = "-infinity"


class TextValueError(ValueError):
    """A value that does not follow PostgreSQL's text output for its type."""


def _bad(kind: str, text: str) -> TextValueError:
    return TextValueError(f"cannot parse {text!r} as PostgreSQL {kind} text output")


# -- booleans, numbers, bytes -----------------------------------------------------------------
def parse_bool(text: str) -> bool:
    if text == "t":
        return True
    if text == "f":
        return False
    raise _bad("boolean", text)


def parse_numeric(text: str) -> decimal.Decimal:
    """Including NaN and (PostgreSQL 14+) ±Infinity, which Decimal represents exactly."""
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise _bad("numeric", text) from None


def parse_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _bad("float", text) from None


_MONEY = re.compile(r"^(-)?[^\d-]*([\d,.' ]+)[^\d]*$")


def parse_money(text: str, fraction_digits: int = 2) -> decimal.Decimal:
    """`$1,234.56` / `-$1.00` → Decimal, assuming lc_monetary uses '.' for decimals."""
    negative = text.startswith("-") or text.startswith("(")
    digits = re.sub(r"[^\d.]", "", text)
    if not digits:
        raise _bad("money", text)
    value = decimal.Decimal(digits).quantize(decimal.Decimal(1).scaleb(-fraction_digits))
    return -value if negative else value


def parse_bytea(text: str) -> bytes:
    """Hex format (`\\x0102`, the default since 9.0) and the legacy escape format."""
    if text.startswith("\\x"):
        try:
            return bytes.fromhex(text[2:])
        except ValueError:
            raise _bad("bytea", text) from None
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if text[i + 1 : i + 2] == "\\":
                out.append(0x5C)
                i += 2
                continue
            out.append(int(text[i + 1 : i + 4], 8))
            i += 4
            continue
        out += c.encode("latin-1")
        i += 1
    return bytes(out)


# -- date and time ----------------------------------------------------------------------------
_DATE = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})( BC)?$")
_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_TZ = re.compile(r"([+-])(\d{2})(?::?(\d{2}))?(?::(\d{2}))?$")
_TIMESTAMP = re.compile(r"^(\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(.*?)( BC)?$")


def _year(text_year: str, bc: str | None) -> int:
    # ISO output writes 1 BC as "0001 BC": astronomical year 0.
    y = int(text_year)
    return 1 - y if bc else y


def parse_date(text: str) -> int | str:
    """Days since the epoch, or the strings 'infinity' / '-infinity'."""
    if text in (POSITIVE_INFINITY, NEGATIVE_INFINITY):
        return text
    m = _DATE.match(text)
    if not m:
        raise _bad("date", text)
    return days_from_civil(_year(m[1], m[4]), int(m[2]), int(m[3]))


def _micros_of(h: str, mi: str, s: str, frac: str | None) -> int:
    return ((int(h) * 60 + int(mi)) * 60 + int(s)) * MICROS_PER_SECOND + int((frac or "0").ljust(6, "0"))


def parse_time(text: str) -> int:
    """Microseconds since midnight; 24:00:00 is a legal PostgreSQL time."""
    m = _TIME.match(text)
    if not m:
        raise _bad("time", text)
    return _micros_of(m[1], m[2], m[3], m[4])


def _offset_seconds(text: str) -> tuple[str, int]:
    m = _TZ.search(text)
    if not m:
        return text, 0
    seconds = int(m[2]) * 3600 + int(m[3] or 0) * 60 + int(m[4] or 0)
    return text[: m.start()], -seconds if m[1] == "-" else seconds


def parse_timetz(text: str) -> tuple[int, int]:
    """(microseconds since local midnight, UTC offset in seconds)."""
    body, offset = _offset_seconds(text)
    return parse_time(body), offset


def parse_timestamp(text: str) -> int | str:
    """Microseconds since the epoch (naive: as written; with a zone: in UTC), or ±infinity."""
    if text in (POSITIVE_INFINITY, NEGATIVE_INFINITY):
        return text
    m = _TIMESTAMP.match(text)
    if not m:
        raise _bad("timestamp", text)
    days = days_from_civil(_year(m[1], m[9]), int(m[2]), int(m[3]))
    micros = days * MICROS_PER_DAY + _micros_of(m[4], m[5], m[6], m[7])
    zone = m[8]
    if zone:
        rest, offset = _offset_seconds(zone)
        if rest.strip():
            raise _bad("timestamptz", text)
        micros -= offset * MICROS_PER_SECOND
    return micros


# -- interval -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    months: int
    days: int
    micros: int

    def approximate_micros(self) -> int:
        """Debezium's MicroDuration: a month is 30.4375 days (a year is 365.25)."""
        return round(self.months * 30.4375 * MICROS_PER_DAY) + self.days * MICROS_PER_DAY + self.micros

    def iso8601(self) -> str:
        """Debezium's `interval.handling.mode=string`: P<y>Y<m>M<d>DT<h>H<m>M<s>S."""
        years, months = divmod(abs(self.months), 12)
        sign_m = "-" if self.months < 0 else ""
        total = abs(self.micros)
        sign_t = "-" if self.micros < 0 else ""
        hours, rem = divmod(total, 3600 * MICROS_PER_SECOND)
        minutes, rem = divmod(rem, 60 * MICROS_PER_SECOND)
        seconds = decimal.Decimal(rem) / MICROS_PER_SECOND
        sec_text = format(seconds.normalize(), "f") if rem else "0"
        return f"P{sign_m}{years}Y{sign_m}{months}M{self.days}DT{sign_t}{hours}H{sign_t}{minutes}M{sign_t}{sec_text}S"


_INTERVAL_PART = re.compile(r"([+-]?\d+) (year|mon|day)s?")
_INTERVAL_TIME = re.compile(r"([+-])?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?")


def parse_interval(text: str) -> Interval:
    """IntervalStyle=postgres output, e.g. `1 year 2 mons -3 days -04:05:06.5`."""
    months = days = micros = 0
    rest = text.strip()
    pos = 0
    while pos < len(rest):
        if rest[pos] == " ":
            pos += 1
            continue
        m = _INTERVAL_PART.match(rest, pos)
        if m:
            n = int(m[1])
            if m[2] == "year":
                months += 12 * n
            elif m[2] == "mon":
                months += n
            else:
                days += n
            pos = m.end()
            continue
        t = _INTERVAL_TIME.match(rest, pos)
        if t:
            value = _micros_of(t[2], t[3], t[4], t[5])
            micros += -value if t[1] == "-" else value
            pos = t.end()
            continue
        raise _bad("interval", text)
    return Interval(months, days, micros)


# -- composite text forms ---------------------------------------------------------------------
def parse_point(text: str) -> tuple[float, float]:
    m = re.match(r"^\(([^,]+),([^)]+)\)$", text)
    if not m:
        raise _bad("point", text)
    return float(m[1]), float(m[2])


def parse_array(text: str, parse_element=None) -> list:
    """One- or multi-dimensional array text (`{1,2,NULL}`, `{{"a b",c}}`); elements via `parse_element`."""
    if text.startswith("["):
        # Explicit bounds (`[0:1]={1,2}`): the lower bound is not representable; keep the values.
        text = text[text.index("=") + 1 :]
    items, end = _parse_array_at(text, 0, parse_element or (lambda s: s))
    if end != len(text):
        raise _bad("array", text)
    return items


def _parse_array_at(text: str, i: int, parse_element) -> tuple[list, int]:
    if text[i : i + 1] != "{":
        raise _bad("array", text)
    i += 1
    out: list = []
    if text[i : i + 1] == "}":
        return out, i + 1
    while True:
        if text[i] == "{":
            sub, i = _parse_array_at(text, i, parse_element)
            out.append(sub)
        elif text[i] == '"':
            j = i + 1
            buf = []
            while text[j] != '"':
                if text[j] == "\\":
                    j += 1
                buf.append(text[j])
                j += 1
            out.append(parse_element("".join(buf)))
            i = j + 1
        else:
            j = i
            while text[j] not in ",}":
                j += 1
            raw = text[i:j]
            out.append(None if raw == "NULL" else parse_element(raw))
            i = j
        if text[i] == ",":
            i += 1
            continue
        if text[i] == "}":
            return out, i + 1
        raise _bad("array", text)


def parse_hstore(text: str) -> dict[str, str | None]:
    """`"a"=>"1", "b"=>NULL` → {"a": "1", "b": None}."""
    out: dict[str, str | None] = {}
    i = 0
    n = len(text)

    def quoted(i: int) -> tuple[str, int]:
        if text[i] != '"':
            raise _bad("hstore", text)
        buf = []
        i += 1
        while text[i] != '"':
            if text[i] == "\\":
                i += 1
            buf.append(text[i])
            i += 1
        return "".join(buf), i + 1

    while i < n:
        while i < n and text[i] in " ,":
            i += 1
        if i >= n:
            break
        key, i = quoted(i)
        if text[i : i + 2] != "=>":
            raise _bad("hstore", text)
        i += 2
        if text[i : i + 4] == "NULL":
            out[key] = None
            i += 4
        else:
            out[key], i = quoted(i)
    return out

"""`cdc verify --key-range COLUMN=LOW..HIGH`: compare only the keys of a range of the first key column.

The option names a column and inclusive bounds, either of which may be left out (`id=100..200`,
`id=..500`, `id=100..`). For each table whose first key column it is, the bounds are parsed as that
column's type (`ColumnRange`) and the range is applied three times, by one definition:

- the truth: a key is in the range when its first column's *canonical* value (normalize.py, the text
  both sides are compared by) lies within the bounds (`ColumnRange.holds`). compare.compare applies it
  to both sides (its `only`), so a row is compared on both sides or on neither;
- the source query: `WHERE col >= %s AND col <= %s`, with parameters, so the database reads the range
  through the key's index (`ColumnRange.source_sql`);
- the target read: a filter on the Delta dataset or the Iceberg scan (file statistics skip the files
  outside the range, rows outside it are never turned into Python objects), a WHERE on a PostgreSQL
  target (`arrow_filter`, `iceberg_filter`, `postgres_sql`).

The pushed-down filters only need to hold every key the truth holds (they may hold more): where a
type's stored form does not compare like its canonical value (a DATETIME(3) truncated to milliseconds,
a DECIMAL sent as a double, a key the lake keeps as text) they are widened or left out, and the truth
decides. Only keys whose order is the same in every engine take a range: integers, decimals, dates,
date-times and timestamps. Text orders by the database's collation on the source and by code point in
the lake, so a text range would compare different keys on the two sides: it is refused.
"""

from __future__ import annotations

import datetime
import decimal
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa

from cdc.api.errors import ConfigException
from cdc.jobs.verify.normalize import Column

OPTION = "--key-range"
RANGE_KINDS = ("int", "uint64", "decimal", "date", "datetime", "timestamptz")
_U63 = 2**63
_U64 = 2**64
_UTC = datetime.UTC
_MS = datetime.timedelta(milliseconds=1)


@dataclass(frozen=True)
class KeyRange:
    """The option as given: a column and the text of its bounds (None: open on that side)."""

    column: str
    low: str | None
    high: str | None

    @property
    def text(self) -> str:
        return f"{self.column}={self.low or ''}..{self.high or ''}"

    def describe(self) -> str:
        """The range in words: `100 ≤ id ≤ 200`, `id ≥ 100`, `id ≤ 500`."""
        if self.low is not None and self.high is not None:
            return f"{self.low} ≤ {self.column} ≤ {self.high}"
        if self.low is not None:
            return f"{self.column} ≥ {self.low}"
        return f"{self.column} ≤ {self.high}"

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column, "low": self.low, "high": self.high}


def parse_key_range(text: str) -> KeyRange:
    """`COLUMN=LOW..HIGH` (either bound may be empty); ConfigException naming the option otherwise."""
    column, eq, bounds = text.partition("=")
    low, dots, high = bounds.partition("..")
    column = column.strip()
    if not eq or not dots or not column:
        raise ConfigException(
            f"{OPTION} {text!r}: write COLUMN=LOW..HIGH with inclusive bounds, e.g. {OPTION} id=100..200 "
            f"(or id=..500, id=100..)",
            OPTION,
        )
    lo, hi = low.strip() or None, high.strip() or None
    if lo is None and hi is None:
        raise ConfigException(
            f"{OPTION} {text!r}: give at least one bound, e.g. {column}=100..200, {column}=..500 or {column}=100..",
            OPTION,
        )
    return KeyRange(column, lo, hi)


class RangeUnusable(Exception):
    """Why a table takes no range (its key, or its key column's type): skipped, or the option's error."""


def _bound(kind: str, text: str, column: Column) -> Any:
    """A bound in the canonical domain of `kind` (what `_canonical` turns a key's canonical text into);
    ValueError saying what it is not."""
    text = text.strip()
    try:
        value = _BOUND_READERS[kind](text)
    except (ValueError, ArithmeticError):
        raise ValueError(_NOT_A[kind]) from None
    if kind == "uint64" and not 0 <= value < _U64:
        raise ValueError("out of the range of BIGINT UNSIGNED")
    if kind == "decimal" and not value.is_finite():
        raise ValueError("not a finite number")
    if kind == "datetime" and value.tzinfo is not None:
        raise ValueError(f"{column.type} values have no time zone")
    if kind == "timestamptz" and value.tzinfo is not None:
        return value.astimezone(_UTC).replace(tzinfo=None)
    return value  # a timestamp bound without an offset is UTC (verify reads the source in UTC)


_BOUND_READERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "uint64": int,
    "decimal": decimal.Decimal,
    "date": datetime.date.fromisoformat,
    "datetime": datetime.datetime.fromisoformat,
    "timestamptz": datetime.datetime.fromisoformat,
}
_NOT_A = {
    "int": "not an integer",
    "uint64": "not an integer",
    "decimal": "not a number",
    "date": "not a date YYYY-MM-DD",
    "datetime": "not a date-time YYYY-MM-DDTHH:MM:SS[.ffffff]",
    "timestamptz": "not a date-time YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM]",
}


_EXAMPLES = {
    "int": "100",
    "uint64": "100",
    "decimal": "10.5",
    "date": "2024-01-31",
    "datetime": "2024-01-31T12:00:00",
    "timestamptz": "2024-01-31T12:00:00Z",
}


def _canonical(kind: str) -> Callable[[str], Any]:
    """Canonical text of a key value (normalize.canon) → the value it is compared by."""
    if kind == "int":
        return int
    if kind == "uint64":  # canonical: the connector's wrapped long; the range is over the unsigned value
        return lambda t: int(t) + _U64 if t.startswith("-") else int(t)
    if kind == "decimal":
        return decimal.Decimal
    if kind == "date":
        return datetime.date.fromisoformat
    if kind == "datetime":
        return datetime.datetime.fromisoformat
    return lambda t: datetime.datetime.fromisoformat(t.removesuffix("Z"))


@dataclass(frozen=True)
class ColumnRange:
    """A KeyRange bound to one table's first key column, its bounds typed as the column's values."""

    given: KeyRange
    column: Column
    low: Any
    high: Any

    @property
    def kind(self) -> str:
        return str(self.column.kind)

    @cached_property
    def _read(self) -> Callable[[str], Any]:
        return _canonical(self.kind)

    def holds(self, canonical: str | None) -> bool:
        """Whether a key whose first column's canonical text is `canonical` is in the range (the truth)."""
        if canonical is None:
            return False
        try:
            value = self._read(canonical)
        except (ValueError, ArithmeticError):
            return False  # an unreadable value ("?…", ±infinity) is in no range, on either side
        if isinstance(value, decimal.Decimal) and value.is_nan():
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    # -- the source --------------------------------------------------------------------------------
    def _source_bounds(self) -> tuple[Any, Any]:
        """The bounds as the source compares them: wide enough for every value the truth holds."""
        low, high = self.low, self.high
        c = self.column
        if self.kind == "datetime" and c.unit == "ms" and high is not None:
            high = high + _MS  # canonical truncates to milliseconds: 12:00:00.0009 counts as 12:00:00.000
        if self.kind == "decimal" and c.decimal_mode == "double":  # canonical: the value as a double
            low = None if low is None else decimal.Decimal(_ulps(float(low), -2))
            high = None if high is None else decimal.Decimal(_ulps(float(high), 2))
        return low, high

    def source_sql(self, expr: str, family: str) -> tuple[str, list[Any]]:
        """`expr >= %s AND expr <= %s` and its parameters, for the source's own reading of `expr`."""
        low, high = self._source_bounds()
        if family == "postgres" and self.kind == "timestamptz":
            low, high = (None if b is None else b.replace(tzinfo=_UTC) for b in (low, high))
        parts: list[str] = []
        params: list[Any] = []
        if low is not None:
            parts.append(f"{expr} >= %s")
            params.append(low)
        if high is not None:
            parts.append(f"{expr} <= %s")
            params.append(high)
        return " AND ".join(parts), params

    # -- the target --------------------------------------------------------------------------------
    def target_bounds(self, arrow_type: pa.DataType) -> list[tuple[Any, Any]] | None:
        """The range as intervals of the values the lake stores in a column of `arrow_type` (their union
        holds every key in the range; None: no such filter, the truth alone decides)."""
        if self.kind == "uint64":
            if not pa.types.is_integer(arrow_type):
                return None
            return _wrapped_intervals(self.low, self.high)
        if self.kind in ("int", "decimal") and pa.types.is_integer(arrow_type):
            return [(_int_floor_ceil(self.low, up=True), _int_floor_ceil(self.high, up=False))]
        if self.kind in ("int", "decimal") and pa.types.is_decimal(arrow_type):
            return [(_quantized(self.low, arrow_type, up=True), _quantized(self.high, arrow_type, up=False))]
        if self.kind in ("int", "decimal") and pa.types.is_floating(arrow_type):
            low = None if self.low is None else _ulps(float(self.low), -2)
            high = None if self.high is None else _ulps(float(self.high), 2)
            return [(low, high)]
        if self.kind == "date" and pa.types.is_date(arrow_type):
            return [(self.low, self.high)]
        if self.kind in ("datetime", "timestamptz") and pa.types.is_timestamp(arrow_type):
            zone = arrow_type.tz is not None
            return [(_stamp(self.low, zone), _stamp(self.high, zone))]
        return None

    def arrow_filter(self, arrow_type: pa.DataType) -> Any:
        """A pyarrow dataset expression on the column (Delta: file statistics prune files), or None."""
        import pyarrow.dataset as ds

        intervals = self.target_bounds(arrow_type)
        if intervals is None:
            return None
        field = ds.field(self.column.name)
        parts = [_between(lo, hi, field.__ge__, field.__le__, operator.and_) for lo, hi in intervals]
        return _union(parts, operator.or_)

    def iceberg_filter(self, arrow_type: pa.DataType) -> Any:
        """A pyiceberg row filter on the column (manifest statistics prune files), or None."""
        from pyiceberg.expressions import And, GreaterThanOrEqual, LessThanOrEqual, Or

        intervals = self.target_bounds(arrow_type)
        if intervals is None:
            return None
        name = self.column.name
        parts = [
            _between(lo, hi, lambda v: GreaterThanOrEqual(name, v), lambda v: LessThanOrEqual(name, v), And)
            for lo, hi in intervals
        ]
        return _union(parts, Or)

    def postgres_sql(self, data_type: str) -> tuple[Any, list[Any]] | None:
        """A WHERE on a PostgreSQL target column of information_schema `data_type` (psycopg.sql), or None."""
        from psycopg import sql

        if data_type == "numeric" and self.kind in ("int", "decimal"):
            intervals: list[tuple[Any, Any]] | None = [(self.low, self.high)]  # exact on both sides
        else:
            arrow_type = _PG_TYPES.get(data_type)
            intervals = None if arrow_type is None else self.target_bounds(arrow_type)
        if intervals is None:
            return None
        ident = sql.Identifier(self.column.name)
        terms: list[Any] = []
        params: list[Any] = []
        for lo, hi in intervals:
            parts = []
            for bound, op in ((lo, ">="), (hi, "<=")):
                if bound is not None:
                    parts.append(sql.SQL("{} " + op + " %s").format(ident))
                    params.append(bound)
            if not parts:
                return None
            terms.append(sql.SQL("(") + sql.SQL(" AND ").join(parts) + sql.SQL(")"))
        return sql.SQL("(") + sql.SQL(" OR ").join(terms) + sql.SQL(")"), params


_PG_TYPES: dict[str, pa.DataType] = {
    "smallint": pa.int16(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "real": pa.float32(),
    "double precision": pa.float64(),
    "date": pa.date32(),
    "timestamp without time zone": pa.timestamp("us"),
    "timestamp with time zone": pa.timestamp("us", tz="UTC"),
}


def _ulps(x: float, n: int) -> float:
    """`x` moved `n` representable doubles (down when negative): room for a value's rounding to a double."""
    for _ in range(abs(n)):
        x = math.nextafter(x, math.inf if n > 0 else -math.inf)
    return x


def _int_floor_ceil(value: Any, up: bool) -> int | None:
    """`value` rounded inward to an integer within a 64-bit column's reach (None: no bound that side)."""
    if value is None:
        return None
    n = int(decimal.Decimal(value).to_integral_value(decimal.ROUND_CEILING if up else decimal.ROUND_FLOOR))
    if (up and n < -_U63) or (not up and n >= _U63):
        return None  # beyond every stored value: no bound needed
    return max(-_U63, min(_U63 - 1, n))  # beyond them on the other side: holds nothing, as the truth says


def _quantized(value: Any, arrow_type: pa.DataType, up: bool) -> decimal.Decimal | None:
    """`value` rounded inward to the column's scale (a stored value has no more digits); None when the
    column cannot hold it (then the bound is not pushed down)."""
    if value is None:
        return None
    step = decimal.Decimal(1).scaleb(-arrow_type.scale)
    context = decimal.Context(prec=decimal.MAX_PREC)
    q = decimal.Decimal(value).quantize(step, decimal.ROUND_CEILING if up else decimal.ROUND_FLOOR, context)
    digits = len(q.as_tuple().digits)
    return q if digits <= arrow_type.precision else None


def _stamp(value: Any, zone: bool) -> Any:
    if value is None:
        return None
    return value.replace(tzinfo=_UTC) if zone else value


def _wrapped_intervals(low: int | None, high: int | None) -> list[tuple[Any, Any]]:
    """An unsigned range as intervals of the connector's wrapped longs (values ≥ 2^63 stored negative)."""
    lo, hi = low or 0, _U64 - 1 if high is None else high
    if hi < _U63:
        return [(lo, hi)]
    if lo >= _U63:
        return [(lo - _U64, hi - _U64)]
    return [(lo, _U63 - 1), (-_U63, hi - _U64)]


Combine = Callable[[Any, Any], Any]


def _between(lo: Any, hi: Any, ge: Callable[[Any], Any], le: Callable[[Any], Any], both: Combine) -> Any:
    """One interval as an engine's expression (`ge`/`le` build its comparisons); None when open both sides."""
    parts = [ge(lo)] if lo is not None else []
    if hi is not None:
        parts.append(le(hi))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else both(parts[0], parts[1])


def _union(parts: list[Any], either: Combine) -> Any:
    """The intervals' union; None (no filter) when one of them is unbounded."""
    if not parts or any(p is None for p in parts):
        return None
    out = parts[0]
    for p in parts[1:]:
        out = either(out, p)
    return out


def bind(given: KeyRange, table: str, keys: list[str], columns: list[Column]) -> ColumnRange:
    """The range for one table; RangeUnusable when the table takes none (the reason says why and what to do),
    ConfigException when a bound is not a value of the column's type."""
    if not columns:
        raise RangeUnusable(f"{table} does not exist in the source database")
    if not keys:
        raise RangeUnusable(
            f"{table} has no primary key and no sink.tables.{table}.keys; set sink.tables.{table}.keys "
            "to the columns that identify a row"
        )
    if keys[0] != given.column:
        where = f"a later key column of {table}" if given.column in keys else f"not a key column of {table}"
        raise RangeUnusable(
            f"{given.column} is {where} (its key: {', '.join(keys)}); a range applies to the first key column: "
            f"{OPTION} {keys[0]}=LOW..HIGH"
        )
    column = next((c for c in columns if c.name == given.column), None)
    if column is None:  # a configured key that is not a column: verify_table says so in its own words
        raise RangeUnusable(f"{given.column} is not a column of {table}")
    if column.kind not in RANGE_KINDS:
        raise RangeUnusable(
            f"{table}.{column.name} is {column.type}: a range needs an integer, decimal, date or timestamp key "
            "(text and other types order differently in the database and in the lake); use --table or --sample"
        )
    kind = str(column.kind)
    bounds = []
    for text in (given.low, given.high):
        try:
            bounds.append(None if text is None else _bound(kind, text, column))
        except (ValueError, ArithmeticError) as e:
            raise ConfigException(
                f"{OPTION} {given.text}: {text!r} is not a value of {table}.{column.name} ({column.type}: {e}); "
                f"write it as e.g. {_EXAMPLES[kind]}",
                OPTION,
            ) from None
    low, high = bounds
    if low is not None and high is not None and low > high:
        raise ConfigException(f"{OPTION} {given.text}: the low bound is above the high bound; write LOW..HIGH", OPTION)
    return ColumnRange(given, column, low, high)

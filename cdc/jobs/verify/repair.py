"""`cdc verify --repair`: a table's differing keys as Debezium `execute-snapshot` signals.

Each signal is an incremental snapshot of one table whose `additional-conditions` filter selects
exactly the keys to read again: `k IN (…)`, or `(k1, k2) IN ((…), (…))` for a composite key (a
row-value IN, which MariaDB/MySQL and PostgreSQL both accept), plus `k BETWEEN a AND b` for a run
of consecutive integer keys of a one-column integer key (every integer of the run is a key to
read, so the range selects nothing more). The literals are the database driver's own quoting on
a live connection of the source (pymysql's `escape`, which follows the server's
NO_BACKSLASH_ESCAPES; psycopg's `sql.Literal`), of the values read from the source itself: a
key's canonical text is never parsed back into SQL. Binary keys are hex literals on MySQL (no
escaping at all), TIMESTAMP keys `FROM_UNIXTIME(…)` (the connector's session time zone may not
be UTC); a PostgreSQL value read as text (enum, uuid, inet …) is cast back to its column's type.

What a snapshot read cannot heal is reported instead of signalled:
- extra keys (in the lake, not in the source): an incremental snapshot reads rows that exist, so
  for a key with no row it emits nothing, as Debezium's does;
- keys with a NULL part (`IN` never selects NULL), or of a type a literal cannot select exactly
  (FLOAT/DOUBLE, JSON, arrays …).

A signal must fit Debezium's signal table (`data VARCHAR(2048)`, checked whatever the channel:
cdc.runtime.signal_delivery), so the keys are packed into as many signals as that takes, at most
KEYS_PER_SIGNAL keys each. Debezium queues one incremental snapshot per table at a time (a second
`execute-snapshot` for a queued table is dropped), so a table's signals are sent one after the
other (repair_run.py), never together.
"""

from __future__ import annotations

import datetime
import json
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc.jobs.verify.compare import TableResult, _key
from cdc.jobs.verify.normalize import Column, converter
from cdc.runtime.signal_delivery import SIGNAL_COLUMN_LIMITS, Signal, execute_snapshot

KEYS_PER_SIGNAL = 1000
"""At most this many keys (a BETWEEN run counts as one) in one signal's condition, so that no
chunk query of the connector carries a huge predicate. The signal table's `data VARCHAR(2048)`
usually bounds a signal first: some hundreds of integer keys, fewer long string keys."""

DATA_LIMIT = SIGNAL_COLUMN_LIMITS["data"]
_MIN_RUN = 3  # consecutive integers that become one BETWEEN (two keys are shorter as a list)
# Kinds a literal selects exactly (floats compare approximately; JSON, arrays have no usable equality).
_EXACT = frozenset(
    {"int", "uint64", "decimal", "text", "set", "bytes", "date", "datetime", "timestamptz", "time", "timetz", "bool"}
)
_EXACT_MYSQL = _EXACT | {"bits"}
_EXACT_POSTGRES = _EXACT | {"bits"}
_EPOCH = datetime.datetime(1970, 1, 1)


class Literals:
    """SQL text of identifiers and values for one source database, quoted by its driver."""

    family = ""

    def ident(self, name: str) -> str:
        raise NotImplementedError

    def literal(self, value: Any, column: Column) -> str:
        raise NotImplementedError

    def exact(self, column: Column) -> bool:
        raise NotImplementedError


class MySqlLiterals(Literals):
    """pymysql's quoting on a live connection (`conn.escape` follows NO_BACKSLASH_ESCAPES)."""

    family = "mysql"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def ident(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def literal(self, value: Any, column: Column) -> str:
        if isinstance(value, bytes | bytearray | memoryview):
            raw = bytes(value)
            if column.kind in ("bits", "bool"):  # BIT(n) as its number
                return str(int.from_bytes(raw, "big"))
            return f"X'{raw.hex().upper()}'"  # exact bytes, nothing to escape, no charset involved
        if column.kind == "timestamptz" and isinstance(value, datetime.datetime):
            # Read in UTC (cdc verify's session); FROM_UNIXTIME is the same instant in any session time zone.
            delta = value.replace(tzinfo=None) - _EPOCH
            seconds = delta.days * 86400 + delta.seconds
            return f"FROM_UNIXTIME({seconds}.{delta.microseconds:06d})"
        if isinstance(value, bool):
            return "1" if value else "0"
        return str(self.conn.escape(value))

    def exact(self, column: Column) -> bool:
        return column.kind in _EXACT_MYSQL


class PostgresLiterals(Literals):
    """psycopg's `sql.Literal` / `sql.Identifier` rendered on a live connection."""

    family = "postgres"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def ident(self, name: str) -> str:
        from psycopg import sql

        return sql.Identifier(name).as_string(self.conn)

    def literal(self, value: Any, column: Column) -> str:
        from psycopg import sql

        if isinstance(value, memoryview | bytearray):
            value = bytes(value)
        text = sql.Literal(value).as_string(self.conn).strip()
        if column.select is not None:  # read through a cast (enum, uuid, bit … as text): cast it back
            return f"CAST({text} AS {column.type})"
        return text

    def exact(self, column: Column) -> bool:
        return column.kind in _EXACT_POSTGRES


@dataclass
class TablePlan:
    """One table's repair: the conditions to send (one signal each, in order) and what no signal heals."""

    table: str  # the source table, db.table or schema.table
    before: TableResult
    keys: list[str] = field(default_factory=list)  # canonical keys the conditions select
    conditions: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)  # keys each condition selects
    extra: list[str] = field(default_factory=list)  # only in the lake: not repairable by a snapshot
    gone: list[str] = field(default_factory=list)  # to re-read, but no longer in the source
    unselectable: list[str] = field(default_factory=list)  # a NULL part, or a type no literal selects
    why_unselectable: str | None = None

    @property
    def checked_keys(self) -> set[str]:
        """The keys to verify again afterwards."""
        return {*self.keys, *self.extra, *self.gone, *self.unselectable}


def wanted_keys(result: TableResult) -> tuple[list[str], list[str]]:
    """(keys a snapshot read can heal, extra keys) of a compared table: missing, changed and duplicate
    keys are read again (a duplicate only when the source has it); extra keys have no source row."""
    keys = result.keys or {}
    extra = list(keys.get("extra", []))
    skip = set(extra)
    wanted = [k for kind in ("missing", "changed", "duplicate") for k in keys.get(kind, []) if k not in skip]
    return list(dict.fromkeys(wanted)), extra


def source_values(
    rows: Iterable[Sequence[Any]], key_columns: list[Column], wanted: set[str]
) -> dict[str, tuple[Any, ...]]:
    """The driver's own values of the `wanted` canonical keys, from the source's key columns' rows."""
    convs = [converter(c, False) for c in key_columns]
    found: dict[str, tuple[Any, ...]] = {}
    it = iter(rows)
    try:
        for row in it:
            k = _key([f(v) for f, v in zip(convs, row, strict=True)])
            if k in wanted and k not in found:
                found[k] = tuple(row)
                if len(found) == len(wanted):
                    break
    finally:
        close = getattr(it, "close", None)
        if close is not None:  # a generator holding a server-side cursor: release it now
            close()
    return found


@dataclass
class _Item:
    """One term of a condition: a key (`values`), or a run of integers `low`..`high` (one key column)."""

    keys: list[str]
    text: str


def _items(keys: list[tuple[str, tuple[Any, ...]]], columns: list[Column], lit: Literals) -> list[_Item]:
    """The condition's terms in key order: each key's row value, runs of consecutive integers as BETWEEN."""
    single_int = len(columns) == 1 and columns[0].kind in ("int", "uint64")
    if single_int and all(isinstance(v[0], int) and not isinstance(v[0], bool) for _, v in keys):
        ordered = sorted(keys, key=lambda kv: kv[1][0])
        out: list[_Item] = []
        i = 0
        while i < len(ordered):
            j = i
            while j + 1 < len(ordered) and ordered[j + 1][1][0] == ordered[j][1][0] + 1:
                j += 1
            if j - i + 1 >= _MIN_RUN:
                low, high = ordered[i][1][0], ordered[j][1][0]
                text = f"{lit.literal(low, columns[0])} AND {lit.literal(high, columns[0])}"
                out.append(_Item([k for k, _ in ordered[i : j + 1]], "BETWEEN " + text))
            else:
                out.extend(_Item([k], lit.literal(v[0], columns[0])) for k, v in ordered[i : j + 1])
            i = j + 1
        return out
    terms = []
    for k, values in keys:
        parts = [lit.literal(v, c) for v, c in zip(values, columns, strict=True)]
        terms.append(_Item([k], parts[0] if len(parts) == 1 else f"({', '.join(parts)})"))
    return terms


def condition(items: list[_Item], names: list[str], lit: Literals) -> str:
    """`k IN (…)` / `(k1, k2) IN ((…), …)`, OR `k BETWEEN a AND b` for runs; parenthesized when ORed."""
    cols = ", ".join(lit.ident(n) for n in names)
    target = cols if len(names) == 1 else f"({cols})"
    points = [i.text for i in items if not i.text.startswith("BETWEEN ")]
    parts = [f"{target} IN ({', '.join(points)})"] if points else []
    parts += [f"{target} {i.text}" for i in items if i.text.startswith("BETWEEN ")]
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def collection_regex(table: str) -> str:
    """The table as the regex Debezium matches `data-collections` and `data-collection` with."""
    return re.escape(table)


def signal_for(table: str, cond: str, signal_id: str | None = None) -> Signal:
    """The incremental `execute-snapshot` of `table` restricted to `cond`."""
    return execute_snapshot([collection_regex(table)], "incremental", cond, signal_id or f"repair-{uuid.uuid4().hex}")


def _escaped_len(text: str) -> int:
    return len(json.dumps(text)) - 2  # the text inside the signal's JSON data (ensure_ascii, as sent)


def pack(
    items: list[_Item],
    names: list[str],
    lit: Literals,
    table: str,
    limit: int = DATA_LIMIT,
    max_keys: int = KEYS_PER_SIGNAL,
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The items in conditions that fit one signal each: ([(condition, its keys)], keys too long for any)."""
    # The signal's data text is additive in its parts: measure it once empty, then per term.
    overhead = len(signal_for(table, "\x00").data_text() or "") - _escaped_len("\x00")
    cols = ", ".join(lit.ident(n) for n in names)
    target = cols if len(names) == 1 else f"({cols})"
    out: list[tuple[str, list[str]]] = []
    too_long: list[str] = []
    chunk: list[_Item] = []
    size = 0

    def flush() -> None:
        nonlocal chunk, size
        if chunk:
            out.append((condition(chunk, names, lit), [k for i in chunk for k in i.keys]))
        chunk, size = [], 0

    for item in items:
        # Upper bound of what the item adds: its own part, as a list entry or as an ORed BETWEEN.
        cost = _escaped_len(item.text) + _escaped_len(f" OR {target} IN ()") + 4
        if overhead + cost + _escaped_len(f"({target} IN ())") > limit:
            too_long.extend(item.keys)
            continue
        if chunk and (overhead + size + cost > limit or len(chunk) >= max_keys):
            flush()
        if not chunk:
            size = _escaped_len(f"({target} IN ())")
        chunk.append(item)
        size += cost
    flush()
    for text, _ in out:  # the bound above is conservative; the real signal must fit
        if signal_for(table, text).problem() is not None:
            raise ValueError(f"a repair condition of {table} does not fit a signal ({len(text)} characters)")
    return out, too_long


def plan_table(
    result: TableResult,
    names: list[str],
    key_columns: list[Column],
    key_rows: Callable[[], Iterable[Sequence[Any]]],
    lit: Literals,
    max_keys: int = KEYS_PER_SIGNAL,
) -> TablePlan:
    """The conditions that re-read `result`'s healable keys, and what no snapshot heals.

    `key_rows()`: the source table's rows of `key_columns` (read only when there are keys to heal)."""
    plan = TablePlan(result.source, result)
    wanted, plan.extra = wanted_keys(result)
    if not wanted:
        return plan
    inexact = [c for c in key_columns if not lit.exact(c)]
    if inexact:
        plan.unselectable = wanted
        plan.why_unselectable = (
            f"key column {inexact[0].name} ({inexact[0].type}) cannot be selected exactly by a literal"
        )
        return plan
    values = source_values(key_rows(), key_columns, set(wanted))
    plan.gone = [k for k in wanted if k not in values]
    with_null = [k for k in wanted if k in values and any(v is None for v in values[k])]
    if with_null:
        plan.unselectable = with_null
        plan.why_unselectable = "a key column is NULL, which no IN condition selects"
    null = set(with_null)
    keyed = [(k, values[k]) for k in wanted if k in values and k not in null]
    chunks, too_long = pack(_items(keyed, key_columns, lit), names, lit, result.source, max_keys=max_keys)
    if too_long:
        plan.unselectable.extend(too_long)
        plan.why_unselectable = (plan.why_unselectable + "; " if plan.why_unselectable else "") + (
            f"a key's literal does not fit the signal table's data column ({DATA_LIMIT} characters)"
        )
    for text, keys in chunks:
        plan.conditions.append(text)
        plan.counts.append(len(keys))
        plan.keys.extend(keys)
    return plan

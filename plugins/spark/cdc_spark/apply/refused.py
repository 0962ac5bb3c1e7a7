"""Rows a target refuses for their values, under errors.tolerance=all: Kafka Connect's errant
record reporting (KIP-610, a sink task's put() failures) for this sink.

Under errors.tolerance=none such a row stops the query (ValueOutOfRangeError,
WarehouseValueError), and the batch is replayed from the checkpoint as it is on every run.
Under all, the rows are found the way those errors find them, left out of the apply (the
target keeps the key's previous row), and their events go to the dead-letter table and topic
(the engine, deadletter.py) with a WARNING naming the table, key, column and cause:

- Delta and Iceberg (`lake_cells`, on the driver): each value `for_lake` cannot cast (a
  bisection, as its error path finds the first) and each date or timestamp outside the
  years 1-9999 (what `check_lake_range` refuses);
- PostgreSQL (postgres.py, in each Spark partition): the NUL check and the lines COPY refuses.

A delete's old row image is not stored (a hard delete keeps the key and sequence, a soft one
the row), so a delete whose image holds such a value is applied with that value left out
(null): refusing it would keep a deleted row alive. A refused key value refuses the row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.apply.arrowutil import lake_type
from cdc_spark.apply.errors import Refused, ValueOutOfRangeError
from cdc_spark.apply.evolution import _LAKE_DAYS, _PER_DAY
from cdc_spark.decode.flatbatch import FlatBatch

# apply_partition's rows (PostgreSQL): per table a count, and per refused row its event's
# position, problem and error class (`rows` null); `deleted`: a delete applied without the value.
PARTITION_RESULT = (
    "topic string, rows bigint, partition int, offset bigint, problem string, error_class string, deleted boolean"
)


@dataclass(frozen=True)
class Cell:
    """One value the lake refuses: its row, its column, and the error it raises under tolerance none."""

    row: int
    column: str
    error: ValueOutOfRangeError


def uncastable(values: pa.Array | pa.ChunkedArray, to: pa.DataType) -> list[tuple[int, str]]:
    """Every value of `values` that does not cast to `to`, with the cast's error: a bisection
    into the halves that fail (a cast of the whole column when all values cast)."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values

    def failure(lo: int, hi: int) -> str | None:
        try:
            array.slice(lo, hi - lo).cast(to)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            return str(e)
        return None

    found: list[tuple[int, str]] = []
    pending = [(0, len(array))]
    while pending:
        lo, hi = pending.pop()
        error = failure(lo, hi) if hi > lo else None
        if error is None:
            continue
        if hi - lo == 1:
            found.append((lo, error))
            continue
        mid = (lo + hi) // 2
        pending += [(mid, hi), (lo, mid)]
    return sorted(found)


def outside_lake_years(values: pa.Array | pa.ChunkedArray) -> list[tuple[int, str]]:
    """Every date or timestamp of `values` outside the years 1-9999, with what is wrong with it."""
    t = values.type
    if pa.types.is_date32(t):
        per_day, ints, unit = 1, values.cast(pa.int32()), "days"
    elif pa.types.is_timestamp(t):
        per_day, ints, unit = _PER_DAY[t.unit], values.cast(pa.int64()), t.unit
    else:
        return []
    low, high = _LAKE_DAYS[0] * per_day, (_LAKE_DAYS[1] + 1) * per_day
    outside = pc.fill_null(pc.or_(pc.less(ints, low), pc.greater_equal(ints, high)), False)
    rows = pc.indices_nonzero(outside).to_pylist()
    return [(i, f"{ints[i].as_py()} {unit} since 1970-01-01 is outside 0001-9999") for i in rows]


def lake_cells(table: pa.Table, name: str, keys: Sequence[str]) -> list[Cell]:
    """Every value of `table` (one table's batch) that Delta and Iceberg cannot hold, each with
    the ValueOutOfRangeError naming table `name`, its column and its row's key."""
    cells: dict[tuple[int, str], Cell] = {}
    for f in table.schema:
        column, want = table.column(f.name), lake_type(f.type)
        found = uncastable(column, want) if want != f.type else []
        for row, cause in [*found, *outside_lake_years(column)]:
            if (row, f.name) not in cells:
                error = ValueOutOfRangeError(name, f.name, want, cause, row=table.slice(row, 1))
                error.name_key(keys)
                cells[(row, f.name)] = Cell(row, f.name, error)
    return sorted(cells.values(), key=lambda c: (c.row, c.column))


def rows_left_out(table: pa.Table, cells: Iterable[Cell], keys: Sequence[str]) -> list[int]:
    """The rows of `cells` that are refused whole: all but deletes, and any with a refused key value."""
    deleted = table.column("__deleted").to_pylist() if "__deleted" in table.column_names else None
    return sorted({c.row for c in cells if c.column in keys or deleted is None or not deleted[c.row]})


def blank(table: pa.Table, cells: Iterable[Cell]) -> pa.Table:
    """`table` with the values of `cells` set to null (deletes' old row images)."""
    by_column: dict[str, list[int]] = {}
    for c in cells:
        by_column.setdefault(c.column, []).append(c.row)
    for name, rows in by_column.items():
        at = table.schema.get_field_index(name)
        column = table.column(name).combine_chunks()
        hit = pc.is_in(pa.array(range(table.num_rows), pa.int64()), value_set=pa.array(rows, pa.int64()))
        table = table.set_column(at, table.schema.field(name), pc.if_else(hit, pa.nulls(1, column.type)[0], column))
    return table


def partition_rows(topics: list[str], counts: list[int], parked: list[tuple[str, int, int, Refused]]) -> pa.RecordBatch:
    """apply_partition's result (PARTITION_RESULT): the counts, then one row per refused row
    (`parked`: its topic, its event's partition and offset, and the Refused)."""
    n = len(topics)
    return pa.RecordBatch.from_pydict(
        {
            "topic": topics + [t for t, _, _, _ in parked],
            "rows": counts + [None] * len(parked),
            "partition": [None] * n + [p for _, p, _, _ in parked],
            "offset": [None] * n + [o for _, _, o, _ in parked],
            "problem": [None] * n + [r.problem for *_, r in parked],
            "error_class": [None] * n + [r.error_class for *_, r in parked],
            "deleted": [None] * n + [r.deleted for *_, r in parked],
        },
        schema=pa.schema(
            [
                ("topic", pa.string()),
                ("rows", pa.int64()),
                ("partition", pa.int32()),
                ("offset", pa.int64()),
                ("problem", pa.string()),
                ("error_class", pa.string()),
                ("deleted", pa.bool_()),
            ]
        ),
    )


@dataclass(frozen=True)
class Screened:
    """One table's batch screened for the lake (`screen_lake`): the rows kept and their events."""

    flat: FlatBatch
    rows: pa.Table  # the events of `flat`'s rows (row i from event i when they line up)
    refused: list[Refused]  # rows left out, by their row in the events given to screen_lake
    blanked: list[str]  # deletes applied without a value of their old row: each one's problem


def screen_lake(table: str, rows: pa.Table, flat: FlatBatch, reflatten: Callable[[pa.Table], FlatBatch]) -> Screened:
    """Under errors.tolerance=all: `flat` (one table's batch, row i from event i of `rows`)
    without the rows the lake refuses for their values, and with the refused values of deletes'
    old rows left out; `reflatten` flattens the events kept. Where the rows do not line up with
    their events, nothing is screened: the error stops the query instead."""
    if flat.table.num_rows != rows.num_rows:
        return Screened(flat, rows, [], [])
    cells = lake_cells(flat.table, table, flat.key_columns)
    out = rows_left_out(flat.table, cells, flat.key_columns)
    refused: list[Refused] = []
    if out:
        refused = [Refused.of(row, next(c.error for c in cells if c.row == row)) for row in out]
        keep = pc.invert(pc.is_in(pa.array(range(rows.num_rows), pa.int64()), value_set=pa.array(out, pa.int64())))
        rows = rows.filter(keep)
        flat = reflatten(rows)
        if flat.table.num_rows != rows.num_rows:
            return Screened(flat, rows, refused, [])
        cells = lake_cells(flat.table, table, flat.key_columns)
        if rows_left_out(flat.table, cells, flat.key_columns):
            return Screened(flat, rows, refused, [])  # not expected: the error stops the query
    blanked = [c.error.problem for c in cells]
    if cells:
        flat = FlatBatch(blank(flat.table, cells), flat.key_columns, flat.unchanged)
    return Screened(flat, rows, refused, blanked)

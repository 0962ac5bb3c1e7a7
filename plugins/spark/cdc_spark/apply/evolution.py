"""Schema evolution rules shared by the targets: add new columns, keep dropped ones
(nullable), take narrower values into wider columns, and refuse anything else with
`SchemaEvolutionError` (`TypeWideningError` when only the lake cannot widen in place)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.apply.errors import SchemaEvolutionError, TypeWideningError, ValueOutOfRangeError

_INT_ORDER = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
_FLOAT_ORDER = [pa.float32(), pa.float64()]


def _small(t: pa.DataType) -> pa.DataType:
    """Large and regular string/binary are one logical type (Iceberg reads back large_*)."""
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    return t


def widens(old: pa.DataType, new: pa.DataType) -> bool:
    """True when values of `new` fit the existing column type `old` without loss."""
    old, new = _small(old), _small(new)
    if old == new or pa.types.is_null(new):
        return True
    for order in (_INT_ORDER, _FLOAT_ORDER):
        if old in order and new in order:
            return order.index(new) <= order.index(old)
    if pa.types.is_integer(new) and pa.types.is_floating(old) and new.bit_width < 32:
        return True
    if pa.types.is_timestamp(old) and pa.types.is_timestamp(new):
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        # decimal(10,2) values fit decimal(12,4) exactly: no more integer digits, no more scale.
        return new.scale <= old.scale and new.precision - new.scale <= old.precision - old.scale
    return False


def is_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """int → a wider int, float → double, decimal(p,s) → more integer digits or more scale: lossless,
    but a type change."""
    old, new = _small(old), _small(new)
    for order in (_INT_ORDER, _FLOAT_ORDER):
        if old in order and new in order:
            return order.index(new) > order.index(old)
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return not widens(old, new) and new.scale >= old.scale
    return False


# The years Delta and Iceberg hold (Delta's protocol: 0001-01-01 to 9999-12-31; pyiceberg
# computes column statistics with Python's datetime, which has the same range).
_LAKE_DAYS = (-719_162, 2_932_896)
_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def check_lake_range(table_name: str, table: pa.Table) -> None:
    """Refuse dates and timestamps outside the years 1-9999 with ValueOutOfRangeError, which names
    the table, the column and the first such row, and says what to do (delta-rs panics on them,
    pyiceberg overflows)."""
    for f in table.schema:
        t = f.type
        if pa.types.is_date32(t):
            per_day, ints = 1, table.column(f.name).cast(pa.int32())
        elif pa.types.is_timestamp(t):
            per_day, ints = _PER_DAY[t.unit], table.column(f.name).cast(pa.int64())
        else:
            continue
        bounds = pc.min_max(ints)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if lo is None or (lo >= _LAKE_DAYS[0] * per_day and hi < (_LAKE_DAYS[1] + 1) * per_day):
            continue
        low, high = _LAKE_DAYS[0] * per_day, (_LAKE_DAYS[1] + 1) * per_day
        outside = pc.or_(pc.less(ints, low), pc.greater_equal(ints, high))
        row = pc.index(outside, True).as_py()  # the first such row, whose key the message names
        bad = ints[row].as_py()
        raise ValueOutOfRangeError(
            table_name,
            f.name,
            t,
            f"{bad} {'days' if per_day == 1 else t.unit} since 1970-01-01 is outside 0001-9999",
            row=table.slice(row, 1),
        )


def first_uncastable(column: pa.Array | pa.ChunkedArray, to: pa.DataType) -> int | None:
    """The index of the first value of `column` that does not cast to `to` (None: all do).

    For error messages only: a bisection, about two casts of the column in all."""

    def fails(values: pa.Array) -> bool:
        try:
            values.cast(to)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return True
        return False

    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not fails(values):
        return None
    lo, hi = 0, len(values)  # the first failing value is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(values.slice(lo, mid - lo)):
            hi = mid
        else:
            lo = mid
    return lo


def conform(table_name: str, existing: pa.Schema, incoming: pa.Table) -> tuple[pa.Table, list[pa.Field]]:
    """`incoming` cast to the existing column types, plus the fields the target must add.

    Columns the source dropped are filled with nulls so every write has the full schema.
    """
    new_fields: list[pa.Field] = []
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    names = set(incoming.column_names)
    for f in existing:
        if f.name in names:
            col = incoming.column(f.name)
            if is_widening(f.type, col.type):
                raise TypeWideningError(table_name, f.name, f.type, col.type)
            if not widens(f.type, col.type):
                raise SchemaEvolutionError(table_name, f.name, f.type, col.type)
            arrays.append(col.cast(f.type) if col.type != f.type else col)
        else:
            arrays.append(pa.nulls(incoming.num_rows, f.type))
        fields.append(pa.field(f.name, f.type, nullable=True))
    for f in incoming.schema:
        if f.name not in existing.names:
            new_fields.append(pa.field(f.name, f.type, nullable=True))
            arrays.append(incoming.column(f.name))
            fields.append(new_fields[-1])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), new_fields

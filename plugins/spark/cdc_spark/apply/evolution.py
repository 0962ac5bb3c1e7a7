"""Schema evolution rules shared by the targets, under each table's `schema.change.behavior`
(Flink CDC's five values; `conform` is the one place that decides):

- `lenient` (the default): add new columns, keep dropped ones (nullable, filled with NULL),
  take narrower values into wider columns, and change a column to a type that holds every old
  value (`is_widening`: INT to BIGINT, FLOAT to DOUBLE, DECIMAL precision up, DATE to DATETIME);
  anything else stops with `SchemaEvolutionError`. Data is never lost.
- `evolve`: every change is applied to the target: columns added, widened, changed to an
  incompatible type (stored values cast; the target stops when one does not cast) and
  dropped when the table's events no longer carry them.
- `try_evolve`: as `evolve`, except that a change the target cannot make without losing stored
  values (an incompatible type) keeps the old type and converts the incoming values to it
  (NULL where one does not convert, counted in a warning).
- `ignore`: the target keeps its schema: new columns are not written, dropped ones stay
  (NULL), and values of a changed type are written in the old one when they fit; a value that
  does not fit stops the batch (`SchemaChangeRefusedError`: never silently wrong).
- `exception`: any change stops the batch with `SchemaChangeRefusedError`, which names the
  policy that would accept it.

`conform` returns the conformed rows and a `SchemaChange` (columns to add, to retype, to
drop) that the target makes before it writes them: PostgreSQL with ALTER TABLE, Iceberg with
its own type promotion where the spec allows it, otherwise (and on Delta, whose delta-rs has
no type widening) a copy-on-write rewrite of the table in one commit (`schema_rewrite.py`).

A column added at the source with a DEFAULT (`ALTER TABLE t ADD COLUMN vip INT NOT NULL
DEFAULT 0`) holds that default in every row the database had, though it sends no event for
them. The change events carry it in their schema (the decoder keeps it in the field's metadata,
decode/types.py DEFAULT), and the change's `filled` has it: the target writes it into the rows
it stored before the column existed (Delta and Iceberg rewrite them, PostgreSQL adds the
column with that DEFAULT), so the table equals the database; the batch's own rows keep the
values their events have. A tombstone table holds only keys and is never filled.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.apply.errors import SchemaChangeRefusedError, SchemaEvolutionError, ValueOutOfRangeError
from cdc_spark.decode.types import DEFAULT, TIME_UNIT, default_of, time_factor, time_unit, with_default

log = logging.getLogger(__name__)

# schema.change.behavior, as Flink CDC names its values
EXCEPTION, EVOLVE, TRY_EVOLVE, LENIENT, IGNORE = "exception", "evolve", "try_evolve", "lenient", "ignore"
BEHAVIORS = (EXCEPTION, EVOLVE, TRY_EVOLVE, LENIENT, IGNORE)
DEFAULT_BEHAVIOR = LENIENT

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


# Decimal digits an integer type's values need: int64 (BIGINT) fits DECIMAL(20,0) (BIGINT
# UNSIGNED under bigint.unsigned.handling.mode=precise).
_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


def is_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """A type change that holds every value of the old type: int → a wider int, float → double,
    decimal(p,s) → more integer digits and no less scale, int → a decimal with room for it,
    date → timestamp (MySQL DATE → DATETIME), timestamp → a finer unit."""
    old, new = _small(old), _small(new)
    for order in (_INT_ORDER, _FLOAT_ORDER):
        if old in order and new in order:
            return order.index(new) > order.index(old)
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return (
            not widens(old, new) and new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
        )
    if pa.types.is_integer(old) and pa.types.is_decimal(new):
        return new.precision - new.scale >= _INT_DIGITS[old.bit_width]
    if pa.types.is_integer(old) and pa.types.is_floating(new):
        return new.bit_width == 64 and old.bit_width <= 32
    return pa.types.is_date(old) and pa.types.is_timestamp(new)


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


@dataclass(frozen=True)
class SchemaChange:
    """What the target changes before it writes a batch: columns to add, existing columns to give a
    new type (the field with its new type), columns to drop, and the added columns whose stored
    rows take the column's DEFAULT (`filled`: column → value in the column's type). Empty: nothing."""

    added: tuple[pa.Field, ...] = ()
    retyped: tuple[pa.Field, ...] = ()
    dropped: tuple[str, ...] = ()
    filled: tuple[tuple[str, pa.Scalar], ...] = ()
    # retyped time-of-day columns whose stored values are multiplied to the new unit (TIME(3) in
    # ms → TIME(6) in us: 1000)
    scaled: tuple[tuple[str, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.retyped or self.dropped)

    @property
    def rewrites(self) -> bool:
        """Whether stored values change (a new type, a dropped column, an added column's DEFAULT
        written into the stored rows), not only the schema."""
        return bool(self.retyped or self.dropped or self.filled)

    def scale(self, name: str) -> int:
        """What the stored values of column `name` are multiplied by (1: nothing)."""
        return dict(self.scaled).get(name, 1)

    def fill(self, name: str) -> pa.Scalar | None:
        """The DEFAULT the stored rows take in the added column `name`, or None (NULL)."""
        return dict(self.filled).get(name)

    def reported(self, schema: pa.Schema) -> pa.Schema:
        """`schema` (the conformed rows') with each filled column's DEFAULT in its field metadata:
        what a task reports to the driver (lake_tasks.py), which reads it back with decode/types.py `default_of`."""
        return pa.schema([with_default(f, self.fill(f.name)) for f in schema])

    def schema_after(self, existing: pa.Schema) -> pa.Schema:
        """`existing` with this change made: retyped in place, dropped removed, added at the end."""
        retyped = {f.name: f for f in self.retyped}
        fields = [retyped.get(f.name, f) for f in existing if f.name not in self.dropped]
        return pa.schema([*fields, *self.added])

    def describe(self) -> str:
        """One line for the log: `added c (int64); c int32 → int64; dropped d`."""
        parts = [
            f"added {f.name} ({f.type})" + (f" filled with {d}" if (d := self.fill(f.name)) is not None else "")
            for f in self.added
        ]
        parts += [f"retyped {f.name} to {f.type}" for f in self.retyped]
        parts += [f"dropped {name}" for name in self.dropped]
        return "; ".join(parts)


def _is_meta(name: str) -> bool:
    """The sink's own columns (`__seq`, `__deleted`, `__valid_from`, ...): never a schema change."""
    return name.startswith("__")


def _refuse(table: str, column: str, old: object, new: object, behavior: str, accept: str) -> SchemaChangeRefusedError:
    return SchemaChangeRefusedError(table, column, old, new, behavior, accept)


def _in_old_type(table: str, name: str, col: pa.ChunkedArray | pa.Array, to: pa.DataType, behavior: str) -> pa.Array:
    """`col`'s values in the column's old type `to` (ignore): refused when one does not fit."""
    try:
        return col.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        row = first_uncastable(col, to)
        value = col[row].as_py() if row is not None else None
        raise SchemaChangeRefusedError(table, name, to, col.type, behavior, LENIENT, value=value) from None


def converted(table: str, name: str, col: pa.ChunkedArray | pa.Array, to: pa.DataType) -> pa.Array:
    """`col` in the old type `to` (try_evolve): values that do not convert become NULL, counted in a
    warning."""
    try:
        return col.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    values = col.to_pylist()
    out, lost = [], 0
    for v in values:
        try:
            out.append(pa.array([v]).cast(to)[0].as_py() if v is not None else None)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            out.append(None)
            lost += 1
    log.warning(
        "table %s: column %r keeps its type %s (schema.change.behavior=try_evolve); %d incoming %s value(s) did "
        "not convert and are written as NULL",
        table,
        name,
        to,
        lost,
        col.type,
    )
    return pa.array(out, to)


def _stored_rows_default(table: str, existing: pa.Schema, added: pa.Field) -> pa.Scalar | None:
    """The DEFAULT the rows `table` already holds take in the added column, or None: only for a
    table that existed (a new one has no stored rows) and a source column that has one."""
    if not existing.names or _is_meta(added.name):
        return None
    default = default_of(added)
    if default is None and DEFAULT in (added.metadata or {}):
        log.warning(
            "table %s: the DEFAULT of the new column %r does not convert to %s; the rows stored before it "
            "hold NULL there (the source's hold the DEFAULT): re-snapshot the table to fill them",
            table,
            added.name,
            added.type,
        )
    return default


def conform(
    table_name: str, existing: pa.Schema, incoming: pa.Table, behavior: str = DEFAULT_BEHAVIOR, drops: bool = True
) -> tuple[pa.Table, SchemaChange]:
    """`incoming` in the table's schema after the change `behavior` lets through, and that change.

    Columns the source dropped are filled with nulls (kept) or left out (dropped) so every
    write has the full schema. A column added to a table that existed before, whose field
    carries the column's DEFAULT (decode/types.py), is `filled` with it in the stored rows. A
    behavior that refuses the change raises `SchemaChangeRefusedError`; an incompatible type
    under `lenient` `SchemaEvolutionError`. The conformed rows' fields carry no metadata.
    `drops=False`: a column the rows lack is kept (NULL) under every behavior but exception: a
    Spark task sees only its buckets' events, so whether the batch's events still carry a
    column is the driver's to decide (lake_parallel.py drops it after the commit).
    """
    added: list[pa.Field] = []
    filled: list[tuple[str, pa.Scalar]] = []
    scaled: list[tuple[str, int]] = []
    retyped: list[pa.Field] = []
    dropped: list[str] = []
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    names = set(incoming.column_names)
    for f in existing:
        if f.name not in names:
            if _is_meta(f.name) or behavior in (LENIENT, IGNORE) or (behavior != EXCEPTION and not drops):
                arrays.append(pa.nulls(incoming.num_rows, f.type))
                fields.append(pa.field(f.name, f.type, nullable=True))
            elif behavior == EXCEPTION:
                raise _refuse(table_name, f.name, f.type, "dropped", behavior, LENIENT)
            else:  # evolve, try_evolve: the target drops it
                dropped.append(f.name)
            continue
        col = incoming.column(f.name)
        unit = time_unit(incoming.schema.field(f.name))
        if unit is not None and pa.types.is_integer(f.type) and pa.types.is_integer(col.type):
            stored = b"ms" if f.type.bit_width <= 32 else b"us"  # Time is int32 ms; MicroTime int64 us
            if unit != stored:
                arrays.append(_time_in(table_name, f, col, unit, stored, behavior, retyped, scaled))
                fields.append(retyped[-1] if retyped and retyped[-1].name == f.name else pa.field(f.name, f.type))
                continue
        if widens(f.type, col.type):
            arrays.append(col.cast(f.type) if col.type != f.type else col)
            fields.append(pa.field(f.name, f.type, nullable=True))
            continue
        lossless = is_widening(f.type, col.type)
        if behavior == EXCEPTION:
            raise _refuse(table_name, f.name, f.type, col.type, behavior, LENIENT if lossless else EVOLVE)
        if behavior == IGNORE:
            arrays.append(_in_old_type(table_name, f.name, col, f.type, behavior))
            fields.append(pa.field(f.name, f.type, nullable=True))
            continue
        if lossless or behavior == EVOLVE:
            retyped.append(pa.field(f.name, col.type, nullable=True))
            arrays.append(col)
            fields.append(retyped[-1])
            continue
        if behavior == TRY_EVOLVE:
            arrays.append(converted(table_name, f.name, col, f.type))
            fields.append(pa.field(f.name, f.type, nullable=True))
            continue
        raise SchemaEvolutionError(table_name, f.name, f.type, col.type)  # lenient, incompatible
    for f in incoming.schema:
        if f.name in existing.names:
            continue
        if not _is_meta(f.name) and existing.names and behavior == EXCEPTION:
            raise _refuse(table_name, f.name, "absent", f.type, behavior, LENIENT)
        if not _is_meta(f.name) and existing.names and behavior == IGNORE:
            continue
        added.append(pa.field(f.name, f.type, nullable=True))
        arrays.append(incoming.column(f.name))
        fields.append(added[-1])
        default = _stored_rows_default(table_name, existing, f)
        if default is not None:
            filled.append((f.name, default))
    change = SchemaChange(tuple(added), tuple(retyped), tuple(dropped), tuple(filled), tuple(scaled))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), change


def in_coarser_unit(
    table: str, name: str, col: pa.Array | pa.ChunkedArray, unit: bytes, stored: bytes, old_type: object
) -> pa.Array | pa.ChunkedArray:
    """Time-of-day values in `unit` as int64 in the coarser `stored` unit the column keeps
    (schema.change.behavior=ignore), or SchemaChangeRefusedError naming the first value that is
    not a whole number of it (12:00:00.000123 has no milliseconds form)."""
    factor = time_factor(stored, unit)
    col = col.cast(pa.int64())
    coarse = pc.divide(col, factor)
    if not pc.all(pc.fill_null(pc.equal(pc.multiply(coarse, factor), col), True)).as_py():
        raise SchemaChangeRefusedError(
            table, name, old_type, f"{col.type} ({unit.decode()})", IGNORE, LENIENT, value=_first_inexact(col, factor)
        )
    return coarse


def _first_inexact(col: pa.Array | pa.ChunkedArray, factor: int) -> object:
    """The first value of `col` that `factor` does not divide (error messages only)."""
    return next((v for v in col.to_pylist() if v is not None and v % factor), None)


def _time_in(
    table: str,
    existing: pa.Field,
    col: pa.ChunkedArray,
    unit: bytes,
    stored: bytes,
    behavior: str,
    retyped: list[pa.Field],
    scaled: list[tuple[str, int]],
) -> pa.Array | pa.ChunkedArray:
    """A time-of-day column whose precision changed (PostgreSQL TIME(3) ↔ TIME(6) under adaptive
    precision: Debezium's Time in ms as int32, MicroTime in us as int64): the incoming values in
    the unit the column will hold. A finer unit is a widening: the column takes it and its stored
    values are `scaled` (appended to `retyped`/`scaled`); a coarser one is multiplied into the
    stored unit. A plain integer cast would be off by a factor of 1000."""
    name = existing.name
    if time_factor(b"ms", unit) > time_factor(b"ms", stored):  # finer: ms → us
        if behavior == EXCEPTION:
            raise _refuse(
                table, name, f"{existing.type} ({stored.decode()})", f"{col.type} ({unit.decode()})", behavior, LENIENT
            )
        if behavior != IGNORE:
            retyped.append(pa.field(name, pa.int64(), nullable=True, metadata={TIME_UNIT: unit}))
            scaled.append((name, time_factor(stored, unit)))
            return col.cast(pa.int64())
        return in_coarser_unit(table, name, col, unit, stored, existing.type).cast(existing.type)  # ignore
    return pc.multiply_checked(col.cast(existing.type), pa.scalar(time_factor(unit, stored), existing.type))

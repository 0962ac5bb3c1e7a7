"""A lake table's schema change (evolution.SchemaChange) made before a batch is written to it.

- **Iceberg:** new columns, dropped columns and the type promotions the spec allows (int → long,
  float → double, decimal(P,S) → decimal(P',S)) are metadata only (`update_schema`). Any
  other new type (a decimal scale up, int → decimal, date → timestamp, an incompatible type
  under `evolve`) is a copy-on-write rewrite: in one transaction the column is dropped and
  added again with the new type at its place, and the table's rows are overwritten with their
  values cast.
- **Delta:** new columns are metadata only (`alter.add_columns`). delta-rs implements neither
  Delta's typeWidening feature nor dropping a column, so a new type or a dropped column is a
  copy-on-write rewrite of the whole table as one commit (`write_deltalake` overwrite with
  the new schema), streamed batch by batch from the version it read: the table's partitioning
  (`partition.by`, `__bucket`), its properties (`cdc.buckets`) and its app transactions (which
  batches it holds) stay as they were.

A column added with a DEFAULT to a table that has rows (`SchemaChange.filled`) is such a
rewrite too, on either format: the stored rows are written again with the default in the new
column (what the database did to its rows, without an event for them), in the same one commit
or snapshot.

Either rewrite is atomic: a kill during it leaves the table as it was (the new files are
referenced by no version), and the replayed batch makes the change again. A stored value that
does not cast to the new type (`evolve` to an incompatible type) stops the batch before the
commit with `SchemaEvolutionError`. Progress goes to the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.apply.errors import SchemaEvolutionError
from cdc_spark.apply.evolution import SchemaChange, first_uncastable

log = logging.getLogger(__name__)
_PROGRESS_EVERY_S = 10.0  # a rewrite logs its progress this often
_CHUNK_ROWS = 1_000_000  # an Iceberg rewrite appends this many rows at a time


def change_delta(path: str, table: str, change: SchemaChange) -> None:
    """Make `change` on the Delta table at `path` (`table`: its name in messages)."""
    from deltalake import DeltaTable, Field, write_deltalake

    dt = DeltaTable(path)
    if not change.rewrites:
        if change.added:
            dt.alter.add_columns([Field.from_arrow(f) for f in change.added])
        return
    existing = pa.schema(dt.schema().to_arrow())
    after = pa.schema([f.remove_metadata() for f in change.schema_after(existing)])
    rows = _rows(dt)
    log.info(
        "table %s: %s; rewriting its %d rows as one commit (delta-rs cannot change a column in place, nor add "
        "one that holds a value)",
        table,
        change.describe(),
        rows,
    )
    failure: list[BaseException] = []
    reader = pa.RecordBatchReader.from_batches(
        after, _cast_batches(dt.to_pyarrow_dataset().to_batches(), after, table, rows, failure, change)
    )
    t0 = time.perf_counter()
    try:
        write_deltalake(
            path,
            reader,
            mode="overwrite",
            schema_mode="overwrite",
            partition_by=list(dt.metadata().partition_columns) or None,
        )
    except Exception:
        if failure:  # our cast, raised inside delta-rs's read of the batches
            raise failure[0] from None
        raise
    if failure:
        raise failure[0]
    log.info("table %s: rewritten with the new schema in %.1f s", table, time.perf_counter() - t0)


def change_iceberg(tbl: Any, table: str, change: SchemaChange) -> Any:
    """Make `change` on the Iceberg table `tbl`; the table as loaded after it."""
    if not change:
        return tbl
    existing = tbl.schema().as_arrow()
    rewrite = [
        f
        for f in change.retyped
        if not _promotes(existing.field(f.name).type, f.type) or change.scale(f.name) != 1  # values change
    ]
    if not rewrite and not change.filled:
        with tbl.update_schema() as update:
            for f in change.retyped:
                update.update_column(f.name, field_type=_iceberg_type(f))
            for name in change.dropped:
                update.delete_column(name)
            if change.added:
                update.union_by_name(pa.schema(list(change.added)))
        return tbl.refresh()
    after = pa.schema([f.remove_metadata() for f in change.schema_after(existing)])
    log.info(
        "table %s: %s; rewriting its rows in one snapshot (Iceberg promotes only int, float and decimal "
        "precision in place, and adds a column with NULL in the stored rows)",
        table,
        change.describe(),
    )
    from pyiceberg.expressions import AlwaysTrue

    t0 = time.perf_counter()
    snapshot = tbl.current_snapshot()
    total = int((snapshot.summary or {}).get("total-records", 0)) if snapshot is not None else 0
    kept = [n for n in existing.names if n not in change.dropped]  # the columns' order after
    reader = tbl.scan().to_arrow_batch_reader()  # the snapshot read; the transaction replaces its files
    failure: list[BaseException] = []
    with tbl.transaction() as txn:
        with txn.update_schema() as update:
            for f in rewrite:
                update.delete_column(f.name)
            for name in change.dropped:
                update.delete_column(name)
        with txn.update_schema() as update:
            for f in change.retyped:
                if f in rewrite:
                    update.add_column(f.name, _iceberg_type(f))
                else:
                    update.update_column(f.name, field_type=_iceberg_type(f))
            if change.added:
                update.union_by_name(pa.schema(list(change.added)))
        # A column added again goes last; each is moved back to its place once all exist, in
        # the table's order (so one moved after another already stands where it belongs).
        with txn.update_schema() as update:
            for f in sorted(rewrite, key=lambda f: kept.index(f.name)):
                at = kept.index(f.name)
                if at == 0:
                    update.move_first(f.name)
                else:
                    update.move_after(f.name, kept[at - 1])
        # Chunk by chunk (the driver holds one chunk, not the table): every file of the
        # snapshot read is deleted, the rows come back in the new schema, one atomic commit.
        txn.delete(AlwaysTrue())
        for chunk in _chunks(_cast_batches(reader, after, table, total, failure, change), after):
            txn.append(chunk)
        if failure:
            raise failure[0]  # leaves the transaction uncommitted: the table stays as it was
    log.info("table %s: rewritten with the new schema in %.1f s", table, time.perf_counter() - t0)
    return tbl.refresh()


def _chunks(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.Table]:
    """`batches` gathered into tables of about _CHUNK_ROWS rows (one Parquet file each)."""
    held: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        held.append(batch)
        rows += batch.num_rows
        if rows >= _CHUNK_ROWS:
            yield pa.Table.from_batches(held, schema)
            held, rows = [], 0
    if held:
        yield pa.Table.from_batches(held, schema)


def _rows(dt: Any) -> int:
    """The table's row count from its log's statistics (0 when the files carry none)."""
    actions = pa.table(dt.get_add_actions(flatten=True))
    if "num_records" not in actions.column_names or actions.num_rows == 0:
        return 0
    return int(pa.compute.sum(actions.column("num_records")).as_py() or 0)


def _cast_batches(
    batches: Any, after: pa.Schema, table: str, total: int, failure: list[BaseException], change: SchemaChange
) -> Iterator[pa.RecordBatch]:
    """Each stored batch in the schema `after` (dropped columns left out, added ones holding their
    DEFAULT or NULL); a value that does not cast is recorded in `failure` and ends the stream (the
    caller raises it: the writer's own error would hide it)."""
    done, last = 0, time.perf_counter()
    for batch in batches:
        arrays = []
        for f in after:
            if f.name not in batch.schema.names:
                arrays.append(_added(f, change.fill(f.name), batch.num_rows))
                continue
            col = batch.column(f.name)
            try:
                col = col.cast(f.type) if col.type != f.type else col
                if change.scale(f.name) != 1:  # a time-of-day in a finer unit (ms → us)
                    col = pc.multiply_checked(col, pa.scalar(change.scale(f.name), f.type))
                arrays.append(col)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                row = first_uncastable(col, f.type)
                value = col[row].as_py() if row is not None else None
                failure.append(
                    SchemaEvolutionError(
                        table, f.name, col.type, f"{f.type} (the stored value {value!r} does not cast)"
                    )
                )
                return
        done += batch.num_rows
        if time.perf_counter() - last > _PROGRESS_EVERY_S:
            log.info("table %s: rewritten %d of %d rows", table, done, total)
            last = time.perf_counter()
        yield pa.RecordBatch.from_arrays(arrays, schema=after)


def _added(field: pa.Field, default: pa.Scalar | None, rows: int) -> pa.Array:
    """The new column of `rows` stored rows: its DEFAULT in each, or NULL."""
    if default is None:
        return pa.nulls(rows, field.type)
    return pa.repeat(default, rows).cast(field.type)


def _promotes(old: pa.DataType, new: pa.DataType) -> bool:
    """The type promotions the Iceberg spec allows in place (metadata only)."""
    if pa.types.is_integer(old) and new == pa.int64():
        return old.bit_width <= 32
    if old == pa.float32() and new == pa.float64():
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return new.scale == old.scale and new.precision >= old.precision
    return False


def _iceberg_type(f: pa.Field) -> Any:
    """The Iceberg type of an Arrow field, as pyiceberg converts a table's Arrow schema."""
    from pyiceberg.catalog import Catalog

    return Catalog._convert_schema_if_needed(pa.schema([f])).fields[0].field_type

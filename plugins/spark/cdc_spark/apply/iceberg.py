"""Iceberg through pyiceberg and any catalog it opens (REST, SQL, Glue, Hive…; the `catalog`
mapping, apply/iceberg_catalog.py): per table one transaction that deletes the batch's winning
keys and appends their new rows, after dropping the winners that the stored sequence already
outranks.

pyiceberg's upsert has no condition, so the guard is computed here: the stored
(key, __seq) of the batch's keys are read and compared with the batch. delete.mode=hard keeps each delete's
sequence in `<table>__tombstones` (retention as for Delta); soft keeps `__deleted=true` rows.
A truncate keeps its sequence per table in `_cdc_truncates`.
"""

from __future__ import annotations

import contextlib
import datetime
import time
import warnings
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError
from pyiceberg.expressions import (
    And,
    BooleanExpression,
    EqualTo,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    Or,
)
from pyiceberg.table import Table

from cdc_spark.apply.arrowutil import drop_shadowed, for_lake, plain
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.evolution import SchemaChange, check_lake_range, conform
from cdc_spark.apply.iceberg_catalog import open_catalog
from cdc_spark.apply.schema_rewrite import change_iceberg
from cdc_spark.apply.unchanged import fill_from_stored, needing, warn_kept
from cdc_spark.decode.flatten import FlatBatch

TOMBSTONE_SUFFIX = "__tombstones"
# One row per truncated table: the last truncate's sequence, which later, older events lose to.
TRUNCATES = "_cdc_truncates"


def _key_filter(rows: pa.Table, keys: list[str]) -> BooleanExpression:
    """Exactly the rows' keys. pyiceberg binds every literal of it (seconds per 100k keys),
    so it is only built for keys known to be stored."""
    if len(keys) == 1:
        return In(keys[0], set(rows.column(keys[0]).to_pylist()))
    terms = [reduce(And, [EqualTo(k, r[k]) for k in keys]) for r in rows.select(keys).to_pylist()]
    return reduce(Or, terms)


def _range_filter(rows: pa.Table, keys: list[str]) -> BooleanExpression:
    """A superset of the rows' keys: the first key column's range. It prunes data files by
    their column bounds at no cost per key; the exact match is an Arrow join after the scan."""
    col = rows.column(keys[0])
    if not (pa.types.is_integer(col.type) or pa.types.is_string(col.type)) or col.null_count:
        return _key_filter(rows, keys)
    bounds = pc.min_max(col)
    return And(GreaterThanOrEqual(keys[0], bounds["min"].as_py()), LessThanOrEqual(keys[0], bounds["max"].as_py()))


def _stored(tbl: Table, rows: pa.Table, keys: list[str], columns: tuple[str, ...] = ("__seq",)) -> pa.Table:
    """(key, `columns`) of the stored rows with the keys of `rows`."""
    empty = pa.table({k: rows.column(k).slice(0, 0) for k in [*keys, *columns]})
    if tbl.current_snapshot() is None or rows.num_rows == 0:  # a new table: nothing to read
        return empty
    wanted = rows.select(keys).group_by(keys).aggregate([])
    scan = tbl.scan(row_filter=_range_filter(rows, keys), selected_fields=(*keys, *columns))
    # The range admits other keys too: keep only the wanted ones batch by batch, so memory
    # follows the batch's keys, not the table's size.
    found = [
        part.join(wanted, keys, join_type="left semi")
        for batch in scan.to_arrow_batch_reader()
        if (part := pa.Table.from_batches([batch])).num_rows
    ]
    # pyiceberg returns the selected fields in the table's column order, not the key's.
    return pa.concat_tables(found).select(empty.column_names).cast(empty.schema) if found else empty


def _present(rows: pa.Table, stored: pa.Table, keys: list[str]) -> pa.Table:
    """The rows whose key is stored: only those need deleting before their new version."""
    if stored.num_rows == 0 or rows.num_rows == 0:
        return rows.slice(0, 0)
    return rows.join(stored.select(keys), keys, join_type="left semi")


def _newer_than_stored(source: pa.Table, stored: pa.Table, keys: list[str]) -> pa.Table:
    """Rows whose sequence beats the stored one for their key (or whose key is new)."""
    if stored.num_rows == 0 or source.num_rows == 0:
        return source
    cur = stored.select([*keys, "__seq"]).rename_columns([*keys, "__cur_seq"])
    joined = source.join(cur, keys, join_type="left outer")
    cseq = joined.column("__cur_seq")
    keep = pc.or_kleene(pc.is_null(cseq), pc.greater(joined.column("__seq"), cseq))
    return joined.filter(keep).drop_columns(["__cur_seq"]).select(source.column_names)


class IcebergTarget:
    def __init__(self, config: SinkConfig) -> None:
        self.config = config
        self.catalog = open_catalog(config.catalog)
        self.namespace = config.schema
        # Created only when missing: a REST catalog may let the sink write tables in a namespace
        # an administrator made, yet refuse it the right to create namespaces.
        if not self.catalog.namespace_exists(self.namespace):
            with contextlib.suppress(NamespaceAlreadyExistsError):  # made meanwhile by another writer
                self.catalog.create_namespace(self.namespace)

    def _load(self, table: str) -> Table | None:
        try:
            return self.catalog.load_table((self.namespace, table))
        except NoSuchTableError:
            return None

    def truncate_marks(self) -> dict[str, bytes]:
        """table → the sequence of its last applied truncate (TRUNCATES)."""
        marks = self._load(TRUNCATES)
        rows = marks.scan(selected_fields=("table_name", "seq")).to_arrow().to_pylist() if marks is not None else []
        return {r["table_name"]: r["seq"] for r in rows}

    def truncate(self, table: str, seq: bytes, batch_id: int) -> None:
        """Remember the truncate, then clear rows older than it; both idempotent."""
        mark = pa.table(
            {
                "table_name": pa.array([table], pa.string()),
                "seq": pa.array([seq], pa.binary()),
                "truncated_at_ms": pa.array([int(time.time() * 1000)], pa.int64()),
            }
        )
        marks = self._load(TRUNCATES) or self.catalog.create_table((self.namespace, TRUNCATES), schema=mark.schema)
        known = self.truncate_marks().get(table)
        if known is None or seq > known:
            with marks.transaction() as txn, warnings.catch_warnings():
                warnings.filterwarnings("ignore", "Delete operation did not match any records")
                txn.delete(EqualTo("table_name", table))
                txn.append(mark.cast(marks.schema().as_arrow()))
        tbl = self._load(table)
        if tbl is not None:
            tbl.delete(LessThan("__seq", seq))

    def apply(self, table: str, batch: FlatBatch, batch_id: int) -> None:
        keys = batch.key_columns
        source = for_lake(batch.table, table)
        check_lake_range(table, source)
        tbl = self._load(table) or self.catalog.create_table((self.namespace, table), schema=plain(source.schema))
        behavior = self.config.options_for(table).schema_change_behavior
        source, change = conform(table, tbl.schema().as_arrow(), source, behavior)
        if change:
            tbl = change_iceberg(tbl, table, change)
            source = source.cast(tbl.schema().as_arrow())
        tombs = self._load(table + TOMBSTONE_SUFFIX) if self.config.delete_mode_for(table) == "hard" else None
        if tombs is not None:  # its key columns take the table's types before either is read by key
            probe = source.select([*keys, "__seq"]).slice(0, 0)
            _, tomb_change = conform(table + TOMBSTONE_SUFFIX, tombs.schema().as_arrow(), probe)
            if tomb_change.rewrites:
                tombs = change_iceberg(tombs, table + TOMBSTONE_SUFFIX, SchemaChange(retyped=tomb_change.retyped))
        if batch.unchanged:
            source = self._keep_unchanged(tbl, tombs, table, source, batch)
        if tombs is not None and source.num_rows:
            source = drop_shadowed(source, _stored(tombs, source, keys), keys)
        if source.num_rows == 0:
            return
        stored = _stored(tbl, source, keys)
        source = _newer_than_stored(source, stored, keys)
        if source.num_rows == 0:
            return
        present = _present(source, stored, keys)
        props = {"cdc.app.id": self.config.app_id, "cdc.batch.id": str(batch_id)}
        # Upsert as delete-by-key + append in one transaction: pyiceberg's own upsert cannot
        # take the guard, and it misreads tables whose schema just gained a column.
        soft = self.config.delete_mode_for(table) == "soft"
        keep = source if soft else source.filter(pc.invert(source.column("__deleted")))
        with tbl.transaction() as txn, warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Delete operation did not match any records")
            if present.num_rows:
                txn.delete(_key_filter(present, keys), snapshot_properties=props)
            if keep.num_rows:
                txn.append(keep, snapshot_properties=props)
        if self.config.delete_mode_for(table) == "hard":
            deletes = source.filter(source.column("__deleted"))
            if deletes.num_rows:
                self._remember(table, deletes.select([*keys, "__seq"]), keys)

    def _keep_unchanged(
        self, tbl: Table, tombs: Table | None, table: str, source: pa.Table, batch: FlatBatch
    ) -> pa.Table:
        """Values the source did not send: from the batch's source or the stored state of the key,
        whichever is newer by sequence (the row, or the delete its tombstone remembers;
        apply/unchanged.py)."""
        keys, masks = batch.key_columns, batch.unchanged
        wanted = needing(source, masks)
        stored = _stored(tbl, wanted, keys, (*masks, "__seq", "__deleted"))
        deleted = _stored(tombs, wanted, keys) if tombs is not None else None
        source, kept = fill_from_stored(source, masks, stored, keys, deleted)
        warn_kept(table, kept)
        return source

    def _remember(self, table: str, deletes: pa.Table, keys: list[str]) -> None:
        deletes = deletes.append_column(
            "__deleted_at_ms", pa.array([int(time.time() * 1000)] * deletes.num_rows, pa.int64())
        )
        tombs = self._load(table + TOMBSTONE_SUFFIX) or self.catalog.create_table(
            (self.namespace, table + TOMBSTONE_SUFFIX), schema=deletes.schema
        )
        deletes, _ = conform(table + TOMBSTONE_SUFFIX, tombs.schema().as_arrow(), deletes)
        stored = _stored(tombs, deletes, keys)
        newer = _newer_than_stored(deletes, stored, keys)
        if newer.num_rows:
            present = _present(newer, stored, keys)
            with tombs.transaction() as txn, warnings.catch_warnings():
                warnings.filterwarnings("ignore", "Delete operation did not match any records")
                if present.num_rows:
                    txn.delete(_key_filter(present, keys))
                txn.append(newer.cast(tombs.schema().as_arrow()))

    def maintain(self, tables: list[str]) -> None:
        cutoff = int(time.time() * 1000) - self.config.delete_retention_ms
        for table in tables:
            tombs = self._load(table + TOMBSTONE_SUFFIX)
            if tombs is not None:
                tombs.delete(LessThan("__deleted_at_ms", cutoff))
            tbl = self._load(table)
            if tbl is not None:
                keep_after = datetime.datetime.now(datetime.UTC) - datetime.timedelta(
                    milliseconds=self.config.delete_retention_ms
                )
                tbl.maintenance.expire_snapshots().older_than(keep_after).commit()

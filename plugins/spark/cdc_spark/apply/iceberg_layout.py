"""Iceberg's side of the bucketed layout (buckets.py), for the parallel apply (lake_parallel.py).

A table the sink creates for `apply.on: executors` has a `__bucket` int column (the key's
bucket, buckets.bucket_of) and is partitioned by `identity(__bucket)`, with the bucket count
in the table property `cdc.buckets`, both fixed at creation in one catalog call. A key lives
in exactly one partition, so the Spark task that owns a bucket rewrites the bucket's files
that hold its keys without meeting another task's key (lake_tasks.py).

What the driver does here: read each table's files by bucket (the manifests: file paths, sizes
and key bounds, never rows); say whether a batch is already in the table (the snapshot summary
`cdc.app.id` / `cdc.batch.id` of the newest snapshot this query wrote); and commit the tasks'
files as one snapshot per table and batch: an overwrite that deletes the replaced data files
and adds the new ones (a fast append when nothing is replaced). The new files' Iceberg
statistics and partition are read from their Parquet footers here (pyiceberg's
`parquet_file_to_data_file`), so only file paths cross from the tasks.

What a reader sees: the row columns, the sink's `__seq`/`__op`/... columns and `__bucket`;
partition pruning by bucket is automatic for readers that filter by `__bucket`. Tables in
another layout (written by the driver's path, or with another partition spec) stay on the
driver's path (iceberg.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from cdc_spark.apply.buckets import BUCKET, PROPERTY, DataFile, FileAction, Layout
from cdc_spark.apply.evolution import SchemaChange
from cdc_spark.apply.schema_rewrite import change_iceberg

_APP = "cdc.app.id"
_BATCH = "cdc.batch.id"


class IcebergLayouts:
    """The bucketed Iceberg tables of one namespace: layouts for the plan, commits for the run.
    Lives on the driver (catalog handles are not picklable); the tasks get `Layout`s."""

    def __init__(self, catalog: Any, namespace: str, app_id: str) -> None:
        self.catalog = catalog
        self.namespace = namespace
        self.app_id = app_id
        # table → its data files as the plan read them (path → pyiceberg DataFile): what a
        # remove action names, so that the overwrite carries the real entry (partition, counts).
        self._files: dict[str, dict[str, Any]] = {}

    def _load(self, table: str) -> Any | None:
        from pyiceberg.exceptions import NoSuchTableError

        try:
            return self.catalog.load_table((self.namespace, table))
        except NoSuchTableError:
            return None

    def in_layout(self, table: str) -> bool:
        """Whether `table` is bucketed, or not there yet (the sink will create it so)."""
        tbl = self._load(table)
        return tbl is None or _bucketed(tbl)

    def layout_of(self, table: str, default_buckets: int) -> Layout | None:
        """The table's bucketed layout as of its current snapshot, a new one (not created yet:
        `exists=False`), or None for a table in another layout."""
        tbl = self._load(table)
        if tbl is None:
            return Layout(table, default_buckets, exists=False, kind="iceberg")
        if not _bucketed(tbl):
            return None
        full = tbl.schema().as_arrow()
        files: dict[int, list[DataFile]] = {}
        known: dict[str, Any] = {}
        snapshot = tbl.current_snapshot()
        if snapshot is not None:
            schema = tbl.schema()
            for task in tbl.scan().plan_files():
                if task.delete_files:
                    raise RuntimeError(
                        f"table {table}: it has row-level delete files, which the parallel apply does not read. "
                        f"Fix: rewrite its data files (Spark's rewrite_data_files), or set apply.on: driver"
                    )
                f = task.file
                known[f.file_path] = f
                bounds = _bounds(schema, f)
                files.setdefault(int(f.partition[0]), []).append(
                    DataFile(f.file_path, int(f.file_size_in_bytes), bounds)
                )
        self._files[table] = known
        return Layout(
            tbl.location(),
            int(tbl.properties[PROPERTY]),
            exists=True,
            version=snapshot.snapshot_id if snapshot is not None else -1,
            schema=pa.schema([f for f in full if f.name != BUCKET]),
            files=files,
            kind="iceberg",
            file_schema=full,
        )

    def has_batch(self, table: str, batch_id: int) -> bool:
        """Whether the table already holds micro-batch `batch_id` of this query: the newest
        snapshot this query committed names it or a later batch. Batch 0 counts."""
        from pyiceberg.table.snapshots import ancestors_of

        tbl = self._load(table)
        if tbl is None:
            return False
        for snapshot in ancestors_of(tbl.current_snapshot(), tbl.metadata):
            summary = snapshot.summary
            if summary is not None and summary[_APP] == self.app_id and summary[_BATCH] is not None:
                return int(summary[_BATCH]) >= batch_id
        return False

    def create(self, table: str, schema: pa.Schema, count: int) -> None:
        """The empty bucketed table with its partition spec and `cdc.buckets`, in one catalog
        call (create_table, which every REST catalog serves; staged creation is optional)."""
        from pyiceberg.catalog import Catalog
        from pyiceberg.exceptions import TableAlreadyExistsError
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.schema import assign_fresh_schema_ids
        from pyiceberg.transforms import IdentityTransform

        full = pa.schema([*[f for f in schema if f.name != BUCKET], pa.field(BUCKET, pa.int32(), nullable=True)])
        ids = assign_fresh_schema_ids(Catalog._convert_schema_if_needed(full))
        source = ids.find_field(BUCKET).field_id
        spec = PartitionSpec(
            PartitionField(source_id=source, field_id=1000, transform=IdentityTransform(), name=BUCKET)
        )
        with contextlib.suppress(TableAlreadyExistsError):  # a killed batch's create: the replay finds it
            self.catalog.create_table(
                (self.namespace, table), schema=ids, partition_spec=spec, properties={PROPERTY: str(count)}
            )

    def add_columns(self, table: str, fields: Sequence[pa.Field]) -> None:
        tbl = self._load(table)
        assert tbl is not None
        with tbl.update_schema() as update:
            update.union_by_name(pa.schema(list(fields)))

    def change(self, table: str, change: SchemaChange) -> None:
        """A new type or a dropped column: promoted in place or rewritten (schema_rewrite.py)."""
        tbl = self._load(table)
        assert tbl is not None
        change_iceberg(tbl, table, change)

    def commit(self, table: str, location: str, actions: Sequence[FileAction], batch_id: int) -> int:
        """One snapshot: the tasks' new files added, the files they replaced deleted, the batch
        named in the summary (has_batch)."""
        from pyiceberg.io.pyarrow import parquet_file_to_data_file

        tbl = self._load(table)
        assert tbl is not None
        known = self._files.get(table, {})
        root = location.rstrip("/")
        added = [
            parquet_file_to_data_file(tbl.io, tbl.metadata, f"{root}/{a.path}") for a in actions if a.kind == "add"
        ]
        removed = [known[a.path] for a in actions if a.kind == "remove"]
        props = {_APP: self.app_id, _BATCH: str(batch_id)}
        with tbl.transaction() as txn:
            update = txn.update_snapshot(snapshot_properties=props)
            with update.overwrite() if removed else update.fast_append() as producer:
                for f in removed:
                    producer.delete_data_file(f)
                for f in added:
                    producer.append_data_file(f)
        return len(added) + len(removed)


def _bucketed(tbl: Any) -> bool:
    if tbl.properties.get(PROPERTY) is None:
        return False
    spec = tbl.spec()
    if len(spec.fields) != 1 or str(spec.fields[0].transform) != "identity":
        return False
    return tbl.schema().find_column_name(spec.fields[0].source_id) == BUCKET


def _bounds(schema: Any, f: Any) -> Mapping[str, tuple[object, object]]:
    """The file's lower and upper bounds of its integer and string columns (what the tasks
    prune files by). Iceberg's string bounds stay valid when truncated: the lower one is a
    prefix and the upper one is rounded up (or absent)."""
    from pyiceberg.conversions import from_bytes
    from pyiceberg.types import IntegerType, LongType, StringType

    out: dict[str, tuple[object, object]] = {}
    lower, upper = f.lower_bounds or {}, f.upper_bounds or {}
    for field in schema.fields:
        if field.field_id not in lower or field.field_id not in upper:
            continue
        if not isinstance(field.field_type, IntegerType | LongType | StringType):
            continue
        lo = from_bytes(field.field_type, lower[field.field_id])
        hi = from_bytes(field.field_type, upper[field.field_id])
        out[field.name] = (lo, hi)
    return out

"""Delta's side of the bucketed layout (buckets.py), for the parallel apply (lake_parallel.py):
read a table's files by bucket, say whether a batch is in it, commit the tasks' file actions
as one Delta transaction with the batch's app transaction."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import pyarrow as pa

from cdc_spark.apply import buckets
from cdc_spark.apply.buckets import FileAction, Layout
from cdc_spark.apply.config import partition_columns
from cdc_spark.apply.evolution import SchemaChange
from cdc_spark.apply.schema_rewrite import change_delta


class DeltaLayouts:
    """The bucketed Delta tables under one root (`path`: table name → its path), a new table
    partitioned by its `partition_by` columns (the sink's partition.by) before `__bucket`."""

    def __init__(
        self, path: Callable[[str], str], app_id: str, partition_by: Mapping[str, tuple[str, ...]] | None = None
    ) -> None:
        self.path = path
        self.app_id = app_id
        self.partition_by = partition_by or {}

    def in_layout(self, table: str) -> bool:
        return buckets.in_layout(self.path(table))

    def layout_of(self, table: str, default_buckets: int) -> Layout | None:
        lay = buckets.layout_of(self.path(table), default_buckets)
        if lay is not None and not lay.exists:  # the tasks write a new table's files partitioned already
            lay = replace(lay, partition_by=tuple(self.partition_by.get(table, ())))
        return lay

    def has_batch(self, table: str, batch_id: int) -> bool:
        from deltalake import DeltaTable

        from cdc_spark.apply.delta import has_batch

        path = self.path(table)
        return DeltaTable.is_deltatable(path) and has_batch(DeltaTable(path), self.app_id, batch_id)

    def create(self, table: str, schema: pa.Schema, count: int) -> None:
        """The table partitioned as its layout_of said (tombstone tables: by `__bucket` only)."""
        partition_by = partition_columns(table, self.partition_by, schema.names) or []
        buckets.create(self.path(table), schema, count, tuple(partition_by))

    def add_columns(self, table: str, fields: Sequence[pa.Field]) -> None:
        from deltalake import DeltaTable, Field

        DeltaTable(self.path(table)).alter.add_columns([Field.from_arrow(f) for f in fields])

    def change(self, table: str, change: SchemaChange) -> None:
        """A new type or a dropped column: the table rewritten in one commit (schema_rewrite.py)."""
        change_delta(self.path(table), table, change)

    def commit(self, table: str, location: str, actions: Sequence[FileAction], batch_id: int) -> int:
        """One Delta transaction: the tasks' adds and removes and the batch's app transaction."""
        from deltalake import CommitProperties, DeltaTable, Transaction
        from deltalake.transaction import AddAction, RemoveAction

        dt = DeltaTable(self.path(table))
        now = int(time.time() * 1000)
        out: list[AddAction | RemoveAction] = []
        for a in actions:
            part = {**a.partition, buckets.BUCKET: str(a.bucket)}
            if a.kind == "add":
                out.append(AddAction(a.path, a.size, part, now, True, a.stats))
            else:
                out.append(RemoveAction(a.path, True, now, a.size, part))
        dt.create_write_transaction(
            out,
            mode="append",
            schema=pa.schema(dt.schema().to_arrow()),
            partition_by=list(dt.metadata().partition_columns),
            commit_properties=CommitProperties(app_transactions=[Transaction(self.app_id, batch_id)]),
        )
        return len(out)

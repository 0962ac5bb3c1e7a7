"""Delta Lake through delta-rs: a sequence-guarded MERGE per table per micro-batch.

- Exactly once: each commit carries `Transaction(app.id, batch_id)`; a replayed batch whose
  id the table already recorded is skipped.
- delete.mode=hard: rows are deleted, and each delete is remembered with its sequence in
  the sibling table `<table>__tombstones` until delete.retention.ms passes, so a late,
  older update cannot bring the row back. delete.mode=soft: the row stays with
  `__deleted=true` (its own tombstone).
- Schema: new columns are added (ALTER) before the MERGE; delta-rs's merge_schema is not
  used because it fills new columns of guarded-out rows from the source.
- A truncate deletes the older rows and keeps its sequence in the sibling table
  `_cdc_truncates`, so older events arriving later (another partition, a replay) stay out.
- Values the source did not send (Debezium's unavailable-value placeholder) are taken, before
  the MERGE, from the batch's earlier events or the stored rows and tombstones, whichever is
  newer by sequence (apply/unchanged.py).
- MERGEs run with `streamed_exec=False`: the batch is in memory anyway, and only then does
  delta-rs prune target files by the batch's key range. Changes to recent rows (new ids,
  hot rows) then skip the rest of a large table: 0.02 s instead of 1.1 s on 5M rows.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.table import TableMerger

from cdc_spark.apply.arrowutil import delta_dataset, drop_shadowed, for_lake, hex_literal, plain, rows_with_keys
from cdc_spark.apply.config import SinkConfig, partition_columns
from cdc_spark.apply.evolution import SchemaChange, check_lake_range, conform
from cdc_spark.apply.schema_rewrite import change_delta
from cdc_spark.apply.unchanged import fill_from_stored, needing, warn_kept
from cdc_spark.decode.flatten import FlatBatch

log = logging.getLogger(__name__)
TOMBSTONE_SUFFIX = "__tombstones"
# One row per truncated table: the last truncate's sequence, which later, older events lose to.
TRUNCATES = "_cdc_truncates"


def has_batch(dt: DeltaTable | None, app_id: str, batch_id: int) -> bool:
    """Whether the table already holds micro-batch `batch_id` of query `app_id` (its commit
    carried `Transaction(app_id, batch_id)`): a replay then writes nothing. Batch 0 counts."""
    done = dt.transaction_version(app_id) if dt is not None else None
    return done is not None and done >= batch_id


def _open(path: str) -> DeltaTable | None:
    return DeltaTable(path) if DeltaTable.is_deltatable(path) else None


def _schema(dt: DeltaTable) -> pa.Schema:
    return pa.schema(dt.schema().to_arrow())


def _on(keys: list[str]) -> str:
    return " AND ".join(f't."{k}" = s."{k}"' for k in keys)


def merge(dt: DeltaTable, source: pa.Table, on: str, commit: CommitProperties | None = None) -> TableMerger:
    """A MERGE of an in-memory batch, with the target pruned by the batch's statistics."""
    return dt.merge(source, on, source_alias="s", target_alias="t", streamed_exec=False, commit_properties=commit)


def _log_merge(dt: DeltaTable, batch_id: int, figures: dict[str, Any]) -> None:
    """delta-rs's figures of a MERGE: copy-on-write rewrites each file holding a changed row whole,
    so `copied` (unchanged rows rewritten) is what a batch of scattered changes costs."""
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "batch %d: MERGE into %s: %s source rows, %s inserted, %s updated, %s deleted, %s copied; "
            "files %s scanned, %s skipped, %s rewritten, %s added; %s ms (scan %s, rewrite %s)",
            batch_id,
            os.path.basename(dt.table_uri.rstrip("/")),
            *(
                figures.get(k)
                for k in (
                    "num_source_rows",
                    "num_target_rows_inserted",
                    "num_target_rows_updated",
                    "num_target_rows_deleted",
                    "num_target_rows_copied",
                    "num_target_files_scanned",
                    "num_target_files_skipped_during_scan",
                    "num_target_files_removed",
                    "num_target_files_added",
                    "execution_time_ms",
                    "scan_time_ms",
                    "rewrite_time_ms",
                )
            ),
        )


class DeltaTarget:
    def __init__(self, config: SinkConfig) -> None:
        self.config = config
        self.root = config.path or ""

    def path(self, table: str) -> str:
        return os.path.join(self.root, table)

    def _commit(self, batch_id: int) -> CommitProperties:
        return CommitProperties(app_transactions=[Transaction(self.config.app_id, batch_id)])

    def _done(self, dt: DeltaTable | None, batch_id: int) -> bool:
        return has_batch(dt, self.config.app_id, batch_id)

    def truncate_marks(self) -> dict[str, bytes]:
        """table → the sequence of its last applied truncate (TRUNCATES)."""
        path = self.path(TRUNCATES)
        dt = _open(path)
        rows = delta_dataset(dt, path).to_table(columns=["table_name", "seq"]).to_pylist() if dt is not None else []
        return {r["table_name"]: r["seq"] for r in rows}

    def truncate(self, table: str, seq: bytes, batch_id: int) -> None:
        """Remember the truncate, then clear rows older than it (newer ones came from later events).
        Both steps are idempotent, so a batch replayed between them repeats them harmlessly."""
        mark = pa.table(
            {
                "table_name": pa.array([table], pa.string()),
                "seq": pa.array([seq], pa.binary()),
                "truncated_at_ms": pa.array([int(time.time() * 1000)], pa.int64()),
            }
        )
        path = self.path(TRUNCATES)
        marks = _open(path) or DeltaTable.create(path, schema=mark.schema, mode="ignore")
        (
            merge(marks, mark, 't."table_name" = s."table_name"')
            .when_matched_update_all(predicate="s.seq > t.seq")
            .when_not_matched_insert_all()
            .execute()
        )
        dt = _open(self.path(table))
        if dt is not None and not self._done(dt, batch_id):
            dt.delete(f"__seq < {hex_literal(seq)}")

    def apply(self, table: str, batch: FlatBatch, batch_id: int) -> None:
        source = for_lake(batch.table, table)
        check_lake_range(table, source)
        keys = batch.key_columns
        path = self.path(table)
        dt = _open(path)
        if dt is None:
            dt = DeltaTable.create(
                path,
                schema=plain(source.schema),
                mode="ignore",
                partition_by=partition_columns(table, self.config.partition_by, source.schema.names),
            )
        if not self._done(dt, batch_id):
            behavior = self.config.options_for(table).schema_change_behavior
            source, change = conform(table, _schema(dt), source, behavior)
            if change:
                change_delta(path, table, change)
                dt = DeltaTable(path)
            self._follow_keys(table, source, keys)
            if batch.unchanged:
                source = self._keep_unchanged(dt, table, source, batch)
            if self.config.delete_mode_for(table) == "soft":
                self._merge_soft(dt, source, keys, batch_id)
            else:
                self._merge_hard(dt, table, source, keys, batch_id)
        if self.config.delete_mode_for(table) == "hard":
            self._remember_deletes(table, source, keys, batch_id)

    def _follow_keys(self, table: str, source: pa.Table, keys: list[str]) -> None:
        """The tombstone table's key columns take the table's types (a key widened there is
        widened here) before either is read by key."""
        path = self.path(table + TOMBSTONE_SUFFIX)
        tombs = _open(path)
        if tombs is None:
            return
        probe = source.select([*keys, "__seq"]).slice(0, 0)
        _, change = conform(table + TOMBSTONE_SUFFIX, _schema(tombs), probe)
        if change.rewrites:
            change_delta(path, table + TOMBSTONE_SUFFIX, SchemaChange(retyped=change.retyped))

    def _keep_unchanged(self, dt: DeltaTable, table: str, source: pa.Table, batch: FlatBatch) -> pa.Table:
        """Values the source did not send: from the batch's source or the stored state of the key,
        whichever is newer by sequence (the row, or the delete its tombstone remembers;
        apply/unchanged.py)."""
        keys, masks = batch.key_columns, batch.unchanged
        wanted = needing(source, masks)
        dataset = delta_dataset(dt, self.path(table))
        stored = rows_with_keys(dataset, wanted, keys, [*keys, *masks, "__seq", "__deleted"])
        deleted = None
        tombs = _open(self.path(table + TOMBSTONE_SUFFIX)) if self.config.delete_mode_for(table) == "hard" else None
        if tombs is not None:
            deleted = rows_with_keys(delta_dataset(tombs, self.path(table + TOMBSTONE_SUFFIX)), wanted, keys)
        source, kept = fill_from_stored(source, masks, stored, keys, deleted)
        warn_kept(table, kept)
        return source

    def _merge_soft(self, dt: DeltaTable, source: pa.Table, keys: list[str], batch_id: int) -> None:
        figures = (
            merge(dt, source, _on(keys), self._commit(batch_id))
            .when_matched_update_all(predicate="s.__seq > t.__seq")
            .when_not_matched_insert_all()
            .execute()
        )
        _log_merge(dt, batch_id, figures)

    def _merge_hard(self, dt: DeltaTable, table: str, source: pa.Table, keys: list[str], batch_id: int) -> None:
        tombs = _open(self.path(table + TOMBSTONE_SUFFIX))
        if tombs is not None:
            dataset = delta_dataset(tombs, self.path(table + TOMBSTONE_SUFFIX))
            remembered = rows_with_keys(dataset, source, keys, [*keys, "__seq"])
            source = drop_shadowed(source, remembered, keys)
        figures = (
            merge(dt, source, _on(keys), self._commit(batch_id))
            .when_matched_delete(predicate="s.__deleted AND s.__seq > t.__seq")
            .when_matched_update_all(predicate="NOT s.__deleted AND s.__seq > t.__seq")
            .when_not_matched_insert_all(predicate="NOT s.__deleted")
            .execute()
        )
        _log_merge(dt, batch_id, figures)

    def _remember_deletes(self, table: str, source: pa.Table, keys: list[str], batch_id: int) -> None:
        path = self.path(table + TOMBSTONE_SUFFIX)
        deletes = source.filter(source.column("__deleted")).select([*keys, "__seq"])
        deletes = deletes.append_column(
            "__deleted_at_ms", pa.array([int(time.time() * 1000)] * deletes.num_rows, pa.int64())
        )
        dt = _open(path)
        if dt is None:
            if deletes.num_rows == 0:
                return
            dt = DeltaTable.create(path, schema=deletes.schema, mode="ignore")
        if self._done(dt, batch_id):
            return
        deletes, _ = conform(table + TOMBSTONE_SUFFIX, _schema(dt), deletes)
        (
            merge(dt, deletes, _on(keys), self._commit(batch_id))
            .when_matched_update_all(predicate="s.__seq > t.__seq")
            .when_not_matched_insert_all()
            .execute()
        )

    def maintain(self, tables: list[str]) -> None:
        """Forget tombstones past the retention, compact small files, checkpoint the log."""
        cutoff = int(time.time() * 1000) - self.config.delete_retention_ms
        for table in tables:
            tombs = _open(self.path(table + TOMBSTONE_SUFFIX))
            if tombs is not None:
                tombs.delete(f"__deleted_at_ms < {cutoff}")
            for dt in (_open(self.path(table)), tombs):
                if dt is None:
                    continue
                dt.optimize.compact()
                dt.create_checkpoint()
                dt.cleanup_metadata()
                dt.vacuum(dry_run=False)

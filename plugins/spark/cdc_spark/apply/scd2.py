"""Delta `mode=scd2`: every event becomes a history row with `__valid_from` / `__valid_to`
taken from the sequence, so the table answers "what was the row at sequence S".

History stays right when events arrive out of order across batches: the stored history of
the batch's keys is re-read, merged with the new events, re-chained in sequence order, and
written back with one MERGE on (key, `__valid_from`) that only inserts new versions and
updates `__valid_to` where the chain changed. A delete is a version with `__deleted=true`
(it closes the previous one and keeps late, older events from reopening the key).
Current rows: `__valid_to IS NULL AND NOT __deleted`. A value the source did not send
(Debezium's unavailable-value placeholder) is the previous version's.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Field, Transaction

from cdc_spark.apply.arrowutil import delta_dataset, for_lake, rows_with_keys, same_as_previous
from cdc_spark.apply.config import SinkConfig, partition_columns
from cdc_spark.apply.delta import has_batch, merge
from cdc_spark.apply.evolution import check_lake_range, conform
from cdc_spark.apply.unchanged import fill_forward, warn_kept
from cdc_spark.decode.flatten import FlatBatch


def chain(history: pa.Table, keys: list[str]) -> pa.Table:
    """One row per (key, sequence), sorted, with `__valid_to` = the key's next sequence."""
    if history.num_rows == 0:
        return history
    # A stable sort: of two copies of one event (a replay), the stored one comes first and stays.
    order = pc.sort_indices(history, sort_keys=[*((k, "ascending") for k in keys), ("__valid_from", "ascending")])
    history = history.take(order)
    replayed = pc.and_(same_as_previous(history, keys), same_as_previous(history, ["__valid_from"]))
    out = history.filter(pc.invert(replayed))
    n = out.num_rows
    next_same_key = pa.concat_arrays([same_as_previous(out, keys).slice(1), pa.array([False])])
    next_from = pa.concat_arrays([out.column("__valid_from").combine_chunks().slice(1), pa.nulls(1, pa.binary())])
    valid_to = pc.if_else(next_same_key, next_from, pa.nulls(n, pa.binary()))
    return out.set_column(out.schema.get_field_index("__valid_to"), "__valid_to", valid_to)


class Scd2Delta:
    def __init__(self, config: SinkConfig) -> None:
        self.config = config

    def apply(self, path: str, table: str, batch: FlatBatch, batch_id: int) -> None:
        keys = batch.key_columns
        new = for_lake(batch.table, table)
        check_lake_range(table, new)  # delta-rs panics on years outside 1-9999
        # Values the source did not send are the previous version's (apply/unchanged.py).
        unsent = self.config.placeholder.masks(new, skip=frozenset(keys))
        new = new.append_column("__valid_from", new.column("__seq")).append_column(
            "__valid_to", pa.nulls(new.num_rows, pa.binary())
        )
        dt = DeltaTable(path) if DeltaTable.is_deltatable(path) else None
        if dt is None:
            dt = DeltaTable.create(
                path,
                schema=new.schema,
                mode="ignore",
                partition_by=partition_columns(table, self.config.partition_by, new.schema.names),
            )
        if has_batch(dt, self.config.app_id, batch_id):
            return
        new, added = conform(table, pa.schema(dt.schema().to_arrow()), new)
        if added:
            dt.alter.add_columns([Field.from_arrow(f) for f in added])
        # Only the history of the batch's keys is re-chained; the rest is never read.
        stored = rows_with_keys(delta_dataset(dt, path), new, keys)
        if stored.num_rows:
            stored = stored.select(new.column_names).cast(new.schema)
        history = pa.concat_tables([stored, new]) if stored.num_rows else new
        for name, mask in unsent.items():
            flags = pa.concat_arrays([pa.array(np.zeros(stored.num_rows, bool)), mask])
            history = history.append_column(f"__unsent.{name}", flags)
        merged = chain(history, keys)
        if unsent:
            flags = {c: merged.column(f"__unsent.{c}").combine_chunks() for c in unsent}
            merged, kept = fill_forward(merged, flags, keys)
            merged = merged.drop_columns([f"__unsent.{c}" for c in unsent])
            warn_kept(table, kept)
        on = " AND ".join([*(f't."{k}" = s."{k}"' for k in keys), "t.__valid_from = s.__valid_from"])
        (
            merge(dt, merged, on, CommitProperties(app_transactions=[Transaction(self.config.app_id, batch_id)]))
            .when_matched_update(
                {"__valid_to": "s.__valid_to"},
                predicate="t.__valid_to IS DISTINCT FROM s.__valid_to",
            )
            .when_not_matched_insert_all()
            .execute()
        )

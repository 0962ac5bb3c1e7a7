"""Delta `mode=scd2`: every event becomes a history row with `__valid_from` / `__valid_to`
taken from the sequence, so the table answers "what was the row at sequence S".

History stays right when events arrive out of order across batches: the stored history of
the batch's keys is re-read, merged with the new events, re-chained in sequence order, and
written back with one MERGE on (key, `__valid_from`) that only inserts new versions and
updates `__valid_to` where the chain changed. A delete is a version with `__deleted=true`
(it closes the previous one and keeps late, older events from reopening the key).
Current rows: `__valid_to IS NULL AND NOT __deleted`.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Field, Transaction

from cdc_spark.apply.arrowutil import for_lake
from cdc_spark.apply.config import SinkConfig, partition_columns
from cdc_spark.apply.evolution import conform
from cdc_spark.decode.flatten import FlatBatch


def chain(history: pa.Table, keys: list[str]) -> pa.Table:
    """One row per (key, sequence), sorted, with `__valid_to` = the key's next sequence."""
    order = pc.sort_indices(history, sort_keys=[*((k, "ascending") for k in keys), ("__valid_from", "ascending")])
    history = history.take(order)
    rows = history.select([*keys, "__valid_from"]).to_pylist()
    keep: list[int] = []
    valid_to: list[bytes | None] = []
    for i, row in enumerate(rows):
        if keep and rows[keep[-1]] == row:
            continue  # the same event again (a replay): the stored copy came first and stays
        if keep and all(rows[keep[-1]][k] == row[k] for k in keys):
            valid_to[-1] = row["__valid_from"]
        keep.append(i)
        valid_to.append(None)
    out = history.take(pa.array(keep, pa.int64()))
    return out.set_column(out.schema.get_field_index("__valid_to"), "__valid_to", pa.array(valid_to, pa.binary()))


class Scd2Delta:
    def __init__(self, config: SinkConfig) -> None:
        self.config = config

    def apply(self, path: str, table: str, batch: FlatBatch, batch_id: int) -> None:
        keys = batch.key_columns
        new = for_lake(batch.table)
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
        if (dt.transaction_version(self.config.app_id) or -1) >= batch_id:
            return
        new, added = conform(table, pa.schema(dt.schema().to_arrow()), new)
        if added:
            dt.alter.add_columns([Field.from_arrow(f) for f in added])
        stored = dt.to_pyarrow_table()
        if stored.num_rows:
            wanted = pa.Table.from_pylist(
                [dict(t) for t in {tuple(r.items()) for r in new.select(keys).to_pylist()}],
                schema=new.select(keys).schema,
            )
            stored = stored.join(wanted, keys, join_type="inner").select(new.column_names).cast(new.schema)
        merged = chain(pa.concat_tables([stored, new]) if stored.num_rows else new, keys)
        on = " AND ".join([*(f't."{k}" = s."{k}"' for k in keys), "t.__valid_from = s.__valid_from"])
        (
            dt.merge(
                merged,
                on,
                source_alias="s",
                target_alias="t",
                commit_properties=CommitProperties(app_transactions=[Transaction(self.config.app_id, batch_id)]),
            )
            .when_matched_update(
                {"__valid_to": "s.__valid_to"},
                predicate="t.__valid_to IS DISTINCT FROM s.__valid_to",
            )
            .when_not_matched_insert_all()
            .execute()
        )

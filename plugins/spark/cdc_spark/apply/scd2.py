"""Delta `mode=scd2`: every event becomes a history row with `__valid_from` / `__valid_to`
taken from the sequence, so the table answers "what was the row at sequence S".

History stays right when events arrive out of order across batches: the stored history of
the batch's keys is re-read, merged with the new events, re-chained in sequence order, and
written back with one MERGE on (key, `__valid_from`) that only inserts new versions and
updates `__valid_to` where the chain changed. A delete is a version with `__deleted=true`
(it closes the previous one and keeps late, older events from reopening the key).
Current rows: `__valid_to IS NULL AND NOT __deleted`. A value the source did not send
(Debezium's unavailable-value placeholder) is the previous version's, and so is an update's
NULL in a table with `ignore_null_updates` (table_options.py).

With a history list (`track_history_column_list` / `track_history_except_column_list`), an
event that agrees with the version before it on every tracked column is not a version of its
own: it updates that version in place (its untracked columns, `__seq`, `__op`,
`__source_ts_ms`), which keeps its `__valid_from`. A version so updated has `__seq` above its
`__valid_from`. When a late event lands inside that span (after the version began, before its
last in-place update), the version's state at its `__seq` is re-entered behind the late event
as a version of its own (`resumptions`): the current row stays the newest state, and only the
late event's own span is approximate (it ends at that `__seq` at the latest). Versions written
before are merged only where a new event joins them, and a stored version a new event
absorbs is deleted in the same MERGE.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction

from cdc_spark.apply.arrowutil import delta_dataset, for_lake, plain, rows_with_keys, same_as_previous
from cdc_spark.apply.config import SinkConfig, partition_columns
from cdc_spark.apply.delta import has_batch, merge
from cdc_spark.apply.evolution import check_lake_range, conform
from cdc_spark.apply.schema_rewrite import change_delta
from cdc_spark.apply.table_options import null_masks
from cdc_spark.apply.unchanged import Masks, fill_forward, warn_kept
from cdc_spark.decode.flatten import FlatBatch

_NEW = "__new"  # while chaining: the row is one of the batch's events (not a stored version)


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


def coalesce(history: pa.Table, keys: list[str], tracked: Sequence[str]) -> pa.Table:
    """`history` (chained: sorted by key and `__valid_from`, with a bool `__new` column) with each
    run of rows that agree on every `tracked` column made one version: the run's first
    `__valid_from` with the values of its newest state (highest `__seq`). A delete never joins a
    run, and two stored versions join only through a new event between them."""
    n = history.num_rows
    if n < 2:
        return history
    live = pc.invert(pc.fill_null(history.column("__deleted").combine_chunks(), False))
    new = history.column(_NEW).combine_chunks()
    joins = pc.and_(same_as_previous(history, keys), same_as_previous(history, list(tracked)))
    both_live = pc.and_(live, _previous(live))
    joins = pc.and_(pc.and_(joins, both_live), pc.or_(new, _previous(new)))
    group = np.cumsum(~joins.to_numpy(zero_copy_only=False)) - 1
    order = pc.sort_indices(
        pa.table({"g": group, "s": history.column("__seq"), "i": np.arange(n)}),
        sort_keys=[("g", "ascending"), ("s", "descending"), ("i", "descending")],
    ).to_numpy()
    newest = order[np.r_[True, group[order][1:] != group[order][:-1]]]  # per run, its newest state
    first = np.r_[0, np.flatnonzero(np.diff(group)) + 1]  # per run, its first row
    out = history.take(pa.array(newest))
    begins = history.column("__valid_from").take(pa.array(first))
    return out.set_column(out.schema.get_field_index("__valid_from"), "__valid_from", begins)


def resumptions(stored: pa.Table, new: pa.Table, keys: list[str]) -> pa.Table:
    """Stored versions updated in place (`__seq` above `__valid_from`) that a new event lands
    inside, each again from its `__seq` on: the state it had there, to re-enter the chain
    behind the late event (which would otherwise stand for everything after it)."""
    updated = stored.filter(pc.greater(stored.column("__seq"), stored.column("__valid_from")))
    if updated.num_rows == 0 or new.num_rows == 0:
        return stored.slice(0, 0)
    indexed = updated.append_column("__row", pa.array(np.arange(updated.num_rows, dtype=np.int64)))
    spans = indexed.select([*keys, "__row", "__valid_from", "__seq"]).rename_columns([*keys, "__row", "__vf", "__to"])
    events = new.select([*keys, "__seq"]).rename_columns([*keys, "__at"])
    joined = spans.join(events, keys, join_type="inner")
    inside = pc.and_(pc.greater(joined["__at"], joined["__vf"]), pc.less(joined["__at"], joined["__to"]))
    rows = pc.unique(joined.filter(inside).column("__row").combine_chunks())
    again = updated.take(rows.take(pc.sort_indices(rows)))
    at = again.schema.get_field_index("__valid_from")
    again = again.set_column(at, again.schema.field("__valid_from"), again.column("__seq"))
    return again.set_column(
        again.schema.get_field_index("__valid_to"),
        again.schema.field("__valid_to"),
        pa.nulls(again.num_rows, pa.binary()),
    )


def absorbed(stored: pa.Table, versions: pa.Table, keys: list[str]) -> pa.Table:
    """The stored versions not among `versions` (a new event joined them to another), marked for
    deletion: `__valid_to` = `__valid_from`, a span no real version has."""
    pairs = [*keys, "__valid_from"]
    gone = stored.join(versions.select(pairs), pairs, join_type="left anti").select(stored.column_names)
    return gone.set_column(gone.schema.get_field_index("__valid_to"), "__valid_to", gone.column("__valid_from"))


def _previous(flags: pa.Array) -> pa.Array:
    """Per row, the previous row's flag (False for row 0)."""
    return pa.concat_arrays([pa.array([False]), flags.slice(0, len(flags) - 1)])


class Scd2Delta:
    def __init__(self, config: SinkConfig) -> None:
        self.config = config

    def apply(self, path: str, table: str, batch: FlatBatch, batch_id: int) -> None:
        keys = batch.key_columns
        options = self.config.options_for(table)
        new = for_lake(batch.table, table)
        check_lake_range(table, new)  # delta-rs panics on years outside 1-9999
        # Values the source did not send are the previous version's (apply/unchanged.py), and so
        # are an update's NULLs where the table ignores null updates (quiet: a NULL may stay NULL).
        unsent = self.config.placeholder.masks(new, skip=frozenset(keys))
        quiet = null_masks(new, keys) if options.ignore_null_updates else {}
        for name, mask in quiet.items():
            unsent[name] = pc.or_(unsent[name], mask) if name in unsent else mask
        new = new.append_column("__valid_from", new.column("__seq")).append_column(
            "__valid_to", pa.nulls(new.num_rows, pa.binary())
        )
        dt = DeltaTable(path) if DeltaTable.is_deltatable(path) else None
        if dt is None:
            dt = DeltaTable.create(
                path,
                schema=plain(new.schema),
                mode="ignore",
                partition_by=partition_columns(table, self.config.partition_by, new.schema.names),
            )
        if has_batch(dt, self.config.app_id, batch_id):
            return
        new, change = conform(table, pa.schema(dt.schema().to_arrow()), new, options.schema_change_behavior)
        if change:
            change_delta(path, table, change)
            dt = DeltaTable(path)
        # Only the history of the batch's keys is re-chained; the rest is never read.
        stored = rows_with_keys(delta_dataset(dt, path), new, keys)
        if stored.num_rows:
            stored = stored.select(new.column_names).cast(new.schema)
        versions = self._versions(table, stored, new, keys, unsent, quiet)
        self._merge(dt, versions, keys, batch_id, in_place=options.tracks_history)

    def _versions(
        self, table: str, stored: pa.Table, new: pa.Table, keys: list[str], unsent: Masks, quiet: Masks
    ) -> pa.Table:
        """The batch's keys' history re-chained with the batch's events: unsent (and quiet) cells
        filled from the version before; with a history list, runs that agree on the tracked
        columns made one version, and the stored versions so absorbed marked for deletion."""
        options = self.config.options_for(table)
        tracks = options.tracks_history and stored.num_rows > 0
        stored_side = pa.concat_tables([stored, resumptions(stored, new, keys)]) if tracks else stored
        history = pa.concat_tables([stored_side, new]) if stored_side.num_rows else new
        old = np.zeros(stored_side.num_rows, bool)
        history = history.append_column(_NEW, pa.array(np.r_[old, np.ones(new.num_rows, bool)]))
        for prefix, masks in (("__unsent.", unsent), ("__quiet.", quiet)):
            for name, mask in masks.items():
                history = history.append_column(prefix + name, pa.concat_arrays([pa.array(old), mask]))
        merged = chain(history, keys)
        if unsent:
            flags = {c: merged.column(f"__unsent.{c}").combine_chunks() for c in unsent}
            merged, kept = fill_forward(merged, flags, keys)
            warn_kept(table, _loud(merged, kept))
            merged = merged.drop_columns([f"__unsent.{c}" for c in unsent] + [f"__quiet.{c}" for c in quiet])
        if options.tracks_history:
            merged = chain(coalesce(merged, keys, options.tracked(merged.column_names, keys)), keys)
        merged = merged.drop_columns([_NEW])
        return pa.concat_tables([merged, absorbed(stored, merged, keys)]) if tracks else merged

    def _merge(self, dt: DeltaTable, rows: pa.Table, keys: list[str], batch_id: int, in_place: bool) -> None:
        """One MERGE on (key, `__valid_from`): new versions inserted, changed `__valid_to` set; with
        a history list also versions updated in place (their `__seq` moved) and absorbed ones
        (`__valid_to` = `__valid_from`) deleted."""
        on = " AND ".join([*(f't."{k}" = s."{k}"' for k in keys), "t.__valid_from = s.__valid_from"])
        merger = merge(dt, rows, on, CommitProperties(app_transactions=[Transaction(self.config.app_id, batch_id)]))
        if not in_place:
            merger = merger.when_matched_update(
                {"__valid_to": "s.__valid_to"}, predicate="t.__valid_to IS DISTINCT FROM s.__valid_to"
            ).when_not_matched_insert_all()
        else:
            dropped = "s.__valid_to IS NOT NULL AND s.__valid_to = s.__valid_from"
            merger = (
                merger.when_matched_delete(predicate=dropped)
                .when_matched_update_all(
                    predicate="(t.__valid_to IS DISTINCT FROM s.__valid_to) OR (t.__seq IS DISTINCT FROM s.__seq)"
                )
                .when_not_matched_insert_all(predicate=f"NOT ({dropped})")
            )
        merger.execute()


def _loud(rows: pa.Table, kept: Masks) -> dict[str, pa.Array]:
    """The cells left holding the placeholder, less the quiet ones (an update's NULL left NULL)."""
    out = {}
    for name, cells in kept.items():
        quiet = f"__quiet.{name}"
        if quiet in rows.column_names:
            cells = pc.and_(cells, pc.invert(rows.column(quiet).combine_chunks()))
        if pc.any(cells).as_py():
            out[name] = cells
    return out

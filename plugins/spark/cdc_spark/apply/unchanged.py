"""Values the source did not send are kept, not overwritten with Debezium's placeholder.

A PostgreSQL update carries `unavailable.value.placeholder` for each unchanged TOASTed
column (decode/unavailable.py). The value it stands for is the key's previous one: that of
its latest earlier event in the same micro-batch (the per-key reduction keeps those events
for such winners), else the row the target stores. Only a row the target has never held
keeps the placeholder, with a warning that names the table, the columns and the fix.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.apply.arrowutil import same_as_previous
from cdc_spark.decode.flatten import FlatBatch, flatten
from cdc_spark.decode.unavailable import Placeholder

log = logging.getLogger(__name__)
Masks = Mapping[str, pa.Array]


def flatten_latest(
    topic: str,
    winners: pa.Table,
    earlier: pa.Table | None,
    schemas: Mapping[int, str] | None,
    placeholder: Placeholder,
) -> FlatBatch:
    """The winners of one topic flattened, their placeholders filled from `earlier` events of
    their keys (see latest.latest_and_earlier); `unchanged` marks what is left for the target."""
    rows = winners
    if earlier is not None and earlier.num_rows:
        rows = pa.concat_tables([winners, earlier.select(winners.column_names).cast(winners.schema)])
    return fill_in_batch(flatten(topic, rows, schemas), winners.num_rows, placeholder)


def fill_forward(rows: pa.Table, masks: Masks, keys: list[str]) -> tuple[pa.Table, dict[str, pa.Array]]:
    """`rows` sorted by key, then sequence: each masked cell takes the value of the nearest earlier
    row of its key whose cell is not masked, unless a delete lies between them. Returns the
    filled rows and, per column, the cells that found nothing."""
    n = rows.num_rows
    first = pc.invert(same_as_previous(rows, keys))  # the first row of each key
    barrier = rows.column("__deleted").combine_chunks() if "__deleted" in rows.column_names else None
    index = pa.array(np.arange(n, dtype=np.int64))
    remaining: dict[str, pa.Array] = {}
    for name, mask in masks.items():
        # Per row, the row to read the value from: itself, none (-1: first of its key, or a
        # delete), or (null) the row found by carrying the last one forward.
        source = index if barrier is None else pc.if_else(barrier, -1, index)
        source = pc.if_else(mask, pc.if_else(first, -1, pa.scalar(None, pa.int64())), source)
        source = pc.fill_null_forward(source)
        taken = rows.column(name).combine_chunks().take(pc.max_element_wise(source, 0))
        rows = _replace(rows, name, mask, pc.greater_equal(source, 0), taken, remaining)
    return rows, remaining


def _replace(
    rows: pa.Table,
    name: str,
    mask: pa.Array,
    found: pa.Array,
    values: pa.Array,
    remaining: dict[str, pa.Array],
) -> pa.Table:
    """Masked cells of column `name` where `found` take `values`; the masked cells not found
    are recorded in `remaining`."""
    hit = pc.and_(mask, found)
    if pc.any(hit).as_py():
        column = rows.column(name).combine_chunks()
        at = rows.schema.get_field_index(name)
        rows = rows.set_column(at, rows.schema.field(name), pc.if_else(hit, values.cast(column.type), column))
    left = pc.and_(mask, pc.invert(found))
    if pc.any(left).as_py():
        remaining[name] = left
    return rows


def fill_in_batch(flat: FlatBatch, winners: int, placeholder: Placeholder) -> FlatBatch:
    """`flat.table`: the batch's per-key winners (the first `winners` rows), then earlier events
    of keys whose winner may carry the placeholder. Returns the winners, their placeholders
    replaced from those events; `unchanged` marks the ones left for the target."""
    keys = flat.key_columns
    masks = placeholder.masks(flat.table, skip=frozenset(keys))
    if flat.table.num_rows == winners or not masks:
        return FlatBatch(flat.table.slice(0, winners), keys, {c: m.slice(0, winners) for c, m in masks.items()})
    n = flat.table.num_rows
    # Earlier events before their winner at an equal sequence (a replay of it): a stable order.
    table = flat.table.append_column("__winner", pa.array(np.arange(n) < winners, pa.bool_()))
    order = pc.sort_indices(
        table, sort_keys=[*((k, "ascending") for k in keys), ("__seq", "ascending"), ("__winner", "ascending")]
    )
    rows, remaining = fill_forward(flat.table.take(order), {c: m.take(order) for c, m in masks.items()}, keys)
    back = pc.sort_indices(order)  # sorted position of each original row
    mine = back.slice(0, winners)
    return FlatBatch(rows.take(mine), keys, {c: m.take(mine) for c, m in remaining.items()})


def fill_from_stored(
    table: pa.Table, masks: Masks, stored: pa.Table, keys: list[str]
) -> tuple[pa.Table, dict[str, pa.Array]]:
    """Masked cells take the value of the stored row with their key (soft-deleted rows excepted).
    Returns the filled rows and the cells whose key the target does not hold."""
    if "__deleted" in stored.column_names:
        stored = stored.filter(pc.invert(pc.fill_null(stored.column("__deleted"), False)))
    if stored.num_rows == 0:
        return table, dict(masks)
    n = table.num_rows
    names = list(masks)
    right = stored.select([*keys, *names]).rename_columns([*keys, *(f"__stored.{c}" for c in names)])
    right = right.append_column("__found", pa.array(np.ones(right.num_rows, bool)))
    left = table.select(keys).append_column("__row", pa.array(np.arange(n, dtype=np.int64)))
    joined = left.join(right, keys, join_type="left outer")
    joined = joined.take(pc.sort_indices(joined.column("__row")))  # a join does not keep the order
    found = pc.fill_null(joined.column("__found").combine_chunks(), False)
    remaining: dict[str, pa.Array] = {}
    for name, mask in masks.items():
        table = _replace(table, name, mask, found, joined.column(f"__stored.{name}").combine_chunks(), remaining)
    return table, remaining


def _any(masks: Masks) -> pa.Array | None:
    """Per row: is any of its cells masked? (None without masks)"""
    rows = None
    for mask in masks.values():
        rows = mask if rows is None else pc.or_(rows, mask)
    return rows


def needing(table: pa.Table, masks: Masks) -> pa.Table:
    """The rows with at least one masked cell: the keys to look up in the target."""
    rows = _any(masks)
    return table if rows is None else table.filter(rows)


def warn_kept(table: str, masks: Masks) -> None:
    """The placeholder stays where neither the batch nor the target had the value: say so."""
    rows = _any(masks)
    if rows is not None:
        warn_kept_rows(table, pc.sum(pc.cast(rows, pa.int64())).as_py() or 0, list(masks))


def warn_kept_rows(table: str, count: int, columns: list[str]) -> None:
    log.warning(
        "%s: %d row(s) hold Debezium's unavailable-value placeholder in column(s) %s: the source left these "
        "unchanged TOASTed values out of an update, and the target has no earlier version of the row to keep "
        "them from. Set REPLICA IDENTITY FULL on the source table (updates then carry every value) and "
        "re-snapshot it, or start the sink from the table's snapshot",
        table,
        count,
        ", ".join(sorted(columns)),
    )

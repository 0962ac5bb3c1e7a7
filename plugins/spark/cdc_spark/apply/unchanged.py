"""Values the source did not send are kept, not overwritten with Debezium's placeholder.

A PostgreSQL update carries `unavailable.value.placeholder` for each unchanged TOASTed
column (decode/unavailable.py). The value it stands for is the key's previous one, by
sequence (`__seq`): of the key's earlier events in the same micro-batch that carry the value
or delete the row (the per-key reduction keeps those events for such winners) and the state
the target stores for the key (its row, or the delete it remembers), the newest decides. A
late, older event in the batch therefore loses to a newer stored row, and a delete ends the
search only where it is the newest. Where a delete decides, or nothing does, the row keeps
the placeholder, with a warning that names the table, the columns and the fix.

Two steps: `fill_in_batch` (with the batch's events) takes the batch's value and records its
sequence (`Unsent`); the target then reads its stored state of those keys and settles each
cell by sequence (`fill_from_stored`, or the PostgreSQL target's SQL of the same rule).

A table with `ignore_null_updates` (table_options.py) has the NULL cells of its updates masked
the same way: the same rule keeps the value they leave unchanged. Those masks are quiet: a
NULL that finds no value to keep is a NULL, not a value lost, so it is not warned about.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.apply.arrowutil import same_as_previous
from cdc_spark.apply.table_options import TableOptions, null_masks
from cdc_spark.decode.flatten import FlatBatch, flatten
from cdc_spark.decode.unavailable import Placeholder

log = logging.getLogger(__name__)
Masks = Mapping[str, pa.Array]
_NO_SEQ = pa.scalar(None, pa.binary())


class Unsent(dict[str, pa.Array]):
    """Column → the winners' cells that carried the placeholder (bool masks), each still to be
    settled against the target's stored state of its key, plus per column and row:

    - `since`: the `__seq` of the key's newest earlier event of the batch that decides the
      cell (carries the value, or deletes the row); null where the batch has none;
    - `filled`: whether that event carried the value (now in the cell; else the cell keeps
      the placeholder);
    - `sent`: the winner's own cell (the placeholder in the column's form), for a cell that a
      newer stored delete leaves without a value;
    - `quiet`: the cells masked for `ignore_null_updates` (an update's NULL), never reported
      when nothing had a value for them (they stay NULL).

    A plain mapping of masks means: nothing in the batch, the winners' cells as sent.
    """

    def __init__(
        self,
        masks: Masks,
        since: Mapping[str, pa.Array] | None = None,
        filled: Mapping[str, pa.Array] | None = None,
        sent: Mapping[str, pa.Array] | None = None,
        quiet: Mapping[str, pa.Array] | None = None,
    ) -> None:
        super().__init__(masks)
        self.since = dict(since or {})
        self.filled = dict(filled or {})
        self.sent = dict(sent or {})
        self.quiet = dict(quiet or {})


def since_of(masks: Masks, name: str, n: int) -> pa.Array:
    """Per row, the sequence of the batch's event that decides the cell (null: none)."""
    since = masks.since.get(name) if isinstance(masks, Unsent) else None
    return since if since is not None else pa.nulls(n, pa.binary())


def filled_of(masks: Masks, name: str, n: int) -> pa.Array:
    """Per row, whether the batch supplied the cell's value."""
    filled = masks.filled.get(name) if isinstance(masks, Unsent) else None
    return filled if filled is not None else pa.array(np.zeros(n, bool))


def loud(masks: Masks, name: str, cells: pa.Array) -> pa.Array:
    """`cells` of column `name` less the quiet ones (`Unsent.quiet`): those worth a warning."""
    quiet = masks.quiet.get(name) if isinstance(masks, Unsent) else None
    return cells if quiet is None else pc.and_(cells, pc.invert(quiet))


def sent_of(masks: Masks, name: str, table: pa.Table) -> pa.Array:
    """The winners' cells of `name` as the source sent them (the placeholder where masked)."""
    sent = masks.sent.get(name) if isinstance(masks, Unsent) else None
    column = table.column(name).combine_chunks()
    return column if sent is None else sent.cast(column.type)


def flatten_latest(
    topic: str,
    winners: pa.Table,
    earlier: pa.Table | None,
    schemas: Mapping[int, str] | None,
    placeholder: Placeholder,
    options: TableOptions | None = None,
    table: str = "",
) -> FlatBatch:
    """The winners of one topic flattened, their placeholders (and with `ignore_null_updates`
    their updates' NULLs) filled from `earlier` events of their keys (see
    latest.latest_and_earlier); `unchanged` marks every such cell, for the target to settle
    against its stored state by sequence (fill_in_batch). `options`: the columns the target
    table `table` takes (TableOptions.select) and whether it ignores null updates."""
    rows = winners
    if earlier is not None and earlier.num_rows:
        rows = pa.concat_tables([winners, earlier.select(winners.column_names).cast(winners.schema)])
    flat = flatten(topic, rows, schemas)
    if options is not None:
        flat = options.select(flat, table or topic)
    nulls = options is not None and options.ignore_null_updates
    return fill_in_batch(flat, winners.num_rows, placeholder, null_updates=nulls)


def fill_forward(rows: pa.Table, masks: Masks, keys: list[str]) -> tuple[pa.Table, dict[str, pa.Array]]:
    """`rows` sorted by key, then sequence: each masked cell takes the value of the nearest earlier
    row of its key whose cell is not masked, unless a delete lies between them. Returns the
    filled rows and, per column, the cells that found nothing."""
    rows, _, remaining = _fill_forward(rows, masks, keys)
    return rows, remaining


def _fill_forward(
    rows: pa.Table, masks: Masks, keys: list[str]
) -> tuple[pa.Table, dict[str, pa.Array], dict[str, pa.Array]]:
    """fill_forward, and per column the row deciding each masked cell: the nearest earlier row
    of its key whose cell is not masked or that is a delete (-1: none, the key's first)."""
    n = rows.num_rows
    first = pc.invert(same_as_previous(rows, keys))  # the first row of each key
    barrier = rows.column("__deleted").combine_chunks() if "__deleted" in rows.column_names else None
    index = pa.array(np.arange(n, dtype=np.int64))
    deciders: dict[str, pa.Array] = {}
    remaining: dict[str, pa.Array] = {}
    for name, mask in masks.items():
        # Per row, the row deciding it: itself, none (-1: first of its key), or (null) the row
        # found by carrying the last one forward. Deletes are never masked: they decide.
        source = pc.if_else(mask, pc.if_else(first, -1, pa.scalar(None, pa.int64())), index)
        source = pc.fill_null_forward(source)
        at = pc.max_element_wise(source, 0)
        found = pc.greater_equal(source, 0)
        if barrier is not None:  # a delete decides that there is no value
            found = pc.and_(found, pc.invert(pc.fill_null(barrier.take(at), False)))
        taken = rows.column(name).combine_chunks().take(at)
        rows = _replace(rows, name, mask, found, taken, remaining)
        deciders[name] = source
    return rows, deciders, remaining


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


def fill_in_batch(flat: FlatBatch, winners: int, placeholder: Placeholder, null_updates: bool = False) -> FlatBatch:
    """`flat.table`: the batch's per-key winners (the first `winners` rows), then earlier events
    of keys whose winner may carry the placeholder (or, with `null_updates`, NULLs of an
    update). Returns the winners, those cells replaced from those events; `unchanged` (an
    `Unsent`) marks every such cell, with the sequence of the event that decided it, for the
    target to settle against its stored row."""
    keys = flat.key_columns
    masks = placeholder.masks(flat.table, skip=frozenset(keys))
    quiet = null_masks(flat.table, keys) if null_updates else {}
    for name, mask in quiet.items():  # a cell is the placeholder or NULL, never both
        masks[name] = pc.or_(masks[name], mask) if name in masks else mask
    if flat.table.num_rows == winners or not masks:
        mine = {c: m.slice(0, winners) for c, m in masks.items()}
        quiet_mine = {c: m.slice(0, winners) for c, m in quiet.items()}
        return FlatBatch(flat.table.slice(0, winners), keys, Unsent(mine, quiet=quiet_mine) if quiet_mine else mine)
    n = flat.table.num_rows
    # Earlier events before their winner at an equal sequence (a replay of it): a stable order.
    table = flat.table.append_column("__winner", pa.array(np.arange(n) < winners, pa.bool_()))
    order = pc.sort_indices(
        table, sort_keys=[*((k, "ascending") for k in keys), ("__seq", "ascending"), ("__winner", "ascending")]
    )
    ordered = flat.table.take(order)
    rows, deciders, remaining = _fill_forward(ordered, {c: m.take(order) for c, m in masks.items()}, keys)
    back = pc.sort_indices(order)  # sorted position of each original row
    mine = back.slice(0, winners)
    seqs = ordered.column("__seq").combine_chunks()
    since: dict[str, pa.Array] = {}
    filled: dict[str, pa.Array] = {}
    for name, source in deciders.items():
        at = source.take(mine)
        since[name] = pc.if_else(pc.greater_equal(at, 0), seqs.take(pc.max_element_wise(at, 0)), _NO_SEQ)
        left = remaining.get(name)
        filled[name] = pa.array(np.ones(winners, bool)) if left is None else pc.invert(left.take(mine))
    winners_masks = {c: m.slice(0, winners) for c, m in masks.items()}
    sent = {c: flat.table.column(c).combine_chunks().slice(0, winners) for c in masks}
    quiet_winners = {c: m.slice(0, winners) for c, m in quiet.items()}
    return FlatBatch(rows.take(mine), keys, Unsent(winners_masks, since, filled, sent, quiet_winners))


def fill_from_stored(
    table: pa.Table, masks: Masks, stored: pa.Table, keys: list[str], deleted: pa.Table | None = None
) -> tuple[pa.Table, dict[str, pa.Array]]:
    """Settle each masked cell by sequence: the target's stored state of its key decides where
    it is at least as new as the batch's own source (`Unsent.since`; none: any stored state
    decides). `stored`: the stored rows of the keys (keys, `__seq`, the masked columns, and
    `__deleted` for soft deletes); `deleted`: the deletes the target remembers (keys, `__seq`).
    A stored row gives its value; a stored delete newer than the row leaves the placeholder.
    Returns the settled rows and the cells left holding the placeholder (quiet cells, left NULL,
    are not among them)."""
    n = table.num_rows
    names = list(masks)
    state = _stored_state(table.select(keys), stored, deleted, keys, names)
    seq = state.column("__state_seq").combine_chunks()
    live = pc.fill_null(state.column("__state_live").combine_chunks(), False)
    remaining: dict[str, pa.Array] = {}
    for name, mask in masks.items():
        since = since_of(masks, name, n)
        newer = pc.or_kleene(pc.is_null(since), pc.greater_equal(seq, since))
        decides = pc.fill_null(pc.and_kleene(pc.and_kleene(mask, pc.is_valid(seq)), newer), False)
        take = pc.and_(decides, live)
        ended = pc.and_(decides, pc.invert(live))
        column = table.column(name).combine_chunks()
        value = column
        if pc.any(take).as_py():
            value = pc.if_else(take, state.column(f"__stored.{name}").combine_chunks().cast(column.type), value)
        if pc.any(ended).as_py():
            value = pc.if_else(ended, sent_of(masks, name, table), value)
        if value is not column:
            table = table.set_column(table.schema.get_field_index(name), table.schema.field(name), value)
        # Left holding the placeholder: a stored delete decided, or the batch did without a value.
        kept = pc.and_(mask, pc.or_(ended, pc.and_(pc.invert(decides), pc.invert(filled_of(masks, name, n)))))
        kept = loud(masks, name, kept)
        if pc.any(kept).as_py():
            remaining[name] = kept
    return table, remaining


def _stored_state(
    rows: pa.Table, stored: pa.Table, deleted: pa.Table | None, keys: list[str], names: list[str]
) -> pa.Table:
    """Per row of `rows` (key columns), in order: `__state_seq`, the sequence of the target's
    newest state of the key (null: none); `__state_live`, whether that is a live row; and its
    values `__stored.<name>`."""
    n = rows.num_rows
    left = rows.append_column("__row", pa.array(np.arange(n, dtype=np.int64)))
    row_seq = pa.nulls(n, pa.binary())
    row_live = pa.array(np.zeros(n, bool))
    values = {name: pa.nulls(n) for name in names}
    if stored.num_rows:
        right = stored.select([*keys, "__seq", *names]).rename_columns(
            [*keys, "__row_seq", *(f"__stored.{c}" for c in names)]
        )
        dead = stored.column("__deleted") if "__deleted" in stored.column_names else None
        alive = pa.array(np.ones(stored.num_rows, bool)) if dead is None else pc.invert(pc.fill_null(dead, False))
        joined = _aligned(left, right.append_column("__row_live", alive), keys, n)
        row_seq = joined.column("__row_seq").combine_chunks()
        row_live = pc.fill_null(joined.column("__row_live").combine_chunks(), False)
        values = {c: joined.column(f"__stored.{c}").combine_chunks() for c in names}
    tomb_seq = pa.nulls(n, pa.binary())
    if deleted is not None and deleted.num_rows:
        tombs = deleted.select([*keys, "__seq"]).rename_columns([*keys, "__tomb_seq"])
        tomb_seq = _aligned(left, tombs, keys, n).column("__tomb_seq").combine_chunks().cast(pa.binary())
    row_seq = row_seq.cast(pa.binary())
    # The remembered delete is the newer state where the row is absent or older than it.
    tomb_newer = pc.fill_null(pc.or_kleene(pc.is_null(row_seq), pc.greater(tomb_seq, row_seq)), False)
    tomb_newer = pc.and_(tomb_newer, pc.is_valid(tomb_seq))
    seq = pc.if_else(tomb_newer, tomb_seq, row_seq)
    live = pc.and_(row_live, pc.invert(tomb_newer))
    columns = {"__state_seq": seq, "__state_live": live, **{f"__stored.{c}": v for c, v in values.items()}}
    return pa.table(columns)


def _aligned(left: pa.Table, right: pa.Table, keys: list[str], n: int) -> pa.Table:
    """`left` (with `__row`) joined with `right` by key, one row per row of `left`, in its order."""
    joined = left.join(right, keys, join_type="left outer")
    if joined.num_rows != n:  # a key stored twice: keep its first match
        joined = joined.group_by("__row", use_threads=False).aggregate(
            [(c, "first") for c in joined.column_names if c != "__row"]
        )
        joined = joined.rename_columns([c.removesuffix("_first") for c in joined.column_names])
    return joined.take(pc.sort_indices(joined.column("__row")))  # a join does not keep the order


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

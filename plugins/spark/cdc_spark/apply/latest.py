"""A micro-batch's latest event per key: decoded (and reduced per source partition) in
Spark tasks, then reduced across partitions in Arrow: on the driver for targets that
commit there, or in each partition after a shuffle by key (PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Row

from cdc_spark.decode import DECODED_SCHEMA, Deserializer, decode_batches
from cdc_spark.decode.events import SNAPSHOT_END
from cdc_spark.decode.unavailable import Placeholder


def decode(
    raw: DataFrame, deserializer: Deserializer, combine: bool = True, placeholder: Placeholder | None = None
) -> DataFrame:
    """One decoding task per source partition (mapInArrow keeps the partitioning).

    `combine` keeps only each key's latest event per source partition before the shuffle
    (and the earlier events whose values a latest carrying `placeholder` may need; keep_latest).
    """
    from cdc_spark.source.reader import HEADERS_SCHEMA

    schema = f"{DECODED_SCHEMA}, {HEADERS_SCHEMA}" if "headers" in raw.columns else DECODED_SCHEMA
    return raw.mapInArrow(partial(decode_batches, des=deserializer, combine=combine, placeholder=placeholder), schema)


def truncate_marks(loose: Sequence[Row], truncates: bool = True) -> dict[str, bytes]:
    """topic → sequence of its latest truncate in the batch (from the collected keyless rows).

    A completed table snapshot (SNAPSHOT_END) counts as a truncate at its reads' position: the
    snapshot holds every row the table had there, so older rows are gone (a row deleted while
    an interrupted snapshot was retaken has no delete event). `truncates=False`
    (truncate.enabled=false) keeps rows on TRUNCATE, but never keeps rows a snapshot lacks.
    """
    ops = ("t", SNAPSHOT_END) if truncates else (SNAPSHOT_END,)
    marks: dict[str, bytes] = {}
    for r in loose:
        if r["__op"] in ops and r["__error"] is None:
            seq = bytes(r["__seq"])
            marks[r["topic"]] = max(marks.get(r["topic"], seq), seq)
    return marks


def topic_marks(
    topics: pa.Array | pa.ChunkedArray, table_marks: Mapping[str, bytes], table_for: Callable[[str], str]
) -> dict[str, bytes]:
    """topic → the sequence its table was last truncated at, for the topics in `topics`."""
    if not table_marks or len(topics) == 0:
        return {}
    marks = {topic: table_marks.get(table_for(topic)) for topic in pc.unique(topics).to_pylist()}
    return {topic: seq for topic, seq in marks.items() if seq is not None}


def latest_rows(rows: pa.Table, truncates: Mapping[str, bytes]) -> pa.Table:
    """The winner per (topic, key): highest `__seq`, then the later offset for exact replays.

    Events older than the last truncate of their topic's table (in this batch or an earlier
    one, `truncates` by topic) are dropped: the truncate cleared what they wrote, and a late
    one must not bring a row back. `rows` must hold every remaining event of its keys: all of a
    batch collected on the driver, or one partition of a shuffle by key. Sorting in Arrow
    here is cheaper than a Spark window (a sort inside the shuffle).
    """
    return _winners(_after_truncates(rows, truncates))


def latest_and_earlier(
    rows: pa.Table, truncates: Mapping[str, bytes], placeholder: Placeholder, null_updates: Collection[str] = ()
) -> tuple[pa.Table, pa.Table]:
    """`latest_rows`, and the earlier events that may hold the values a winner lacks: its
    placeholder for a value the source did not send, or (topics in `null_updates`, whose
    tables ignore null updates) the NULLs of an update (apply/unchanged.py)."""
    rows = _after_truncates(rows, truncates)
    winners = _winners(rows)
    none = rows.slice(0, 0)
    if winners.num_rows == rows.num_rows:
        return winners, none
    suspect = placeholder.suspects(winners.column("value"))
    partial_updates = _partial_winners(winners, null_updates)
    if not pc.any(suspect).as_py() and partial_updates is None:
        return winners, none
    pairs = _pairs(rows)
    needed: list[pa.Array] = []  # indices into `rows`, one array per rule
    if pc.any(suspect).as_py():
        at = pc.indices_nonzero(pc.is_in(pairs, value_set=_pairs(winners.filter(suspect))))
        chains = rows.take(at)
        needed.append(at.take(placeholder.earlier_needed(chains, _pairs(chains))))
    if partial_updates is not None:
        at = pc.indices_nonzero(pc.is_in(pairs, value_set=_pairs(winners.filter(partial_updates))))
        needed.append(at.take(_since_last_whole(rows.take(at))))
    indices = pc.unique(pa.concat_arrays([n.cast(pa.int64()) for n in needed]))  # both rules may keep one
    return winners, rows.take(indices.take(pc.sort_indices(indices)))


def _partial_winners(winners: pa.Table, topics: Collection[str]) -> pa.Array | None:
    """Per winner: is it an update of a topic whose table ignores null updates? (None: none is)"""
    if not topics:
        return None
    wanted = pa.array(sorted(topics), winners.schema.field("topic").type)
    mask = pc.and_(pc.is_in(winners["topic"], value_set=wanted), pc.equal(winners["__op"], "u"))
    mask = pc.fill_null(mask, False)
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return mask if pc.any(mask).as_py() else None


def _since_last_whole(chains: pa.Table) -> pa.Array:
    """Indices of each key's events the fill of its latest (an update) may need under
    ignore_null_updates: the earlier ones back to, and with, its newest whole row (an insert, a
    read or a delete: those set or clear every column), not the latest itself."""
    n = chains.num_rows
    if n < 2:
        return pa.array([], pa.int64())
    order = pc.sort_indices(
        pa.table({"g": _pairs(chains), "s": chains.column("__seq"), "o": chains.column("offset")}),
        sort_keys=[("g", "ascending"), ("s", "descending"), ("o", "descending")],
    )
    groups = _pairs(chains).take(order)
    start = pa.concat_arrays([pa.array([True]), pc.not_equal(groups.slice(1), groups.slice(0, n - 1))])
    whole = pc.fill_null(pc.not_equal(chains.column("__op").combine_chunks().take(order), "u"), True)
    # A row is needed unless a whole row lies between it and its key's latest (newer than it).
    here = pa.array(np.arange(n, dtype=np.int64))
    prior = pc.if_else(whole, here, pa.scalar(None, pa.int64()))
    prior = pc.if_else(start, -1, pa.concat_arrays([pa.nulls(1, pa.int64()), prior.slice(0, n - 1)]))
    shadowed = pc.greater_equal(pc.fill_null_forward(prior), 0)
    return order.filter(pc.and_(pc.invert(start), pc.invert(shadowed)))


def _pairs(rows: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(rows["topic"], rows["key"], "\x00").combine_chunks()


def _after_truncates(rows: pa.Table, truncates: Mapping[str, bytes]) -> pa.Table:
    for topic, seq in truncates.items():
        rows = rows.filter(pc.invert(pc.and_(pc.equal(rows["topic"], topic), pc.less(rows["__seq"], seq))))
    return rows


def _winners(rows: pa.Table) -> pa.Table:
    if rows.num_rows < 2:
        return rows
    # Kafka places a key in one partition, so the source tasks' winners usually have no
    # key twice: then there is nothing to reduce.
    pairs = pc.binary_join_element_wise(rows["topic"], rows["key"], "\x00")
    if pc.count_distinct(pairs).as_py() == rows.num_rows:
        return rows
    rows = rows.combine_chunks()  # take() from one array, not across the collected batches
    order = pc.sort_indices(
        rows.select(["topic", "key", "__seq", "offset"]),
        sort_keys=[("topic", "ascending"), ("key", "ascending"), ("__seq", "descending"), ("offset", "descending")],
    )
    topics = rows["topic"].take(order).combine_chunks()
    keys = rows["key"].take(order).combine_chunks()
    n = len(keys)
    same = pc.and_(pc.equal(topics.slice(1), topics.slice(0, n - 1)), pc.equal(keys.slice(1), keys.slice(0, n - 1)))
    first = pa.concat_arrays([pa.array([True]), pc.invert(pc.fill_null(same, False))])
    return rows.take(order.filter(first))

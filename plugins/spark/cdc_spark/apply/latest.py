"""A micro-batch's latest event per key: decoded (and reduced per source partition) in
Spark tasks, then reduced across partitions in Arrow: on the driver for targets that
commit there, or in each partition after a shuffle by key (PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

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
    rows: pa.Table, truncates: Mapping[str, bytes], placeholder: Placeholder
) -> tuple[pa.Table, pa.Table]:
    """`latest_rows`, and the earlier events that may hold the values a winner lacks (its
    placeholder for a value the source did not send; apply/unchanged.py)."""
    rows = _after_truncates(rows, truncates)
    winners = _winners(rows)
    none = rows.slice(0, 0)
    if winners.num_rows == rows.num_rows:
        return winners, none
    suspect = placeholder.suspects(winners.column("value"))
    if not pc.any(suspect).as_py():
        return winners, none
    chains = rows.filter(pc.is_in(_pairs(rows), value_set=_pairs(winners.filter(suspect))))
    return winners, chains.take(placeholder.earlier_needed(chains, _pairs(chains)))


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

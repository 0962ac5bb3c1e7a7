"""Raw records → one row per change event with its ordering metadata (runs in Spark tasks).

The row's column values stay in the raw `value` bytes here: only the per-key winners of a
micro-batch are flattened into typed columns later (`flatten.py`), so the 1M-event stage
parses each record once and builds no per-table schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.decode import fast, schemas, sequence, unwrapped
from cdc_spark.decode._json import canonical
from cdc_spark.decode.deserializer import DeserializeError, Deserializer, JsonDeserializer
from cdc_spark.decode.unavailable import Placeholder

OPS = frozenset("curdt")
SKIPPED_OPS = frozenset("m")  # logical decoding messages carry no row
# Not a Debezium op: a keyless row added after the read (`r`) that completes a table's snapshot,
# at that read's `__seq`. The sink then drops the table's rows older than the snapshot: rows
# deleted while an interrupted snapshot was retaken, or while no binlog/WAL covered the gap,
# have no delete event and would otherwise live on (apply/engine.py, as a truncate).
SNAPSHOT_END = "s"
SNAPSHOT_END_MARKERS = fast.SNAPSHOT_END_MARKERS
DECODED_SCHEMA = (
    "topic string, partition int, offset bigint, raw_key binary, key string, value binary, "
    "__op string, __seq binary, __source_ts_ms bigint, __deleted boolean, __error string, "
    "schema_id bigint, value_schema string"
)
DECODED_ARROW = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("raw_key", pa.binary()),
        ("key", pa.string()),
        ("value", pa.binary()),
        ("__op", pa.string()),
        ("__seq", pa.binary()),
        ("__source_ts_ms", pa.int64()),
        ("__deleted", pa.bool_()),
        ("__error", pa.string()),
        ("schema_id", pa.int64()),  # with latestPerKey: `value` is the payload, see schemas.py
        ("value_schema", pa.string()),
    ]
)


def canonical_key(key: Any) -> str:
    """One text per key value, whatever the field order: the grouping key of the batch."""
    return canonical(key)


def decode_one(des: Deserializer, topic: str, key: bytes | None, value: bytes | None) -> tuple | None:
    """(key, op, seq, source_ts_ms, deleted, error) or None for records that are not changes."""
    return _decode_one(des, topic, key, value)[0]


def _decode_one(des: Deserializer, topic: str, key: bytes | None, value: bytes | None) -> tuple[tuple | None, bool]:
    """decode_one's result, and whether the event is the last read of its table's snapshot."""
    if value is None:
        return None, False  # the Kafka tombstone after a delete: compaction's business, not a change
    try:
        env = des.value(topic, value)
    except DeserializeError as e:
        return (None, None, None, None, None, str(e)), False
    flat = isinstance(env, dict) and not unwrapped.is_envelope(env)
    if flat:  # a row flattened by ExtractNewRecordState: its add.fields carry op and position
        try:
            op, source = unwrapped.event(env)
        except unwrapped.UnwrapError as e:
            return (None, None, None, None, None, f"topic {topic}: {e}"), False
    elif isinstance(env, dict):
        op, source = env.get("op"), env.get("source")
    else:
        return (None, None, None, None, None, f"topic {topic}: {_not_an_event(env)}"), False
    if op in SKIPPED_OPS:
        return None, False
    if op not in OPS:
        return (None, op, None, None, None, f"topic {topic}: unknown op {op!r} (expected one of c, u, r, d, t)"), False
    try:
        seq = sequence.from_source(source)
    except (sequence.SequenceError, ValueError, TypeError) as e:
        return (None, op, None, None, None, f"topic {topic}: {e}"), False
    ts = source.get("ts_ms") if isinstance(source, dict) else None
    if op == "t":
        return (None, op, seq, ts, False, None), False
    try:
        k = des.key(topic, key)
    except DeserializeError as e:
        return (None, op, seq, ts, None, str(e)), False
    if k is None:
        error = (
            f"topic {topic}: op={op} event without a record key; the sink applies changes by key. Fix: give the "
            "table a primary key, or name its key columns in the source's message.key.columns and take a new "
            "snapshot, or leave the table out of the job"
        )
        return (None, op, seq, ts, None, error), False
    row = env if flat else env.get("before") if op == "d" else env.get("after")
    if op != "d" and not isinstance(row, dict):
        return (None, op, seq, ts, None, f"topic {topic}: op={op} event has no 'after' row"), False
    end = op == "r" and isinstance(source, dict) and source.get("snapshot") in SNAPSHOT_END_MARKERS
    return (canonical_key(k), op, seq, ts, op == "d", None), end


def _not_an_event(value: Any) -> str:
    if value is None:  # JsonConverter's null payload under a kept schema
        return (
            "the value is null under a value schema, as ExtractNewRecordState writes a delete under "
            "delete.tombstone.handling.mode=tombstone: the delete has no source position, so the sink cannot order "
            f"it. {unwrapped.advice()}"
        )
    return "the value is not a Debezium change event (no 'op')"


def keep_latest(table: pa.Table, placeholder: Placeholder | None = None) -> pa.Table:
    """Per key, only the highest (`__seq`, offset) row; keyless rows (errors, truncates) all stay.

    A combiner: run inside each source partition before the shuffle, it shrinks what the
    shuffle moves without changing the result of the global per-key reduction after it.
    A key whose latest event may carry `placeholder` keeps the earlier events that may hold
    the values the source did not send (Placeholder.earlier_needed, apply/unchanged.py).
    """
    if table.num_rows < 2:
        return table
    # One contiguous copy first: take() across many chunks is several times slower than
    # concatenating them and taking from one array.
    table = table.combine_chunks()
    # Sort and compare only the small columns; the values are copied once, by the final take.
    order = pc.sort_indices(
        table.select(["key", "__seq", "offset"]),
        sort_keys=[("key", "ascending", "at_end"), ("__seq", "descending"), ("offset", "descending")],
    )
    keys = table.column("key").take(order).combine_chunks()
    first = pc.fill_null(pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1)), True)
    keep = pc.or_(pa.concat_arrays([pa.array([True]), first]), pc.is_null(keys))
    kept = order.filter(keep)
    if placeholder is not None:
        latest = table.column("key").take(kept)
        suspect = pc.and_(pc.is_valid(latest), placeholder.suspects(table.column("value").take(kept)))
        if pc.any(suspect).as_py():
            chains = pc.indices_nonzero(pc.is_in(table.column("key"), value_set=latest.filter(suspect)))
            chain_rows = table.take(chains)
            needed = chains.take(placeholder.earlier_needed(chain_rows, chain_rows.column("key").combine_chunks()))
            kept = pc.unique(pa.concat_arrays([kept, needed.cast(kept.type)]))
    return table.take(kept.take(pc.array_sort_indices(kept)))


def decode_batches(
    batches: Iterator[pa.RecordBatch],
    des: Deserializer | None = None,
    combine: bool = False,
    placeholder: Placeholder | None = None,
) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: source rows in, `DECODED_SCHEMA` rows out.

    `combine=True` holds the partition's events and emits only the latest per key (see
    keep_latest for `placeholder`), with the schema cut off their values (schemas.py).
    """
    des = des or JsonDeserializer()
    if not combine:
        yield from _decode_each(batches, des, None)
        return
    texts: dict[int, str] = {}  # schema id → text, for the schemas cut off the values
    kept = [b for b in _decode_each(batches, des, texts) if b.num_rows]
    if kept:
        latest = keep_latest(pa.Table.from_batches(kept, schema=kept[0].schema), placeholder)
        yield from schemas.mark_first(latest, texts).to_batches()


def _decode_each(
    batches: Iterator[pa.RecordBatch], des: Deserializer, texts: dict[int, str] | None
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        decoded = fast_decode(batch, des.schemas_enable, texts) if isinstance(des, JsonDeserializer) else None
        if decoded is not None:
            yield decoded
            continue
        runs = fast.envelope_runs(batch.column("value")) if isinstance(des, JsonDeserializer) else []
        if len(runs) < 2:
            yield _decode_rows(batch, des)
            continue
        # A schema change (or a poison record) inside the batch: each run is read on its own.
        for start, stop in runs:
            part = batch.slice(start, stop - start)
            decoded = fast_decode(part, des.schemas_enable, texts)
            yield _decode_rows(part, des) if decoded is None else decoded


def fast_decode(
    batch: pa.RecordBatch, schemas_enable: bool | None, texts: dict[int, str] | None = None
) -> pa.RecordBatch | None:
    """The whole batch in Arrow (fast.py), or None when some record needs the per-record path.

    With `texts`, enveloped values are cut down to their payload and their schema text is
    recorded there by id (see schemas.py).
    """
    cols = fast.decode_events(batch, schemas_enable)
    if cols is None:
        return None
    kept = cols["batch"]
    n = kept.num_rows
    value, ids = kept.column("value"), pa.nulls(n, pa.int64())
    text = schemas.schema_of(cols["prefix"]) if texts is not None else None
    if text is not None and texts is not None:
        sid = schemas.schema_id(text)
        texts[sid] = text
        value, ids = cols["payload"].cast(pa.binary()), pa.array(np.full(n, sid, np.int64))
    decoded = _with_headers(
        [
            kept.column("topic"),
            kept.column("partition"),
            kept.column("offset"),
            kept.column("key"),
            cols["key"],
            value,
            cols["__op"],
            cols["__seq"],
            cols["__source_ts_ms"],
            cols["__deleted"],
            pa.nulls(n, pa.string()),
            ids,
            pa.nulls(n, pa.string()),
        ],
        kept,
        None,
    )
    ends = cols["snapshot_end"]
    return decoded if ends is None else with_snapshot_ends(decoded, ends)


def _decode_rows(batch: pa.RecordBatch, des: Deserializer) -> pa.RecordBatch:
    """Record by record: slower, but it names every poison event."""
    topics = batch.column("topic").to_pylist()
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    keep: list[int] = []
    ends: list[bool] = []
    cols: list[list[Any]] = [[] for _ in range(6)]
    for i, (topic, k, v) in enumerate(zip(topics, keys, values, strict=True)):
        out, end = _decode_one(des, topic, k, v)
        if out is None:
            continue
        keep.append(i)
        ends.append(end)
        for c, x in zip(cols, out, strict=True):
            c.append(x)
    idx = pa.array(keep, pa.int64())
    decoded = _with_headers(
        [
            batch.column("topic").take(idx),
            batch.column("partition").take(idx),
            batch.column("offset").take(idx),
            batch.column("key").take(idx),
            pa.array(cols[0], pa.string()),
            batch.column("value").take(idx),
            pa.array(cols[1], pa.string()),
            pa.array(cols[2], pa.binary()),
            pa.array(cols[3], pa.int64()),
            pa.array(cols[4], pa.bool_()),
            pa.array(cols[5], pa.string()),
            pa.nulls(len(keep), pa.int64()),
            pa.nulls(len(keep), pa.string()),
        ],
        batch,
        idx,
    )
    return with_snapshot_ends(decoded, pa.array(ends, pa.bool_())) if any(ends) else decoded


def with_snapshot_ends(decoded: pa.RecordBatch, ends: pa.Array) -> pa.RecordBatch:
    """`decoded` plus one keyless SNAPSHOT_END row per row marked in `ends` (a table's last snapshot
    read), with that row's topic, position and `__seq`."""
    marked = decoded.filter(ends)
    n = marked.num_rows
    blank = {"raw_key", "key", "value", "__error", "schema_id", "value_schema"}
    arrays = []
    for field in decoded.schema:
        if field.name == "__op":
            arrays.append(pa.array([SNAPSHOT_END] * n, field.type))
        elif field.name == "__deleted":
            arrays.append(pa.array([False] * n, field.type))
        elif field.name in blank:
            arrays.append(pa.nulls(n, field.type))
        else:
            arrays.append(marked.column(field.name))
    extra = pa.RecordBatch.from_arrays(arrays, schema=decoded.schema)
    return pa.Table.from_batches([decoded, extra]).combine_chunks().to_batches()[0]


def _with_headers(arrays: list[pa.Array], raw: pa.RecordBatch, idx: pa.Array | None) -> pa.RecordBatch:
    """The decoded columns, plus the records' `headers` when the source reads them (includeHeaders)."""
    if "headers" not in raw.schema.names:
        return pa.RecordBatch.from_arrays(arrays, schema=DECODED_ARROW)
    headers = raw.column("headers")
    arrays.append(headers if idx is None else headers.take(idx))
    return pa.RecordBatch.from_arrays(arrays, schema=DECODED_ARROW.append(raw.schema.field("headers")))

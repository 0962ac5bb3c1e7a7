"""Vectorized decoding: a whole Arrow batch of JsonConverter records parsed in Arrow's C++.

Records of one topic repeat the same schema text byte for byte, so the payloads are cut
out of the values with Arrow string kernels, joined into newline-delimited JSON and read
by `pyarrow.json` with an explicit schema. Per-record Python runs only for the distinct
keys (their canonical text). Anything unusual (malformed JSON, an unknown op, a missing
key, a second schema, a type the reader cannot convert) makes these functions return
None, and the caller decodes that batch record by record, which names the poison event.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from cdc_spark.decode import sequence, unwrapped
from cdc_spark.decode._json import canonical, loads
from cdc_spark.decode.envelope import EnvelopeReader

_SOURCE = pa.struct(
    [
        ("file", pa.string()),
        ("pos", pa.int64()),
        ("event", pa.int64()),
        ("row", pa.int64()),
        ("lsn", pa.int64()),
        ("lsn_commit", pa.int64()),
        ("sequence", pa.string()),
        ("ts_ms", pa.int64()),
        ("snapshot", pa.string()),
    ]
)
# Only what ordering needs; `after: struct<>` tells an object from null without parsing it.
EVENT_SCHEMA = pa.schema([("op", pa.string()), ("source", _SOURCE), ("after", pa.struct([]))])
# Tuples, made arrays where used: any pa.array() imports pandas (pyarrow checks for it), and
# Spark's planner processes import this module without decoding anything.
_FAST_OPS = ("c", "u", "r", "d", "m")
# Debezium's `source.snapshot` markers of a table's last read (events.SNAPSHOT_END).
SNAPSHOT_END_MARKERS = ("last", "last_in_data_collection")
# A key like {"id":42} or {"code":"a-1"}: its JSON text is what `canonical` would write.
_ONE_PLAIN_FIELD = r'^\{"[A-Za-z0-9_$]+":(-?(0|[1-9][0-9]*)|"[^"\\\x00-\x1f]*")\}$'


def read_ndjson(payloads: pa.Array, schema: pa.Schema, threads: bool = False) -> pa.Table | None:
    """One JSON object per element → a table of `schema`, or None if any element does not fit.

    `threads` parses 1 MB blocks on Arrow's thread pool: for the driver, whose cores are
    idle while it flattens; Spark tasks already keep every core busy.
    """
    if len(payloads) == 0 or payloads.null_count:
        return None
    try:
        lines = pc.binary_join_element_wise(payloads.view(pa.string()), "", "\n")
    except pa.ArrowInvalid:
        return None
    offsets = np.frombuffer(lines.buffers()[1], np.int32, len(lines) + 1, lines.offset * 4)
    data = lines.buffers()[2][offsets[0] : offsets[-1]]
    try:
        table = pajson.read_json(
            pa.BufferReader(data),
            read_options=pajson.ReadOptions(
                use_threads=threads, block_size=1 << 20 if threads else max(1 << 20, data.size + 1)
            ),
            parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, UnicodeDecodeError):
        return None
    return table if table.num_rows == len(payloads) else None


def _prefix_of(sample: bytes) -> bytes | None:
    """The schema prefix `{"schema":…,"payload":` of an enveloped record, learned from one full parse."""
    reader = EnvelopeReader()
    try:
        enveloped, _, _ = reader.read(sample)
    except (ValueError, UnicodeDecodeError):
        return None
    return reader._prefix if enveloped else b""


def payloads(values: pa.Array, schemas_enable: bool | None) -> pa.Array | None:
    """The payload of every record when all share the first one's envelope (or none has one)."""
    split = split_envelopes(values, schemas_enable)
    return None if split is None else split[1]


def split_envelopes(values: pa.Array, schemas_enable: bool | None) -> tuple[bytes, pa.Array] | None:
    """(the shared `{"schema":…,"payload":` prefix or b"", the payloads), or None."""
    if len(values) == 0 or values.null_count:
        return None
    prefix = _prefix_of(values[0].as_py())
    if prefix is None or (schemas_enable is True and not prefix) or (schemas_enable is False and prefix):
        return None
    if not prefix:
        return prefix, values
    try:
        text = values.cast(pa.string())
    except pa.ArrowInvalid:  # not UTF-8: the per-record path names the record
        return None
    same = pc.and_(pc.starts_with(text, prefix.decode()), pc.ends_with(text, "}"))
    if not pc.all(same).as_py():
        return None
    return prefix, pc.binary_slice(values, len(prefix), -1)


def envelope_runs(values: pa.Array, limit: int = 16) -> list[tuple[int, int]]:
    """(start, stop) ranges of consecutive records that share one envelope prefix.

    A DDL changes a topic's schema mid-batch; each side of it can still be read in Arrow.
    The last range starts at the first record whose prefix cannot be learned (a poison
    record), or at the `limit`-th change; the per-record path takes it whole.
    """
    n = len(values)
    try:
        text = values.cast(pa.string())
    except pa.ArrowInvalid:  # not UTF-8: the per-record path names the record
        return [(0, n)]
    runs: list[tuple[int, int]] = []
    start = 0
    while start < n:
        rest = text.slice(start)
        first = pc.index(pc.is_valid(rest), True).as_py()
        prefix = None if first < 0 or len(runs) == limit - 1 else _prefix_of(values[start + first].as_py())
        if not prefix:  # all null, unlearnable, unenveloped, or the limit: one last range
            runs.append((start, n))
            break
        differs = pc.index(pc.fill_null(pc.starts_with(rest, prefix.decode()), True), False).as_py()
        stop = n if differs < 0 else start + differs
        runs.append((start, stop))
        start = stop
    return runs


def canonical_keys(keys: pa.Array, schemas_enable: bool | None) -> pa.Array | None:
    """The grouping text of each key (sorted-field JSON), computed once per distinct key."""
    body = payloads(keys, schemas_enable)
    if body is None:
        return None
    text = body.cast(pa.string())
    plain = pc.match_substring_regex(text, _ONE_PLAIN_FIELD)
    if pc.all(plain).as_py():
        return text  # already canonical: one field, an integer or an escape-free string
    encoded = body.dictionary_encode()
    texts: list[str] = []
    for raw in encoded.dictionary.to_pylist():
        try:
            key = loads(raw)
        except ValueError:
            return None
        if key is None:
            return None
        texts.append(canonical(key))
    return pa.DictionaryArray.from_arrays(encoded.indices, pa.array(texts, pa.string())).cast(pa.string())


def _pack(fields: list[pa.Array]) -> pa.Array:
    """Four unsigned 64-bit columns → the 32-byte big-endian `__seq` (see sequence.py)."""
    n = len(fields[0])
    packed = np.empty((n, 4), dtype=">u8")
    for i, f in enumerate(fields):
        packed[:, i] = f.to_numpy(zero_copy_only=False)
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(32), n, [None, pa.py_buffer(packed.tobytes())])
    return fixed.cast(pa.binary())


def _pg_positions(source: pa.StructArray) -> tuple[pa.Array, pa.Array] | None:
    """The first two `__seq` fields per row (sequence.postgres): (commit LSN, LSN), or (LSN, 0) for a row
    without a commit LSN (a snapshot read); Debezium's `sequence` text ["commit","lsn"] overrides both."""
    lsn = source.field("lsn")
    seq = source.field("sequence")
    if seq.null_count == len(seq):
        if lsn.null_count:
            return None
        committed = source.field("lsn_commit")
        second = pc.if_else(pc.is_valid(committed), lsn, pa.scalar(0, pa.int64()))
        return pc.coalesce(committed, lsn), second
    commit = source.field("lsn_commit")
    commits, lsns = commit.to_pylist(), lsn.to_pylist()
    for i, text in enumerate(seq.to_pylist()):
        if not text:
            continue
        try:
            pair = loads(text)
            if isinstance(pair, list) and len(pair) == 2:
                if pair[0] is not None:
                    commits[i] = int(pair[0])
                if pair[1] is not None:
                    lsns[i] = int(pair[1])
        except (ValueError, TypeError):
            return None
    if any(x is None for x in lsns):
        return None
    pairs = [(x, 0) if c is None else (c, x) for c, x in zip(commits, lsns, strict=True)]
    return pa.array([p[0] for p in pairs], pa.int64()), pa.array([p[1] for p in pairs], pa.int64())


def _epoch_and_file(file_no: pa.Array, text: pa.Array) -> pa.Array | None:
    """`epoch << 40 | file number` per MySQL row (sequence.mysql); None if a row needs the slow path."""
    if pc.any(pc.greater(file_no, sequence.MAX_FILE_NO)).as_py():
        return None
    if text.null_count == len(text):
        return file_no
    parsed = pc.struct_field(pc.extract_regex(text, sequence.EPOCH_PATTERN), [0])
    if parsed.null_count != text.null_count:  # a sequence that is no epoch: let decode_one name it
        return None
    epoch = pc.fill_null(parsed, "0").cast(pa.uint64())
    if pc.any(pc.greater(epoch, sequence.MAX_EPOCH)).as_py():
        return None
    shifted = pc.shift_left(epoch, pa.scalar(sequence.EPOCH_SHIFT, pa.uint64()))
    return pc.bit_wise_or(shifted, file_no)


def sequences(source: pa.StructArray) -> pa.Array | None:
    """`__seq` of every event (sequence.from_source, vectorized); None if any row needs the slow path."""
    if source.null_count:
        return None
    # MySQL blocks carry file/pos (and the binlog lineage epoch in `sequence`, see sequence.py).
    is_mysql = pc.and_(pc.is_valid(source.field("file")), pc.is_valid(source.field("pos")))
    is_pg = pc.and_(
        pc.invert(is_mysql), pc.or_(pc.is_valid(source.field("lsn")), pc.is_valid(source.field("sequence")))
    )
    if pc.all(is_pg).as_py():
        pos = _pg_positions(source)
        if pos is None:
            return None
        zero = pa.array(np.zeros(len(source), np.int64))
        fields = [pos[0], pos[1], zero, zero]
    elif pc.all(is_mysql).as_py():
        file_no = pc.struct_field(pc.extract_regex(source.field("file"), r"(?P<n>\d+)$"), [0])
        if pc.any(pc.is_null(file_no)).as_py() or source.field("pos").null_count:
            return None
        first = _epoch_and_file(file_no.cast(pa.uint64()), source.field("sequence"))
        if first is None:
            return None
        fields = [
            first,
            source.field("pos"),
            pc.fill_null(source.field("event"), 0),
            pc.fill_null(source.field("row"), 0),
        ]
    else:
        return None  # MySQL and PostgreSQL events in one batch: let the per-record path decide
    if any(pc.any(pc.less(f, 0)).as_py() for f in fields):
        return None
    return _pack(fields)


def _read_events(body: pa.Array) -> tuple[pa.Array, pa.StructArray, pa.Array] | None:
    """(op, source block, has a row) of every payload: Debezium envelopes, or rows flattened by
    ExtractNewRecordState whose added fields make the source block (unwrapped.py). The first payload
    tells which; a record of the other shape does not fit the read, and the batch goes record by record."""
    try:
        first = loads(body[0].as_py())
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(first, dict) or unwrapped.is_envelope(first):
        events = read_ndjson(body, EVENT_SCHEMA)
        if events is None:
            return None
        has_row = pc.is_valid(events.column("after").combine_chunks())
        return events.column("op").combine_chunks(), events.column("source").combine_chunks(), has_row
    try:
        layout = unwrapped.cached_layout(first.keys())
    except unwrapped.UnwrapError:
        return None  # the record-by-record path names what is missing
    wanted = [(name, layout.source[name]) for name in _SOURCE.names if name in layout.source]
    schema = pa.schema([(layout.op, pa.string()), *((field, _SOURCE.field(name).type) for name, field in wanted)])
    events = read_ndjson(body, schema)
    if events is None:
        return None
    n = events.num_rows
    found = {name: events.column(field).combine_chunks() for name, field in wanted}
    source = pa.StructArray.from_arrays([found.get(f.name, pa.nulls(n, f.type)) for f in _SOURCE], fields=list(_SOURCE))
    return events.column(layout.op).combine_chunks(), source, pa.array(np.ones(n, np.bool_))


def decode_events(batch: pa.RecordBatch, schemas_enable: bool | None) -> dict[str, Any] | None:
    """Columns of the decoded rows of a raw batch (see events.DECODED_SCHEMA), or None."""
    batch = batch.filter(pc.is_valid(batch.column("value")))  # Kafka tombstones are not changes
    if batch.num_rows == 0:
        return None
    split = split_envelopes(batch.column("value"), schemas_enable)
    if split is None:
        return None
    prefix, body = split
    read = _read_events(body)
    if read is None:
        return None
    op, source, has_row = read
    if op.null_count or not pc.all(pc.is_in(op, pa.array(_FAST_OPS, pa.string()))).as_py():
        return None
    keep = pc.not_equal(op, "m")
    if not pc.all(keep).as_py():
        batch, op, body = batch.filter(keep), op.filter(keep), body.filter(keep)
        source, has_row = source.filter(keep), has_row.filter(keep)
        if batch.num_rows == 0:
            return None
    deleted = pc.equal(op, "d")
    if not pc.all(pc.or_(deleted, has_row)).as_py():
        return None
    raw_key = batch.column("key")
    keys = canonical_keys(raw_key, schemas_enable)
    seq = sequences(source)
    if keys is None or seq is None:
        return None
    markers = pa.array(SNAPSHOT_END_MARKERS, pa.string())
    ends = pc.and_(pc.equal(op, "r"), pc.is_in(source.field("snapshot"), value_set=markers))
    return {
        "batch": batch,
        "prefix": prefix,
        "payload": body,
        "key": keys,
        "__op": op,
        "__seq": seq,
        "__source_ts_ms": source.field("ts_ms"),
        "__deleted": deleted,
        # rows that complete a table's snapshot (events.SNAPSHOT_END), None when there are none
        "snapshot_end": ends if pc.any(pc.fill_null(ends, False)).as_py() else None,
    }

"""Small Arrow helpers shared by the driver-side targets."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pa_fs

from cdc_spark.apply.errors import ValueOutOfRangeError

if TYPE_CHECKING:
    from deltalake import DeltaTable


def by_topic(winners: pa.Table) -> dict[str, pa.Table]:
    """Split the collected winners per topic (each topic is one target table)."""
    out: dict[str, pa.Table] = {}
    topics = winners.column("topic")
    names = pc.unique(topics).to_pylist()
    if len(names) == 1:
        return {names[0]: winners}  # the common case: no filter, no copy of the values
    for topic in names:
        out[topic] = winners.filter(pc.equal(topics, topic))
    return out


def same_as_previous(table: pa.Table, columns: list[str]) -> pa.Array:
    """Per row: do these columns equal the previous row's (null equal to null)? False for row 0."""
    n = table.num_rows
    same = pa.array([True] * (n - 1), pa.bool_())
    for name in columns:
        col = table.column(name).combine_chunks()
        cur, prev = col.slice(1), col.slice(0, n - 1)
        both_null = pc.and_(pc.is_null(cur), pc.is_null(prev))
        same = pc.and_(same, pc.fill_null(pc.equal(cur, prev), both_null))
    return pa.concat_arrays([pa.array([False]), same])


def delta_dataset(dt: DeltaTable, path: str) -> ds.Dataset:
    """`dt.to_pyarrow_dataset()`, read through Arrow's own filesystem when the table is local.

    deltalake's default filesystem is a Python handler: Arrow's I/O threads call into Python,
    and one still prefetching when the interpreter exits aborts the process ("terminate called
    without an active exception", exit 134) after the work is done. Arrow's native local
    filesystem makes no such calls (and reads faster)."""
    root = path.removeprefix("file://") if path.startswith("file://") or "://" not in path else None
    fs = pa_fs.SubTreeFileSystem(os.path.abspath(root), pa_fs.LocalFileSystem()) if root is not None else None
    return dt.to_pyarrow_dataset(filesystem=fs)


def drop_shadowed(source: pa.Table, tombstones: pa.Table, keys: list[str]) -> pa.Table:
    """Rows of `source` that no remembered delete (same key, sequence ≥ theirs) outranks."""
    if tombstones.num_rows == 0 or source.num_rows == 0:
        return source
    tomb = tombstones.select([*keys, "__seq"]).rename_columns([*keys, "__tomb_seq"])
    joined = source.join(tomb, keys, join_type="left outer")
    tseq = joined.column("__tomb_seq")
    keep = pc.or_kleene(pc.is_null(tseq), pc.greater(joined.column("__seq"), tseq))
    return joined.filter(keep).drop_columns(["__tomb_seq"]).select(source.column_names)


def rows_with_keys(
    dataset: ds.Dataset, wanted: pa.Table, keys: list[str], columns: list[str] | None = None
) -> pa.Table:
    """The rows of `dataset` whose key is one of `wanted`'s rows, without reading the others
    into memory (a table's history or tombstones grow without bound; a batch touches few keys)."""
    expr = None
    for k in keys:
        match = pc.field(k).isin(pc.unique(wanted.column(k)))
        expr = match if expr is None else expr & match
    found = dataset.to_table(columns=columns, filter=expr)
    if len(keys) == 1 or found.num_rows == 0:
        return found
    # Per-column membership admits mixed pairs (a1, b2); the join keeps the real ones.
    exact = wanted.select(keys).group_by(keys).aggregate([])
    return found.join(exact, keys, join_type="inner").select(found.column_names)


def hex_literal(seq: bytes) -> str:
    """A binary literal for delta-rs (DataFusion) predicates."""
    return f"X'{seq.hex()}'"


def for_lake(table: pa.Table, name: str = "") -> pa.Table:
    """Types Delta and Iceberg accept: microsecond timestamps, signed integers. A value those
    types cannot hold raises ValueOutOfRangeError naming table `name` and the column."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_timestamp(t) and t.unit != "us":
            t = pa.timestamp("us", tz=t.tz)
        elif pa.types.is_unsigned_integer(t):
            t = pa.int64() if t.bit_width < 64 else pa.decimal128(20, 0)
        elif pa.types.is_large_string(t):
            t = pa.string()
        fields.append(pa.field(f.name, t, nullable=True))
    schema = pa.schema(fields)
    if schema == table.schema:
        return table
    try:
        return table.cast(schema)
    except pa.ArrowInvalid:
        for f, want in zip(table.schema, schema, strict=True):
            if f.type != want.type:
                try:
                    table.column(f.name).cast(want.type)
                except pa.ArrowInvalid as column_error:
                    raise ValueOutOfRangeError(name or "?", f.name, want.type, column_error) from None
        raise


def bytea_text(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Binary values as PostgreSQL's `\\x…` hex text for COPY, in one pass over the buffer."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    col = col.cast(pa.binary())
    n = len(col)
    offsets = np.frombuffer(col.buffers()[1], np.int32, n + 1, col.offset * 4)
    data = col.buffers()[2]
    raw = data[offsets[0] : offsets[-1]].to_pybytes() if data is not None else b""
    spans = pa.py_buffer(((offsets - offsets[0]) * 2).astype(np.int32).tobytes())
    hexed = pa.Array.from_buffers(pa.string(), n, [None, spans, pa.py_buffer(raw.hex().encode())])
    text = pc.binary_join_element_wise("\\x", hexed, "")
    return text if col.null_count == 0 else pc.if_else(pc.is_valid(col), text, pa.scalar(None, pa.string()))

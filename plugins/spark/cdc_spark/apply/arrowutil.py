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
    filesystem makes no such calls (and reads faster).

    The dataset declares string/binary, never string_view/binary_view, whatever the files hold:
    deltalake ≥ 1.6 writes view types into the Parquet files of a MERGE, and pyarrow has few
    kernels for them (comparisons, `is_in`, joins); scanning casts each file to this schema."""
    root = path.removeprefix("file://") if path.startswith("file://") or "://" not in path else None
    fs = pa_fs.SubTreeFileSystem(os.path.abspath(root), pa_fs.LocalFileSystem()) if root is not None else None
    declared = pa.schema(dt.schema().to_arrow())
    plain = without_views(declared)
    if plain == declared:
        return dt.to_pyarrow_dataset(filesystem=fs)
    return dt.to_pyarrow_dataset(filesystem=fs, schema=plain)


def _plain(t: pa.DataType) -> pa.DataType:
    """string/binary for their view types (pyarrow computes little on views), else `t`."""
    if t == pa.string_view():
        return pa.string()
    if t == pa.binary_view():
        return pa.binary()
    return t


def without_views(schema: pa.Schema) -> pa.Schema:
    """`schema` with string/binary where it has string_view/binary_view (top-level columns)."""
    return pa.schema([f.with_type(_plain(f.type)) for f in schema], metadata=schema.metadata)


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
    into memory (a table's history or tombstones grow without bound; a batch touches few keys).

    Files are pruned by the dataset's own knowledge of them (Delta's per-file statistics and
    partition values, carried as fragment expressions in the dataset's types); the rows of the
    remaining files are matched here, batch by batch. A scan `filter` is not used: pyarrow
    simplifies it with each Parquet row group's statistics in the file's own types, and files
    that deltalake ≥ 1.6 wrote hold string_view/binary_view ("Function 'greater_equal' has no
    kernel matching input types (string, string_view)")."""
    names = columns if columns is not None else dataset.schema.names
    if wanted.num_rows == 0:
        return without_views(dataset.schema).empty_table().select(names)
    sets = {k: pc.unique(wanted.column(k)).cast(_plain(dataset.schema.field(k).type)) for k in keys}
    expr = None
    for k in keys:
        match = pc.field(k).isin(sets[k])
        expr = match if expr is None else expr & match
    source = dataset
    if isinstance(dataset, ds.FileSystemDataset):
        fragments = list(dataset.get_fragments(filter=expr))
        source = ds.FileSystemDataset(fragments, dataset.schema, dataset.format, dataset.filesystem)
    exact = wanted.select(keys).cast(pa.schema([(k, sets[k].type) for k in keys])).group_by(keys).aggregate([])
    read = list(dict.fromkeys([*names, *keys]))
    parts = [_matching(batch, keys, sets, exact) for batch in source.to_batches(columns=read)]
    found = [p for p in parts if p.num_rows]
    if not found:
        return without_views(dataset.schema).empty_table().select(names)
    return pa.concat_tables(found).select(names)


def _matching(batch: pa.RecordBatch, keys: list[str], sets: dict[str, pa.Array], exact: pa.Table) -> pa.Table:
    """The rows of `batch` whose key is a row of `exact` (`sets`: each key column's values)."""
    table = pa.Table.from_batches([batch])
    if (plain := without_views(table.schema)) != table.schema:
        table = table.cast(plain)
    mask = None
    for k in keys:
        hit = pc.is_in(table.column(k), value_set=sets[k])
        mask = hit if mask is None else pc.and_(mask, hit)
    table = table.filter(mask)
    if len(keys) == 1 or table.num_rows == 0:
        return table
    # Per-column membership admits mixed pairs (a1, b2); the join keeps the real ones.
    return table.join(exact, keys, join_type="inner").select(table.column_names)


def hex_literal(seq: bytes) -> str:
    """A binary literal for delta-rs (DataFusion) predicates."""
    return f"X'{seq.hex()}'"


def lake_type(t: pa.DataType) -> pa.DataType:
    """The type Delta and Iceberg take for `t`: microsecond timestamps, signed integers, string."""
    if pa.types.is_timestamp(t) and t.unit != "us":
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_unsigned_integer(t):
        return pa.int64() if t.bit_width < 64 else pa.decimal128(20, 0)
    if pa.types.is_large_string(t):
        return pa.string()
    return t


def plain(schema: pa.Schema) -> pa.Schema:
    """`schema` without any metadata: the decoder's annotations of the batch's columns (SQL_TYPE,
    DEFAULT) stay out of the schema of the lake table created from it."""
    return pa.schema([f.remove_metadata() for f in schema])


def for_lake(table: pa.Table, name: str = "") -> pa.Table:
    """Types Delta and Iceberg accept (`lake_type`). A value those types cannot hold raises
    ValueOutOfRangeError naming table `name`, the column and its row (`refused.lake_refusals`
    finds every such value, for errors.tolerance=all). The fields keep their metadata (a column's
    DEFAULT, decode/types.py): `plain` leaves it out of a lake table's own schema."""
    schema = pa.schema([pa.field(f.name, lake_type(f.type), nullable=True, metadata=f.metadata) for f in table.schema])
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
                    from cdc_spark.apply.evolution import first_uncastable  # the error path only

                    row = first_uncastable(table.column(f.name), want.type)
                    bad = table.slice(row, 1) if row is not None else None
                    raise ValueOutOfRangeError(name or "?", f.name, want.type, column_error, row=bad) from None
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

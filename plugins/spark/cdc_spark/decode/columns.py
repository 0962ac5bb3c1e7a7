"""Flattening enveloped winners in Arrow: the same rows as `flatten_rows`, without a Python loop per row.

Records are grouped by their schema prefix (one group per schema version in the batch);
each group's payloads are read by `pyarrow.json` with the Arrow types the Connect schema
gives, and `before` or `after` is picked per row by op. Types Arrow cannot read straight
from JSON are converted per column (bytes, decimals) or sent back to the row path
(nested structs, arrays and maps kept as JSON text).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.decode import unwrapped
from cdc_spark.decode.envelope import EnvelopeReader
from cdc_spark.decode.fast import read_ndjson
from cdc_spark.decode.flatbatch import META_ARROW, FlatBatch, merge_columns, seq_span
from cdc_spark.decode.types import (
    VARIABLE_SCALE_DECIMAL,
    ZONED_TIMESTAMP,
    Convert,
    _b64,
    _days,
    _float,
    _ident,
    arrow_type,
    envelope_row_schema,
    field_metadata,
)

_MAX_SCHEMAS = 16
_Group = tuple[pa.Array, Any, pa.Array]  # (row indices, value schema, payloads)
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_VSD_READ = pa.struct([("scale", pa.int32()), ("value", pa.string())])
# Key field names with the values cut out: one signature per key shape.
_KEY_SHAPE = r'":(?:"(?:[^"\\]|\\.)*"|[^,}]*)'


class _Column:
    """How one Connect field is read from JSON (`read`) and turned into its Arrow type (`dtype`)."""

    def __init__(self, dtype: pa.DataType, read: pa.DataType, convert: Convert | None) -> None:
        self.dtype, self.read, self.convert = dtype, read, convert
        self.metadata: dict[bytes, bytes] | None = None

    def finish(self, arr: pa.Array) -> pa.Array:
        if self.convert is not None:
            return pa.array([self.convert(v) for v in arr.to_pylist()], self.dtype)
        return arr if arr.type == self.dtype else arr.cast(self.dtype)


def _plan(field: dict[str, Any]) -> _Column | None:
    plan = _read_plan(field)
    if plan is not None:
        plan.metadata = field_metadata(field)
    return plan


def _read_plan(field: dict[str, Any]) -> _Column | None:
    dtype, conv = arrow_type(field)
    name = field.get("name")
    if name in (_DECIMAL, ZONED_TIMESTAMP) or conv is _b64:
        return _Column(dtype, pa.string(), conv)
    if name == VARIABLE_SCALE_DECIMAL:
        return _Column(dtype, _VSD_READ, conv)
    if conv is _days:
        return _Column(dtype, pa.int32(), None)
    if conv is _float:
        # JSON numbers, read as float64 and cast to the column's width (as the row path stores them). JsonConverter
        # writes NaN and the infinities as strings, which fail the read: that batch takes the row path.
        return _Column(dtype, pa.float64(), None)
    if conv is not _ident:
        return None  # nested values kept as JSON text: the row path
    if pa.types.is_timestamp(dtype):
        return _Column(dtype, pa.int64(), None)
    return _Column(dtype, dtype, None)


def _groups(values: pa.Array) -> list[_Group] | None:
    """(row indices, value schema, payloads) per schema prefix, or None for unenveloped records."""
    out = []
    idx = pa.array(range(len(values)), pa.int64())
    while len(values):
        reader = EnvelopeReader()
        try:
            enveloped, schema, _ = reader.read(values[0].as_py())
        except (ValueError, UnicodeDecodeError):
            return None
        prefix = reader._prefix
        if not enveloped or prefix is None or len(out) == _MAX_SCHEMAS:
            return None
        try:
            text = values.cast(pa.string())
        except pa.ArrowInvalid:
            return None
        same = pc.and_(pc.starts_with(text, prefix.decode()), pc.ends_with(text, "}"))
        out.append((idx.filter(same), schema, pc.binary_slice(values.filter(same), len(prefix), -1)))
        rest = pc.invert(same)
        idx, values = idx.filter(rest), values.filter(rest)
    return out


def _groups_by_id(ids: pa.Array, values: pa.Array, schemas: Mapping[int, str]) -> list[_Group] | None:
    """(row indices, value schema, payloads) per schema id, when every value is a cut-off payload."""
    if ids.null_count or len(ids) == 0:
        return None
    out = []
    for sid in pc.unique(ids).to_pylist():
        text = schemas.get(sid)
        if text is None:
            return None  # restore() names the missing schema
        try:
            schema = json.loads(text)
        except ValueError:
            return None
        idx = pc.indices_nonzero(pc.equal(ids, sid)).cast(pa.int64())
        out.append((idx, schema, values.take(idx)))
    return out


def _read_group(payloads: pa.Array, ops: pa.Array, schema: Any) -> dict[str, tuple[pa.Array, _Column]] | None:
    flat = isinstance(schema, dict) and not unwrapped.is_envelope_schema(schema)
    row_schema = unwrapped.row_schema(schema) if flat else envelope_row_schema(schema)
    fields = (row_schema or {}).get("fields") or []
    plans = {f.get("field"): _plan(f) for f in fields}
    if not plans or any(p is None for p in plans.values()):
        return None
    row = pa.struct([(name, p.read) for name, p in plans.items()])  # type: ignore[union-attr]
    if flat:  # a row flattened by ExtractNewRecordState: the columns are the value's own fields
        table = read_ndjson(payloads, pa.schema(list(row)), threads=True)
        columns = None if table is None else [c.combine_chunks() for c in table.columns]
        picks = None if columns is None else list(zip(columns, columns, strict=True))
    else:
        table = read_ndjson(payloads, pa.schema([("before", row), ("after", row)]), threads=True)
        picks = None
        if table is not None:
            before = table.column("before").combine_chunks().flatten()
            after = table.column("after").combine_chunks().flatten()
            picks = list(zip(before, after, strict=True))
    if picks is None:
        return None
    deleted = pc.equal(ops, "d")
    out = {}
    for (name, plan), (old, new) in zip(plans.items(), picks, strict=True):
        picked = new if old is new else pc.if_else(deleted, old, new)
        try:
            out[name] = (plan.finish(picked), plan)  # type: ignore[union-attr]
        except (pa.ArrowInvalid, ValueError, TypeError):
            return None
    return out


def _fill_keys(name: str, arr: pa.Array, plan: _Column, keys: pa.Array) -> pa.Array:
    """Row values missing from the row (a delete whose `before` lacks them) come from the key."""
    if arr.null_count == 0:
        return arr
    values = arr.to_pylist()
    texts = keys.to_pylist()
    for i, v in enumerate(values):
        if v is None:
            raw = json.loads(texts[i]).get(name)
            values[i] = plan.convert(raw) if plan.convert is not None else raw
    return pa.array(values, plan.read if plan.convert is None else plan.dtype).cast(plan.dtype)


def flatten_enveloped(topic: str, winners: pa.Table, schemas: Mapping[int, str] | None = None) -> FlatBatch | None:
    """Like `flatten_rows`, or None when a record needs the row path.

    With `schemas`, every value must be a payload whose schema the source cut off (its
    `schema_id` is in `schemas`); otherwise every value must be a whole envelope.
    """
    if winners.num_rows == 0:
        return None
    values = winners.column("value").combine_chunks()
    keys = winners.column("key").combine_chunks()
    ops = winners.column("__op").combine_chunks()
    if values.null_count or keys.null_count or ops.null_count:
        return None
    shapes = pc.unique(pc.replace_substring_regex(keys, _KEY_SHAPE, '":'))
    if len(shapes) != 1 or not str(shapes[0].as_py()).startswith("{"):
        return None
    key_columns = list(json.loads(keys[0].as_py()))
    if schemas is not None:
        if "schema_id" not in winners.column_names:
            return None
        groups = _groups_by_id(winners.column("schema_id").combine_chunks(), values, schemas)
    else:
        groups = _groups(values)
    if groups is None:
        return None
    parts = []
    indices = []
    for idx, schema, payloads in groups:
        cols = _read_group(payloads, ops.take(idx), schema)
        if cols is None:
            return None
        if any(k not in cols for k in key_columns):
            return None
        columns = []
        for name, (arr, plan) in cols.items():
            if name in key_columns:
                try:
                    arr = _fill_keys(name, arr, plan, keys.take(idx))
                except (ValueError, TypeError, pa.ArrowInvalid, AttributeError):
                    return None
            columns.append((pa.field(name, arr.type, metadata=plan.metadata), arr))
        parts.append((len(idx), columns))
        indices.append(idx)
    # Rows of several schema versions (a DDL inside the batch) meet in the type holding both.
    seqs = winners.column("__seq")
    merged = merge_columns(topic, parts, [seq_span(seqs.take(idx)) for idx in indices])
    rows = pa.Table.from_arrays([a for _, a in merged], schema=pa.schema([f for f, _ in merged]))
    if len(parts) > 1:  # back to the winners' order
        rows = rows.take(pc.sort_indices(pa.concat_arrays(indices)))
    fields = list(rows.schema)
    arrays = [c.combine_chunks() for c in rows.columns]
    for f in META_ARROW:
        arrays.append(winners.column(f.name).combine_chunks().cast(f.type))
        fields.append(f)
    return FlatBatch(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), key_columns)

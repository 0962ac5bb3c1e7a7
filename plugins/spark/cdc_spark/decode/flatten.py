"""The per-key winners of one topic → a typed Arrow table: the row columns + `__op`,
`__seq`, `__source_ts_ms`, `__deleted` (c/u/r take `after`, d takes `before` + the key)."""

from __future__ import annotations

import decimal
import json
import logging
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from cdc_spark.decode import unwrapped
from cdc_spark.decode.columns import flatten_enveloped
from cdc_spark.decode.envelope import EnvelopeReader
from cdc_spark.decode.flatbatch import META_ARROW, META_COLUMNS, ColumnTypeConflict, FlatBatch, merge_columns, seq_span
from cdc_spark.decode.schemas import restore
from cdc_spark.decode.types import (
    DECIMAL,
    Convert,
    _ident,
    envelope_row_schema,
    field_metadata,
    field_types,
)

log = logging.getLogger(__name__)

# The shared form lives in flatbatch.py; importers of this module keep finding it here.
__all__ = ["META_ARROW", "META_COLUMNS", "ColumnTypeConflict", "FlatBatch", "flatten", "flatten_rows", "merge_columns"]


def flatten(topic: str, winners: pa.Table, schemas: Mapping[int, str] | None = None) -> FlatBatch:
    """`winners` has the decoded columns (key, value, __op, __seq, __source_ts_ms, __deleted).

    Enveloped records with plain column types are parsed in Arrow (`columns.py`); anything
    else (schemaless JSON, nested types) goes row by row. Values whose schema the source cut
    off (`schema_id`, see schemas.py) are read as they are, with `schemas` (id → text); only
    the row path needs the envelopes put back.
    """
    flat = flatten_enveloped(topic, winners, schemas) if schemas is not None else None
    if flat is None:
        full = restore(winners, schemas or {})
        flat = flatten_enveloped(topic, full) or flatten_rows(topic, full)
    return flat


def flatten_rows(topic: str, winners: pa.Table) -> FlatBatch:
    """The row-by-row flattening: any JSON shape, with or without schemas.

    Rows are converted with the schema they arrived with; rows of different schema versions
    (a DDL inside the batch) meet in the type that holds both (`merge_columns`)."""
    groups: dict[int, _RowGroup] = {}  # id(schema) (0: schemaless) → its rows
    order: list[tuple[int, int]] = []  # per row: (group, index in the group)
    key_columns: list[str] = []
    reader = EnvelopeReader()
    for key_text, value, op in zip(
        winners.column("key").to_pylist(),
        winners.column("value").to_pylist(),
        winners.column("__op").to_pylist(),
        strict=True,
    ):
        _, schema, env = reader.read(value)
        # The reader hands out one object per schema text, so id() names the schema version.
        group = groups.get(id(schema) if schema is not None else 0)
        if group is None:
            group = _RowGroup(schema)
            groups[id(schema) if schema is not None else 0] = group
        data = _row(env, op)
        if group.exact_decimals and any(isinstance(data.get(n), float) for n in group.exact_decimals):
            data = _exact_numbers(value, op, data, group.exact_decimals)
        key = json.loads(key_text)
        if isinstance(key, dict):
            if not key_columns:
                key_columns = list(key)
            for k, v in key.items():
                if data.get(k) is None:
                    data[k] = v
        order.append((id(group), len(group.rows)))
        group.rows.append(data)
    parts = [(len(g.rows), g.arrays()) for g in groups.values()]
    members: dict[int, list[int]] = {}  # group → the winners' rows in it
    for row, (group, _) in enumerate(order):
        members.setdefault(group, []).append(row)
    seqs = winners.column("__seq")
    columns = merge_columns(topic, parts, [seq_span(seqs.take(members[id(g)])) for g in groups.values()])
    index = {id(g): i for i, g in enumerate(groups.values())}
    offsets = [0]
    for g in groups.values():
        offsets.append(offsets[-1] + len(g.rows))
    take = pa.array([offsets[index[gid]] + i for gid, i in order], pa.int64())
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    for field, arr in columns:
        arrays.append(arr.take(take) if len(parts) > 1 else arr)
        fields.append(field)
    for f in META_ARROW:
        arrays.append(winners.column(f.name).combine_chunks().cast(f.type))
        fields.append(f)
    return FlatBatch(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), key_columns)


class _RowGroup:
    """The rows of one schema version (or of schemaless records) and how to type their columns."""

    def __init__(self, schema: Any) -> None:
        row_schema = _row_schema(schema) if schema is not None else None
        self.fields: dict[str, dict[str, Any]] = {f["field"]: f for f in (row_schema or {}).get("fields", [])}
        self.types: dict[str, tuple[pa.DataType | None, Convert]] = field_types(row_schema)
        # Decimals written as JSON numbers (decimal.format=NUMERIC) must not pass through a float.
        self.exact_decimals = [n for n, f in self.fields.items() if f.get("name") == DECIMAL]
        self.rows: list[dict[str, Any]] = []

    def arrays(self) -> list[tuple[pa.Field, pa.Array]]:
        names = list(self.types)
        for row in self.rows:
            names.extend(n for n in row if n not in self.types and n not in names)
        out = []
        for name in names:
            dtype, conv = self.types.get(name, (None, _ident))
            values = [conv(r.get(name)) for r in self.rows]
            arr = pa.array(values, type=dtype) if dtype is not None else pa.array(values)
            if pa.types.is_null(arr.type):
                arr = arr.cast(pa.string())
            meta = field_metadata(self.fields[name]) if name in self.fields else None
            out.append((pa.field(name, arr.type, metadata=meta), arr))
        return out


def _row(env: Any, op: str) -> dict[str, Any]:
    """The row of an envelope (`before` for deletes, else `after`) or of a flattened row (unwrapped.py)."""
    if isinstance(env, dict) and not unwrapped.is_envelope(env):
        return unwrapped.row_of(env)
    return dict((env.get("before") if op == "d" else env.get("after")) or {})


def _row_schema(schema: Any) -> dict[str, Any] | None:
    if isinstance(schema, dict) and schema.get("fields") and not unwrapped.is_envelope_schema(schema):
        return unwrapped.row_schema(schema)
    return envelope_row_schema(schema)


def _exact_numbers(value: bytes, op: str, data: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The row again, its decimal fields parsed as Decimal (a float would round them to 17 digits)."""
    node = json.loads(value, parse_float=decimal.Decimal)
    if isinstance(node, dict) and node.keys() == {"schema", "payload"}:
        node = node["payload"]
    exact = _row(node, op)
    return {**data, **{n: exact.get(n) for n in names if n in exact}}

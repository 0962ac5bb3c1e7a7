"""The per-key winners of one topic → a typed Arrow table: the row columns + `__op`,
`__seq`, `__source_ts_ms`, `__deleted` (c/u/r take `after`, d takes `before` + the key)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cdc_spark.decode.envelope import EnvelopeReader
from cdc_spark.decode.types import Convert, _ident, envelope_row_schema, field_types

META_COLUMNS = ("__op", "__seq", "__source_ts_ms", "__deleted")
META_ARROW = [
    pa.field("__op", pa.string()),
    pa.field("__seq", pa.binary()),
    pa.field("__source_ts_ms", pa.int64()),
    pa.field("__deleted", pa.bool_()),
]


class ColumnTypeConflict(ValueError):
    """One column arrived with two different types in one micro-batch."""


@dataclass(frozen=True)
class FlatBatch:
    table: pa.Table
    key_columns: list[str]


def flatten(topic: str, winners: pa.Table, schemas: Mapping[int, str] | None = None) -> FlatBatch:
    """`winners` has the decoded columns (key, value, __op, __seq, __source_ts_ms, __deleted).

    Enveloped records with plain column types are parsed in Arrow (`columns.py`); anything
    else (schemaless JSON, nested types) goes row by row. Values whose schema the source cut
    off (`schema_id`, see schemas.py) are read as they are, with `schemas` (id → text); only
    the row path needs the envelopes put back.
    """
    from cdc_spark.decode.columns import flatten_enveloped
    from cdc_spark.decode.schemas import restore

    if schemas is not None:
        flat = flatten_enveloped(topic, winners, schemas)
        if flat is not None:
            return flat
    full = restore(winners, schemas or {})
    return flatten_enveloped(topic, full) or flatten_rows(topic, full)


def flatten_rows(topic: str, winners: pa.Table) -> FlatBatch:
    """The row-by-row flattening: any JSON shape, with or without schemas."""
    cols: dict[str, tuple[pa.DataType | None, Convert]] = {}
    rows: list[dict[str, Any]] = []
    key_columns: list[str] = []
    seen_schemas: dict[int, Any] = {}  # id → schema, holding it so the id stays unique
    reader = EnvelopeReader()
    for key_text, value, op in zip(
        winners.column("key").to_pylist(),
        winners.column("value").to_pylist(),
        winners.column("__op").to_pylist(),
        strict=True,
    ):
        _, schema, env = reader.read(value)
        data = dict((env.get("before") if op == "d" else env.get("after")) or {})
        key = json.loads(key_text)
        if isinstance(key, dict):
            if not key_columns:
                key_columns = list(key)
            for k, v in key.items():
                if data.get(k) is None:
                    data[k] = v
        rows.append(data)
        if schema is not None:
            if id(schema) in seen_schemas:  # the reader hands out one object per schema text
                continue
            seen_schemas[id(schema)] = schema
            for name, (dtype, conv) in field_types(envelope_row_schema(schema)).items():
                old = cols.get(name)
                if old is not None and old[0] is not None and old[0] != dtype:
                    raise ColumnTypeConflict(
                        f"topic {topic}: column {name!r} arrives as {old[0]} and as {dtype} in one batch"
                    )
                cols[name] = (dtype, conv)
        for name in data:
            if name not in cols:
                cols[name] = (None, _ident)  # schemaless: inferred below
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    for name, (dtype, conv) in cols.items():
        values = [conv(r.get(name)) for r in rows]
        arr = pa.array(values, type=dtype) if dtype is not None else pa.array(values)
        if pa.types.is_null(arr.type):
            arr = arr.cast(pa.string())
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    for f in META_ARROW:
        arrays.append(winners.column(f.name).combine_chunks().cast(f.type))
        fields.append(f)
    return FlatBatch(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), key_columns)

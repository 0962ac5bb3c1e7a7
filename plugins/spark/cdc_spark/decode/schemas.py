"""The value schema shipped once per batch instead of once per record.

A JsonConverter record is mostly its schema text (about 1 KB of a 1.3 KB record in a
typical table). With `latestPerKey=true` the source cuts it off: `value` holds only the
payload, `schema_id` names the schema, and `value_schema` carries the text on the first
row of each schema in each emitted batch. The driver collects those few rows and puts
the envelope back around the winners before flattening (`restore`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

_HEAD = b'{"schema":'
_TAIL = b',"payload":'


def schema_of(prefix: bytes) -> str | None:
    """The schema text inside an envelope prefix `{"schema":…,"payload":`."""
    if prefix.startswith(_HEAD) and prefix.endswith(_TAIL):
        return prefix[len(_HEAD) : -len(_TAIL)].decode()
    return None


def schema_id(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


def mark_first(table: pa.Table, texts: Mapping[int, str]) -> pa.Table:
    """`value_schema` set on the first row of every schema id (null elsewhere)."""
    ids = table.column("schema_id").combine_chunks()
    if ids.null_count == len(ids):
        return table
    first = pc.index_in(pa.array(list(texts), pa.int64()), ids)  # first row of each id, null if absent
    names: list[str | None] = [None] * table.num_rows
    for sid, i in zip(texts, first.to_pylist(), strict=True):
        if i is not None:
            names[i] = texts[sid]
    at = table.schema.get_field_index("value_schema")
    return table.set_column(at, "value_schema", pa.array(names, pa.string()))


def restore(winners: pa.Table, texts: Mapping[int, str]) -> pa.Table:
    """The full JsonConverter value back on every row that had its schema cut off (their
    `schema_id` becomes null, so restoring twice changes nothing)."""
    if "schema_id" not in winners.column_names:
        return winners
    ids = winners.column("schema_id").combine_chunks()
    if ids.null_count == len(ids):
        return winners
    known = pa.array(list(texts), pa.int64())
    missing = pc.and_(pc.is_valid(ids), pc.is_null(pc.index_in(ids, known)))
    if pc.any(missing).as_py():
        raise RuntimeError(f"schema id {ids.filter(missing)[0]} of a decoded row was not collected with its batch")
    heads = pa.array([f'{{"schema":{texts[k]},"payload":' for k in texts], pa.string())
    head = heads.take(pc.index_in(ids, known))
    value = winners.column("value").combine_chunks().view(pa.string())
    full = pc.binary_join_element_wise(head, value, "}", "")
    full = pc.if_else(pc.is_valid(ids), full, value).cast(pa.binary())
    at = winners.schema.get_field_index("value")
    winners = winners.set_column(at, "value", full)
    at = winners.schema.get_field_index("schema_id")  # whole values now: nothing is cut off
    return winners.set_column(at, "schema_id", pa.nulls(winners.num_rows, pa.int64()))

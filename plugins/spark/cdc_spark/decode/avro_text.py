"""JsonConverter payload text of Avro records built from Arrow columns, for the schemas where it is exact.

For a "plain" schema (avro_json.PlainPayloads: the datum is its own JsonConverter payload) made of
records, `["null", X]` unions, int, long, boolean and string, the payload is what orjson writes
for fastavro's datum: the fields in schema order, integers in decimal, strings with orjson's
escapes (`\\"`, `\\\\`, `\\b \\f \\n \\r \\t`, `\\u00XX` for the other control characters, nothing else).
The bodies are read by polars' Avro reader (avro_columns.py) and the text is joined with Arrow's
string kernels, instead of a fastavro datum and an orjson call per record. Other types (floats,
whose shortest text Arrow and orjson may write differently; bytes and decimals, base64 in JSON;
arrays, maps, enums) leave the schema to that per-record path (avro.py).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.decode.avro_columns import _branches, _kind, _polars, _Recursive, body_bytes, container, inline_names

_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CONTROL = "[\\x00-\\x1f]"


def _supported(node: Any) -> bool:
    nullable, inner = _branches(node)
    if nullable and inner is None:
        return False
    kind = _kind(inner)
    if kind in ("int", "long", "boolean", "string"):
        return True
    if kind in ("record", "error") and isinstance(inner, dict):
        return all(str(f["name"]).isidentifier() and _supported(f["type"]) for f in inner.get("fields", []))
    return False


def _string(col: pa.Array) -> pa.Array:
    """JSON string literals as orjson writes them."""
    text = col.cast(pa.string())
    text = pc.replace_substring(pc.replace_substring(text, "\\", "\\\\"), '"', '\\"')
    if pc.any(pc.match_substring_regex(text, _CONTROL)).as_py():
        for code in range(0x20):
            char = chr(code)
            text = pc.replace_substring(text, char, _ESCAPES.get(char, f"\\u{code:04x}"))
    return pc.binary_join_element_wise('"', text, '"', "")


def _text(col: pa.Array, node: Any) -> pa.Array:
    """The JSON text of every value of `col` (Avro type `node`), "null" for nulls."""
    _, inner = _branches(node)
    kind = _kind(inner)
    if kind in ("int", "long"):
        out = col.cast(pa.int64()).cast(pa.string())
    elif kind == "boolean":
        out = pc.if_else(col, "true", "false")
    elif kind == "string":
        out = _string(col)
    else:
        assert isinstance(col, pa.StructArray)
        names = [col.type.field(i).name for i in range(col.type.num_fields)]
        pieces = [
            pc.binary_join_element_wise(f'"{f["name"]}":', _text(col.field(names.index(f["name"])), f["type"]), "")
            for f in inner.get("fields", [])
        ]
        if not pieces:
            out = pa.array(["{}"] * len(col), pa.string())
        else:
            joined = pc.binary_join_element_wise(*pieces, ",") if len(pieces) > 1 else pieces[0]
            out = pc.binary_join_element_wise("{", joined, "}", "")
    if col.null_count:
        out = pc.if_else(pc.is_valid(col), out, "null")
    return out


class JsonText:
    """A schema whose JsonConverter payloads are built in Arrow; `codec_text` None when it is not one."""

    def __init__(self, codec: Any, plain: bool) -> None:
        self.codec_text: str | None = None
        self.codec: dict[str, Any] = {}
        if not plain:
            return
        try:
            inlined = inline_names(codec)
        except _Recursive:
            return
        if not isinstance(inlined, dict) or _kind(inlined) != "record" or not _supported(inlined):
            return
        self.codec, self.codec_text = inlined, json.dumps(inlined)

    def payloads(self, bodies: pa.Array) -> pa.Array | None:
        """The payload text of every body, or None when polars does not read them all exactly."""
        import polars as pl

        assert self.codec_text is not None
        n = len(bodies)
        if n == 0:
            return pa.array([], pa.string())
        block = container(self.codec_text, body_bytes(bodies) + bodies[0].as_py(), n + 1)
        table = _polars(lambda: pl.read_avro(io.BytesIO(block)).to_arrow())
        if table is None or table.num_rows != n + 1 or table.slice(0, 1).to_pylist() != table.slice(n, 1).to_pylist():
            return None
        rows = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], names=table.column_names)
        return _text(rows.slice(0, n), self.codec)

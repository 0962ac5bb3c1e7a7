"""`AvroData`: Connect schemas and values to and from Avro, with Confluent's AvroData settings.

Settings (Confluent's AvroDataConfig names): `connect.meta.data` (true), `enhanced.avro.schema.support`
(false: Avro enums read as strings keep their symbols as parameters either way; with it, such
strings are written back as enums), `scrub.invalid.names` (false), `allow.optional.map.keys`
(false), the cache size `schemas.cache.config` (1000), and Debezium's `schema.name.adjustment.mode`
/ `field.name.adjustment.mode` (none) for names Avro refuses.

Encoding is fastavro's (compiled): each Avro schema is parsed once, reduced to its structure
(codec_schema), so fastavro moves plain ints and bytes and the Connect logical conversions
(Kafka's Decimal, Date, Time, Timestamp) are the only ones applied. The registered text keeps
every property. A record's body is fastavro's `write_data` appended to a bytearray with the parsed
schema and its named types gathered once (`append_body`, `Body`): the bytes of `schemaless_writer`
without its per-call parse. The value writers (from_connect.compile_writer) give fastavro unions
in tuple notation, nulls included, so it never searches a union.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fastavro

from cdc.api.data import Schema
from cdc.api.errors import DataException
from cdc.converters.avro import avro_schema, from_connect, to_connect
from cdc.converters.avro.names import NameRules
from cdc.converters.lru import LRU

# -- the Avro body: fastavro's schemaless encoding ---------------------------------------------------
Append = Callable[[bytearray, Any, Any, dict[str, Any], str, dict[str, bool]], None]
WRITE_OPTIONS: dict[str, bool] = {"strict": False, "strict_allow_default": False, "disable_tuple_notation": False}


def _append_via_schemaless_writer(
    buf: bytearray, datum: Any, schema: Any, named: dict[str, Any], fname: str, options: dict[str, bool]
) -> None:
    """`append_body` where fastavro's compiled `write_data` is not there: its public `schemaless_writer`."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, datum)
    buf += out.getbuffer()


_PROBE_FIELD = {"name": "x", "type": "int"}


def _compiled_append() -> Append:
    """fastavro's compiled `write_data` (fastavro._write, Cython), when it writes what `schemaless_writer` does.

    `schemaless_writer(fo, schema, datum)` is `parse_schema(schema, named)` (for a parsed schema, a
    copy of its named types into a fresh dict; a top-level union is parsed again), an options dict,
    `write_data` into a new bytearray and `fo.write` of it, per datum: about a tenth of the encode
    of a Debezium change event (2026-12-02). `write_data(buf, datum, schema, named, "", options)` appends the same
    bytes to one bytearray with the schema parsed once. It is fastavro's own encoder, not a
    hand-written one, but outside fastavro's documented API: it is used only if it is there with
    this signature and writes, byte for byte, what `schemaless_writer` writes for a probe datum
    (records, a named reference, unions in tuple notation, ints, longs, doubles, strings, bytes,
    arrays, maps); otherwise every record goes through `schemaless_writer`.
    """
    try:
        from fastavro._write import write_data  # type: ignore[attr-defined]
    except ImportError:  # the pure-Python build: its write_data takes an encoder, not a bytearray
        return _append_via_schemaless_writer
    probe = {
        "type": "record",
        "name": "p.Probe",
        "fields": [
            {"name": "a", "type": ["null", {"type": "record", "name": "p.In", "fields": [_PROBE_FIELD]}]},
            {"name": "b", "type": ["null", "p.In"]},
            {"name": "c", "type": ["null", "string"]},
            {"name": "d", "type": "long"},
            {"name": "e", "type": ["double", "null"]},
            {"name": "f", "type": "bytes"},
            {"name": "g", "type": {"type": "array", "items": "int"}},
            {"name": "h", "type": {"type": "map", "values": ["null", "long"]}},
            {"name": "i", "type": "boolean"},
            {"name": "j", "type": "float"},
        ],
    }
    datum = {
        "a": ("p.In", {"x": -3}),
        "b": None,
        "c": ("string", "h\u00e9"),
        "d": 1 << 40,
        "e": ("double", 0.5),
        "f": b"\x00\xff",
        "g": [1, -1, 300],
        "h": {"k": ("long", -(1 << 62)), "n": None},
        "i": True,
        "j": 1.25,
    }
    try:
        named: dict[str, Any] = {}
        schema = fastavro.parse_schema(probe, named)
        expected = io.BytesIO()
        fastavro.schemaless_writer(expected, schema, datum)
        buf = bytearray(b"\x00")
        write_data(buf, datum, schema, named, "", dict(WRITE_OPTIONS))
        if bytes(buf) == b"\x00" + expected.getvalue():
            return write_data  # type: ignore[no-any-return]
    except Exception:  # another signature: the public path
        pass
    return _append_via_schemaless_writer


append_body: Append = _compiled_append()
"""`append_body(buf, datum, body.schema, body.named, "", WRITE_OPTIONS)` appends the Avro binary
of `datum` to `buf`: the bytes `fastavro.schemaless_writer` writes (see `_compiled_append`)."""


@dataclass(frozen=True, slots=True)
class Body:
    """A fastavro schema ready for `append_body`: parsed once, with its named types gathered once."""

    schema: Any
    named: dict[str, Any]

    @classmethod
    def of(cls, codec: Any) -> Body:
        named: dict[str, Any] = {}
        return cls(fastavro.parse_schema(codec, named), named)


def encode(body: Body, datum: Any) -> bytes:
    """The Avro binary of one datum (`schemaless_writer`'s bytes)."""
    buf = bytearray()
    append_body(buf, datum, body.schema, body.named, "", WRITE_OPTIONS)
    return bytes(buf)


@dataclass(frozen=True, slots=True)
class WriteSchema:
    """A Connect schema ready to write: its Avro text (what is registered) and value writer."""

    text: str
    avro: Any  # the parsed JSON
    full_name: str | None  # record (or enum) full name, for RecordNameStrategy; else the Avro type
    codec: Any  # fastavro's parsed schema
    write: from_connect.Write
    body: Body  # the codec for append_body


@dataclass(frozen=True, slots=True)
class ReadSchema:
    """An Avro writer schema ready to read: the Connect schema and the datum reader."""

    schema: Schema
    codec: Any
    read: to_connect.Read | None


_STRUCTURE = {
    "record": ("type", "name", "namespace", "fields"),
    "error": ("type", "name", "namespace", "fields"),
    "enum": ("type", "name", "namespace", "symbols"),
    "fixed": ("type", "name", "namespace", "size"),
    "array": ("type", "items"),
    "map": ("type", "values"),
}


def codec_schema(node: Any) -> Any:
    """The schema's structure only, for fastavro: no `logicalType` (fastavro then moves the physical
    values and the Connect logical conversions are the only ones applied), no `connect.*`, docs or
    defaults, and `{"type": "long", ...}` as `"long"` (which fastavro writes and reads faster)."""
    if isinstance(node, list):
        return [codec_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    t = node.get("type")
    keys = _STRUCTURE.get(t) if isinstance(t, str) else None
    if keys is None:
        return codec_schema(t)  # a primitive with properties, or a type given as {"type": <schema>}
    out: dict[str, Any] = {k: node[k] for k in keys if k in node}
    if "fields" in out:
        out["fields"] = [{"name": f["name"], "type": codec_schema(f["type"])} for f in out["fields"]]
    if "items" in out:
        out["items"] = codec_schema(out["items"])
    if "values" in out:
        out["values"] = codec_schema(out["values"])
    return out


def parse_codec(avro: Any) -> Any:
    """fastavro's parsed schema (parsed once: schemaless_writer would parse an unmarked one per call)."""
    try:
        return fastavro.parse_schema(codec_schema(avro))
    except Exception as e:  # fastavro raises SchemaParseException, ValueError, KeyError...
        raise DataException(f"AvroConverter: invalid Avro schema: {type(e).__name__}: {e}") from e


class AvroData:
    """Confluent's AvroData: the schema and value mapping, with converted schemas cached."""

    def __init__(
        self,
        connect_meta_data: bool = True,
        enhanced_schema_support: bool = False,
        scrub_invalid_names: bool = False,
        allow_optional_map_keys: bool = False,
        schema_name_adjustment_mode: str = "none",
        field_name_adjustment_mode: str = "none",
        cache_size: int = 1000,
    ) -> None:
        self.meta = connect_meta_data
        self.enhanced = enhanced_schema_support
        self.optional_map_keys = allow_optional_map_keys
        self.rules = NameRules(schema_name_adjustment_mode, field_name_adjustment_mode, scrub_invalid_names)
        self._writes: LRU[Schema, WriteSchema] = LRU(cache_size)
        self._reads: LRU[tuple[str, int | None], ReadSchema] = LRU(cache_size)

    # -- Connect -> Avro ---------------------------------------------------------------------------
    def from_connect_schema(self, schema: Schema) -> Any:
        """The Avro schema (parsed JSON) of a Connect schema."""
        return self.writer(schema).avro

    def writer(self, schema: Schema) -> WriteSchema:
        """Everything needed to write values of `schema` (cached per schema)."""
        cached = self._writes.get(schema)
        if cached is not None:
            return cached
        conv = from_connect.Conversion(self.rules, self.meta, self.enhanced, self.optional_map_keys)
        node = conv.convert(schema)
        avro = avro_schema.to_jsonable(node)
        text = json.dumps(avro, separators=(",", ":"), ensure_ascii=False)
        named = node.branches[-1] if isinstance(node, avro_schema.Union) else node
        full_name = named.full_name if isinstance(named, avro_schema.Named) else _type_name(avro)
        codec = parse_codec(avro)
        write = from_connect.compile_writer(schema, conv)
        entry = WriteSchema(text, avro, full_name, codec, write, Body.of(codec))
        self._writes.put(schema, entry)
        return entry

    def from_connect_data(self, schema: Schema, value: Any) -> Any:
        """The datum (for fastavro, with this module's codec schema) of a Connect value."""
        return self.writer(schema).write(value)

    # -- Avro -> Connect ---------------------------------------------------------------------------
    def reader(self, text: str, version: int | None = None) -> ReadSchema:
        """Everything needed to read data written with Avro schema `text` (cached per text and version)."""
        key = (text, version)
        cached = self._reads.get(key)
        if cached is not None:
            return cached
        try:
            avro = json.loads(text)
        except ValueError as e:
            raise DataException(f"AvroConverter: the registry's schema is not JSON: {e}") from e
        schema = self.to_connect_schema(avro, version)
        entry = ReadSchema(schema, parse_codec(avro), to_connect.compile_reader(schema))
        self._reads.put(key, entry)
        return entry

    def to_connect_schema(self, avro: Any, version: int | None = None) -> Schema:
        """The Connect schema of an Avro schema (parsed JSON); `version` is used when it carries none."""
        return to_connect.AvroToConnect(self.meta).convert(avro, version)

    def to_connect_data(self, schema: Schema, datum: Any) -> Any:
        read = to_connect.compile_reader(schema)
        return datum if read is None else read(datum)


def _type_name(avro: Any) -> str:
    if isinstance(avro, str):
        return avro
    if isinstance(avro, list):
        return _type_name(next((b for b in avro if b != "null"), "null"))
    return str(avro.get("type"))

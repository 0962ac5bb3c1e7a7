"""The columnar Avro decode (cdc_spark/decode/avro_columns.py) against the reference path it replaces.

The reference is the same `decode_avro_batches` with the columnar read switched off: every record
transcoded to JsonConverter text by `AvroToJson`, then decoded by the JSON path. On random row
schemas (tests/converters/avro_strategies.py: Connect primitives, Debezium's time, decimal and json
types, bytes, arrays, maps, nested and reused structs, defaults), random key shapes, MySQL and
PostgreSQL source blocks, snapshot markers, tombstones, two schema versions in one batch and poison
records, both must emit exactly the same rows: ordering columns, keys, values and schema ids,
with and without latestPerKey, with and without the unavailable-value placeholder.
"""

from __future__ import annotations

import decimal
import itertools
import json
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pyarrow as pa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cdc.api.data import Decimal, Schema, SchemaBuilder, Struct
from cdc.converters.avro import AvroConverter
from cdc_spark.decode import avro, avro_columns
from cdc_spark.decode.avro import decode_avro_batches
from cdc_spark.decode.unavailable import Placeholder
from tests.converters.avro_strategies import schemas, values
from tests.spark.test_avro_decode import MockLookup
from tests.spark.test_decode import _raw
from tests.support.examples import examples

TOPIC = "p.db.t"
_scopes = itertools.count()

MYSQL_SOURCE = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.mysql.Source")
    .field("connector", Schema.STRING_SCHEMA)
    .field("ts_ms", Schema.INT64_SCHEMA)
    .field("snapshot", Schema.OPTIONAL_STRING_SCHEMA)
    .field("file", Schema.STRING_SCHEMA)
    .field("pos", Schema.INT64_SCHEMA)
    .field("row", Schema.INT32_SCHEMA)
    .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
    .build()
)
PG_SOURCE = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.postgresql.Source")
    .field("ts_ms", Schema.INT64_SCHEMA)
    .field("snapshot", Schema.OPTIONAL_STRING_SCHEMA)
    .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
    .field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .field("txId", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)
# Key shapes: the ones built in Arrow (integers, strings, booleans, several fields) and ones left
# to the reference transcoding (bytes, decimals).
KEYS: dict[str, list[tuple[str, Schema]]] = {
    "int": [("id", Schema.INT32_SCHEMA)],
    "long": [("id", Schema.INT64_SCHEMA)],
    "text": [("code", Schema.STRING_SCHEMA)],
    "pair": [("b", Schema.OPTIONAL_STRING_SCHEMA), ("a", Schema.INT64_SCHEMA), ("flag", Schema.BOOLEAN_SCHEMA)],
    "bytes": [("id", Schema.BYTES_SCHEMA)],
    "decimal": [("id", Decimal.builder(2).build())],
}
_KEY_VALUES = {
    "int": st.integers(-5, 5),
    "long": st.integers(-(2**63), 2**63 - 1),
    "text": st.sampled_from(["a", 'q"uote', "back\\slash", "é€😀", "", "ctl\n", "x" * 30]),
    "pair": st.tuples(st.one_of(st.none(), st.sampled_from(["", "k", '"', "ü"])), st.integers(-3, 3), st.booleans()),
    "bytes": st.binary(max_size=3),
    "decimal": st.integers(-500, 500).map(lambda u: decimal.Decimal(u).scaleb(-2)),
}


def _converter(client: Any, is_key: bool) -> AvroConverter:
    c = AvroConverter()
    c.use_registry(client)
    c.configure({}, is_key)
    return c


@st.composite
def batches(draw: Any) -> tuple[list[tuple[bytes | None, bytes | None]], MockLookup]:
    """Avro records of one topic (two value schema versions, one key shape), and their registry."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    client = SchemaRegistryClient.new_client({"url": f"mock://columns{next(_scopes)}"})
    keys, vals = _converter(client, True), _converter(client, False)
    shape = draw(st.sampled_from(sorted(KEYS)))
    kb = SchemaBuilder.struct().name(f"{TOPIC}.Key")
    for name, s in KEYS[shape]:
        kb.field(name, s)
    key_schema = kb.build()
    pg = draw(st.booleans())
    source_schema = PG_SOURCE if pg else MYSQL_SOURCE
    columns = draw(st.lists(schemas(6), min_size=0, max_size=4))
    envelopes = []
    rows = []
    for version in (1, 2):
        rb = SchemaBuilder.struct().name(f"{TOPIC}.Value").optional()
        for name, s in KEYS[shape]:
            rb.field(name, s)
        for i, s in enumerate(columns):
            rb.field(f"c{i}", s)
        if version == 2:
            rb.field("added", Schema.OPTIONAL_STRING_SCHEMA)
        row = rb.build()
        rows.append(row)
        envelopes.append(
            SchemaBuilder.struct()
            .name(f"{TOPIC}.Envelope")
            .field("before", row)
            .field("after", row)
            .field("source", source_schema)
            .field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .build()
        )
    records: list[tuple[bytes | None, bytes | None]] = []
    n = draw(st.integers(1, 25))
    for seq in range(1, n + 1):
        v = draw(st.sampled_from([0, 0, 0, 1]))
        op = draw(st.sampled_from("ccuuudr"))
        kv = draw(_KEY_VALUES[shape])
        key = Struct(key_schema)
        kparts = kv if isinstance(kv, tuple) else (kv,)
        for (name, _), part in zip(KEYS[shape], kparts, strict=True):
            key.put(name, part)
        row = Struct(rows[v])
        for (name, _), part in zip(KEYS[shape], kparts, strict=True):
            row.put(name, part)
        for i, s in enumerate(columns):
            row.put(f"c{i}", draw(values(s)))
        source = Struct(source_schema)
        marker = draw(st.sampled_from(["true", "last", "false"])) if op == "r" else "false"
        source.put("ts_ms", 1_700_000_000_000 + seq).put("snapshot", marker)
        if pg:
            source.put("lsn", 1000 + seq).put("txId", 7)
            if draw(st.integers(0, 4)) == 0:
                source.put("sequence", json.dumps([str(900 + seq), str(1000 + seq)]))
        else:
            source.put("connector", "mysql").put("file", "mysql-bin.000003").put("pos", 4 + seq).put("row", 0)
        env = Struct(envelopes[v])
        env.put("before", row if op == "d" else None).put("after", None if op == "d" else row)
        env.put("source", source).put("op", op).put("ts_ms", 1_700_000_000_000 + seq)
        k = keys.from_connect_data(TOPIC, key_schema, key)
        records.append((k, vals.from_connect_data(TOPIC, envelopes[v], env)))
        if op == "d" and draw(st.booleans()):
            records.append((k, None))  # the tombstone after a delete
    poison = draw(st.integers(0, 6))
    if poison == 0:
        records.insert(draw(st.integers(0, len(records))), (records[0][0], b'{"op":"c"}'))
    elif poison == 1:
        k, v = next(r for r in records if r[1] is not None)
        records.insert(draw(st.integers(0, len(records))), (k, v[:1] + (4242).to_bytes(4, "big") + v[5:]))
    return records, MockLookup(client)


@contextmanager
def _columnar(on: bool) -> Iterator[list[int]]:
    """The columnar read on or off; yields the count of batches it read."""
    used: list[int] = []
    real = avro_columns.decode_events

    def counted(batch: pa.RecordBatch, transcoder: Any) -> Any:
        out = real(batch, transcoder)
        if out is not None:
            used.append(batch.num_rows)
        return out

    with (
        mock.patch.object(avro, "_columnar_available", return_value=on),
        mock.patch.object(avro_columns, "decode_events", counted),
    ):
        yield used


def _decode(records: list, lookup: MockLookup, on: bool, combine: bool, placeholder: Placeholder | None) -> Any:
    sizes = [3, 5, len(records)]  # several raw batches: winners come from different batches
    raw, start = [], 0
    for size in sizes:
        if start < len(records):
            raw.append(_raw(records[start : start + size], TOPIC))
            start += size
    raw = [
        b.set_column(2, "offset", pa.array(range(o, o + b.num_rows), pa.int64()))
        for b, o in zip(raw, itertools.accumulate([0] + [b.num_rows for b in raw]), strict=False)
    ]
    with _columnar(on) as used:
        out = list(decode_avro_batches(iter(raw), lookup, combine=combine, placeholder=placeholder))
    table = pa.Table.from_batches(out) if out else None
    return table, used


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(batches(), st.booleans(), st.booleans())
def test_the_columnar_decode_emits_exactly_the_reference_rows(
    case: tuple[list, MockLookup], combine: bool, with_placeholder: bool
) -> None:
    records, lookup = case
    placeholder = Placeholder.parse("__debezium_unavailable_value") if with_placeholder else None
    want, _ = _decode(records, lookup, False, combine, placeholder)
    got, used = _decode(records, lookup, True, combine, placeholder)
    event("read in Arrow" if used else "reference path only")
    if want is None or got is None:
        assert want is None and got is None
        return
    assert got.schema == want.schema
    for name in want.column_names:
        if name in ("raw_key", "value"):
            pairs = zip(got.column(name).to_pylist(), want.column(name).to_pylist(), strict=True)
            assert all(_same_json(a, b) for a, b in pairs), (name, got.column(name), want.column(name))
        else:
            assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


def _float32(text: str) -> float:
    """The number rounded to FLOAT32 (a double beyond FLOAT32's range as it is)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", float(text)))[0])
    except OverflowError:
        return float(text)


def _same_json(a: bytes | None, b: bytes | None) -> bool:
    """Equal bytes, or equal JSON up to the writing of floats. The reference path itself writes a
    float either as orjson does (avro_json.py) or as JsonConverter does (1.0E16; a FLOAT32 in its
    own shortest digits) depending on whether another record of the same batch holds NaN; the
    two paths group records differently (per raw batch, per emitted rows), and both texts read
    back as the same FLOAT32/FLOAT64 column."""
    if a == b:
        return True
    if a is None or b is None or a[:1] != b"{":
        return False
    return json.loads(a, parse_float=_float32) == json.loads(b, parse_float=_float32)


def test_plain_envelopes_and_keys_take_the_columnar_read() -> None:
    """The common shapes must not fall back silently (that would only cost speed, unseen)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from cdc_spark.decode import avro_text

    written: list[int] = []
    real = avro_text.JsonText.payloads

    def counted(self: Any, bodies: pa.Array) -> Any:
        out = real(self, bodies)
        written.append(0 if out is None else len(out))
        return out

    client = SchemaRegistryClient.new_client({"url": "mock://columns-plain"})
    keys, vals = _converter(client, True), _converter(client, False)
    for shape, decimals in (("int", True), ("text", False), ("pair", False), ("int", False)):
        kb = SchemaBuilder.struct().name(f"{TOPIC}.Key")
        rb = SchemaBuilder.struct().name(f"{TOPIC}.Value").optional()
        for name, s in KEYS[shape]:
            kb.field(name, s)
            rb.field(name, s)
        rb.field("at", Schema.OPTIONAL_INT64_SCHEMA).field("note", Schema.OPTIONAL_STRING_SCHEMA)
        if decimals:  # bytes in the value: its JsonConverter text is written per record
            rb.field("amount", Decimal.builder(3).optional().build())
        key_schema, row_schema = kb.build(), rb.build()
        env_schema = (
            SchemaBuilder.struct().name(f"{TOPIC}.Envelope").field("before", row_schema).field("after", row_schema)
            .field("source", MYSQL_SOURCE).field("op", Schema.STRING_SCHEMA).build()
        )  # fmt: skip
        records = []
        for i in range(40):
            parts = {"int": (i % 7,), "text": (f'k"{i % 7}\\',), "pair": (None if i % 3 else "é", i % 7, i % 2 == 0)}[
                shape
            ]
            key, row = Struct(key_schema), Struct(row_schema)
            for (name, _), part in zip(KEYS[shape], parts, strict=True):
                key.put(name, part)
                row.put(name, part)
            row.put("at", i).put("note", [None, 'a"b\\c', "\x00\x1f\n\t\u2028é😀/", ""][i % 4])
            if decimals:
                row.put("amount", decimal.Decimal(i).scaleb(-3))
            src = Struct(MYSQL_SOURCE).put("connector", "mysql").put("ts_ms", i).put("file", "b.000001")
            src.put("pos", 10 + i).put("row", 0).put("snapshot", "false")
            env = Struct(env_schema).put("after", row).put("source", src).put("op", "u")
            records.append(
                (keys.from_connect_data(TOPIC, key_schema, key), vals.from_connect_data(TOPIC, env_schema, env))
            )
        lookup = MockLookup(client)
        for combine in (True, False):
            want, _ = _decode(records, lookup, False, combine, Placeholder.parse("__debezium_unavailable_value"))
            written.clear()
            with mock.patch.object(avro_text.JsonText, "payloads", counted):
                got, used = _decode(records, lookup, True, combine, Placeholder.parse("__debezium_unavailable_value"))
            assert sum(used) == len(records), (shape, combine)
            # each distinct key, and every value unless it holds a decimal: written in Arrow, not per record
            assert sum(written) > (0 if decimals else got.num_rows), (shape, combine, written)
            assert got.equals(want), shape


def test_named_types_are_inlined_and_recursive_ones_refused() -> None:
    value = {"type": "record", "name": "Value", "namespace": "a.b", "fields": [{"name": "x", "type": "int"}]}
    env = {
        "type": "record",
        "name": "Envelope",
        "namespace": "a.b",
        "fields": [
            {"name": "before", "type": ["null", value]},
            {"name": "after", "type": ["null", "Value"]},
            {"name": "source", "type": {"type": "record", "name": "S", "fields": [{"name": "pos", "type": "long"}]}},
            {"name": "op", "type": "string"},
        ],
    }
    inlined = avro_columns.inline_names(env)
    after = inlined["fields"][1]["type"][1]
    assert after["type"] == "record" and after["fields"] == [{"name": "x", "type": "int"}]
    names = [inlined["name"], inlined["fields"][0]["type"][1]["name"], after["name"]]
    assert len(set(names)) == 3  # every definition has a name of its own
    assert avro_columns.EnvelopeLayout(env).codec_text is not None
    node = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    recursive = {**env, "fields": [*env["fields"][:3], {"name": "op", "type": "string"}, {"name": "n", "type": node}]}
    assert avro_columns.EnvelopeLayout(recursive).codec_text is None
    wrong_pos = {**env, "fields": [*env["fields"][:2], {"name": "source", "type": {"type": "record", "name": "S2",
                 "fields": [{"name": "pos", "type": "string"}]}}, env["fields"][3]]}  # fmt: skip
    assert avro_columns.EnvelopeLayout(wrong_pos).codec_text is None  # pyarrow.json would not read it as int64


def test_a_body_longer_than_its_record_is_not_read_in_arrow() -> None:
    """polars ignores bytes after the block's last record: the copy of the first body must catch them."""
    from cdc.converters.avro.avro_data import AvroData, codec_schema

    schema = SchemaBuilder.struct().name("k.Key").field("id", Schema.INT64_SCHEMA).build()
    text = AvroData().writer(schema).text
    shape = avro_columns.KeyText(codec_schema(json.loads(text)))
    bodies = [bytes([2 * i]) for i in range(5)]  # zig-zag longs 0..4
    good = shape.read(pa.array(bodies, pa.binary()))
    assert good is not None and good.to_pylist() == [f'{{"id":{i}}}' for i in range(5)]
    assert shape.read(pa.array([*bodies[:4], bodies[4] + b"\x02"], pa.binary())) is None

"""The Spark sink's Avro decoding (cdc_spark/decode/avro.py) against its JSON path.

The same change events are written once with JsonConverter and once with AvroConverter (against
confluent-kafka's in-memory mock registry: a stand-in for a registry server, which the Kafka
end-to-end test runs for real); the Avro batch, decoded and flattened, must give exactly the
rows of the JSON batch, across two schema versions interleaved in one batch, tombstones and
deletes. Records that are not Avro, or whose schema id the registry does not know, become error
rows that name their topic, partition and offset.
"""

from __future__ import annotations

import contextlib
import decimal
import io
import socket
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api.data import Decimal, Schema, SchemaBuilder, Timestamp
from cdc.converters.avro import AvroConverter
from cdc_spark.decode import JsonDeserializer, flatten
from cdc_spark.decode.avro import AvroToJson, decode_avro_batches, read_bodies
from cdc_spark.decode.events import decode_batches
from tests.spark.events import Table
from tests.spark.test_decode import _raw
from tests.support.examples import examples

TOPIC = "p.db.t"
COLS = {
    "id": Schema.INT32_SCHEMA,
    "price": Decimal.builder(2).optional().parameter("connect.decimal.precision", "10").build(),
    "blob": Schema.OPTIONAL_BYTES_SCHEMA,
    "at": Timestamp.builder().optional().build(),
    "name": Schema.OPTIONAL_STRING_SCHEMA,
    "ratio": Schema.OPTIONAL_FLOAT64_SCHEMA,
}


class MockLookup:
    """SchemaLookup over confluent-kafka's mock registry client."""

    location = "at mock://"

    def __init__(self, client: Any) -> None:
        self.client = client
        self.asked: list[set[int]] = []

    def texts(self, ids: set[int]) -> dict[int, str]:
        self.asked.append(set(ids))
        out = {}
        for i in ids:
            with contextlib.suppress(Exception):  # unknown to the mock: left out
                out[i] = self.client.get_schema(i).schema_str
        return out


def _avro_tables(scope: str) -> tuple[Table, Table, Table, Table, MockLookup]:
    """(v1 JSON, v2 JSON, v1 Avro, v2 Avro) encoders of one table, and the Avro records' registry."""
    client = SchemaRegistryClient.new_client({"url": f"mock://{scope}"})
    out = []
    for avro in (False, True):
        for cols in (COLS, {**COLS, "note": Schema.OPTIONAL_STRING_SCHEMA}):
            t = Table(TOPIC, cols)
            if avro:
                for attr, is_key in (("keys", True), ("values", False)):
                    conv = AvroConverter()
                    conv.use_registry(client)
                    conv.configure({}, is_key)
                    setattr(t, attr, conv)
            out.append(t)
    return out[0], out[1], out[2], out[3], MockLookup(client)


_ROW = st.fixed_dictionaries(
    {
        "price": st.one_of(st.none(), st.decimals(-(10**7), 10**7, places=2, allow_nan=False)),
        "blob": st.one_of(st.none(), st.binary(max_size=6)),
        "at": st.one_of(st.none(), st.integers(0, 2 * 10**12)),
        "name": st.one_of(st.none(), st.text(max_size=5)),
        # NaN and the infinities (rarely) send a batch the exact way: JsonConverter quotes them
        "ratio": st.one_of(st.none(), st.floats(width=64), st.floats(allow_nan=False, allow_infinity=False)),
        "note": st.one_of(st.none(), st.text(max_size=3)),
    }
)
_EVENT = st.tuples(st.sampled_from("cud"), st.integers(1, 6), _ROW, st.booleans(), st.booleans())


def _rows(events: list[tuple], tables: tuple[Table, Table]) -> list[tuple[bytes | None, bytes | None]]:
    import datetime

    out: list[tuple[bytes | None, bytes | None]] = []
    for seq, (op, id_, row, v2, tombstone) in enumerate(events, 1):
        t = tables[1] if v2 else tables[0]
        row = {k: v for k, v in row.items() if k in t.columns}
        if row.get("at") is not None:
            row["at"] = datetime.datetime.fromtimestamp(row["at"] / 1000, datetime.UTC)
        key, value = t.event(op, id_, None if op == "d" else row, seq)
        out.append((key, value))
        if op == "d" and tombstone:
            out.append((key, None))
    return out


def _flat(batches: list[pa.RecordBatch]) -> pa.Table:
    decoded = pa.Table.from_batches(batches)
    assert decoded["__error"].null_count == decoded.num_rows, decoded["__error"].drop_null().to_pylist()
    marks = zip(decoded["schema_id"].to_pylist(), decoded["value_schema"].to_pylist(), strict=True)
    flat = flatten(TOPIC, decoded, {sid: text for sid, text in marks if text}).table
    flat = flat.take(pa.compute.sort_indices(flat, [("id", "ascending")]))
    at = flat.schema.get_field_index("ratio")  # NaN is not equal to itself: compare the floats as text
    return flat if at < 0 else flat.set_column(at, "ratio", flat.column("ratio").cast(pa.string()))


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(_EVENT, min_size=1, max_size=30), st.integers(0, 1 << 30))
def test_avro_batches_decode_and_flatten_like_their_json_twins(events: list[tuple], scope: int) -> None:
    j1, j2, a1, a2, lookup = _avro_tables(f"twins{scope}")
    json_batch, avro_batch = _raw(_rows(events, (j1, j2)), TOPIC), _raw(_rows(events, (a1, a2)), TOPIC)
    want = _flat(list(decode_batches(iter([json_batch]), JsonDeserializer(), combine=True)))
    got = _flat(list(decode_avro_batches(iter([avro_batch]), lookup, combine=True)))
    assert got.equals(want), (got.to_pylist(), want.to_pylist())
    assert len(lookup.asked) <= 2  # keys, then values: each id resolved once per batch, not per record
    # without latestPerKey every event comes out, in the JSON path's order and with its __seq
    every = pa.Table.from_batches(list(decode_avro_batches(iter([avro_batch]), lookup)))
    json_every = pa.Table.from_batches(list(decode_batches(iter([json_batch]), JsonDeserializer())))
    assert every.select(["offset", "key", "__op", "__seq"]).equals(
        json_every.select(["offset", "key", "__op", "__seq"])
    )


def test_records_that_are_not_avro_or_of_an_unknown_schema_are_named() -> None:
    _, _, a1, _, lookup = _avro_tables("poison")
    good = [a1.event("c", i, {"name": f"n{i}", "price": decimal.Decimal("1.25")}, i) for i in range(1, 4)]
    key, value = good[0]
    unknown = value[:1] + (999).to_bytes(4, "big") + value[5:]
    truncated = value[: len(value) - 3]
    records = [good[0], (key, b'{"op":"c"}'), good[1], (key, unknown), (key, truncated), good[2], (key, b"{}")]
    out = pa.Table.from_batches(list(decode_avro_batches(iter([_raw(records, TOPIC)]), lookup)))
    errors = {r["offset"]: r["__error"] for r in out.to_pylist() if r["__error"]}
    assert set(errors) == {1, 3, 4, 6}
    assert f"{TOPIC}-0@6: the record value is not Confluent Avro" in errors[6] and "first bytes: 7b 7d," in errors[6]
    assert f"{TOPIC}-0@1: the record value is not Confluent Avro" in errors[1] and "7b 22 6f 70" in errors[1]
    assert f"{TOPIC}-0@3: schema id 999 of the record value is unknown to the Schema Registry at mock://" in errors[3]
    assert f"{TOPIC}-0@4: the record value does not decode with its schema id" in errors[4]
    assert sorted(r["offset"] for r in out.to_pylist() if r["__error"] is None) == [0, 2, 5]


def test_bulk_body_reading_equals_fastavros_per_record_reader() -> None:
    _, _, a1, _, lookup = _avro_tables("bulk")
    records = [a1.event("u", i, {"name": "é" * i, "blob": bytes(range(i))}, i) for i in range(50)]
    transcoder = AvroToJson(lookup)
    transcoder.transcode(_raw(records, TOPIC))
    schema = next(s for s in transcoder._known.values() if "Envelope" in s.codec_text)
    bodies = pa.array([v[5:] for _, v in records], pa.binary())
    parsed = fastavro.parse_schema(__import__("json").loads(schema.codec_text))
    singly = [fastavro.schemaless_reader(io.BytesIO(b), parsed, None) for b in bodies.to_pylist()]
    assert read_bodies(schema.codec_text, bodies) == singly
    assert read_bodies(schema.codec_text, bodies.slice(10, 5)) == singly[10:15]


def test_plain_payloads_are_recognised_and_the_rest_goes_the_exact_way() -> None:
    from cdc.converters.avro.avro_data import AvroData
    from cdc_spark.decode.avro_json import PlainPayloads

    _, _, a1, _, _ = _avro_tables("plain")
    envelope = __import__("json").loads(AvroData().writer(a1.envelope).text)
    plan = PlainPayloads(envelope)
    assert plan.plain and plan.floats == [("before", "ratio"), ("after", "ratio")]  # `after` names `before`'s type
    assert not plan.finite([{"before": None, "after": {"ratio": float("nan")}}])
    assert plan.finite([{"before": {"ratio": 1.5}, "after": None}])
    int_keys = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build()
    assert not PlainPayloads(__import__("json").loads(AvroData().writer(int_keys).text)).plain  # MapEntry array
    floats = SchemaBuilder.array(Schema.FLOAT64_SCHEMA).build()
    assert not PlainPayloads(__import__("json").loads(AvroData().writer(floats).text)).plain


def test_the_sinks_registry_settings_and_an_unreachable_registry_are_one_line() -> None:
    from cdc_spark.decode.avro import EmbeddedSchemas, UrlSchemas, schema_lookup
    from cdc_spark.source.options import SourceOptionError, SourceOptions

    with pytest.raises(SourceOptionError, match="decode=debezium-avro with transport=kafka needs the option schema"):
        SourceOptions.parse(
            {"transport": "kafka", "bootstrap.servers": "h:9", "topics": "t", "decode": "debezium-avro"}
        )
    opts = SourceOptions.parse(
        {"state.dir": "/s", "topics": "t", "decode": "debezium-avro", "schema.registry.ssl.ca.location": "/ca.pem"}
    )
    assert opts.registry == {"schema.registry.ssl.ca.location": "/ca.pem"}
    assert isinstance(schema_lookup(opts.transport, opts.state_dir, dict(opts.registry)), EmbeddedSchemas)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once the socket is closed
    lookup = schema_lookup("kafka", None, {"schema.registry.url": url})
    assert isinstance(lookup, UrlSchemas)
    with pytest.raises(RuntimeError) as e:
        lookup.texts({1})
    assert f"the Schema Registry at {url} is unreachable" in str(e.value) and "\n" not in str(e.value)

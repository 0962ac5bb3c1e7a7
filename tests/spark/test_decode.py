"""Decoding without Spark: sequences order like ARCHITECTURE.md says, poison is named, rows are typed."""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api.data import Decimal, Schema
from cdc_spark.decode import JsonDeserializer, decode_one, flatten, sequence
from tests.spark.events import Table
from tests.support.examples import examples


def test_mysql_sequence_orders_by_file_then_pos_then_event_then_row() -> None:
    ordered = [
        sequence.mysql("mysql-bin.000001", 900, 0, 5),
        sequence.mysql("mysql-bin.000002", 4, 0, 0),
        sequence.mysql("mysql-bin.000002", 4, 0, 1),
        sequence.mysql("mysql-bin.000002", 4, 1, 0),
        sequence.mysql("mysql-bin.000002", 120, 0, 0),
        sequence.mysql("mysql-bin.000010", 4, 0, 0),
    ]
    assert sorted(ordered) == ordered
    assert all(len(s) == sequence.WIDTH for s in ordered)
    assert sequence.unpack(ordered[3]) == (2, 4, 1, 0)


def test_postgres_sequence_orders_by_commit_lsn_then_lsn() -> None:
    a = sequence.from_source({"lsn": 500, "sequence": '["400","500"]'})
    b = sequence.from_source({"lsn": 300, "sequence": '["450","300"]'})  # later commit, earlier change LSN
    c = sequence.from_source({"lsn": 460, "sequence": '["450","460"]'})
    snapshot = sequence.from_source({"lsn": 100, "snapshot": "true"})
    assert snapshot < a < b < c
    assert sequence.from_source({"lsn": "0/1F4"}) == sequence.postgres(None, 500)  # a read: (500, 0)


def test_source_without_position_is_refused() -> None:
    with pytest.raises(sequence.SequenceError, match="neither a MySQL position"):
        sequence.from_source({"connector": "x"})


@pytest.mark.parametrize("schemas", [True, False])
def test_decode_and_flatten_with_and_without_schemas(schemas: bool) -> None:
    t = Table("p.db.t", schemas_enable=schemas)
    des = JsonDeserializer()
    key, value = t.event("u", 7, {"name": "x", "qty": 3}, 42)
    key_text, op, seq, ts, deleted, err = decode_one(des, t.topic, key, value)
    assert (key_text, op, deleted, err) == ('{"id":7}', "u", False, None)
    assert sequence.unpack(seq) == (1, 42, 0, 0) and ts == 1_700_000_000_042
    _, dvalue = t.event("d", 8, None, 43)
    winners = pa.table(
        {
            "key": ['{"id":7}', '{"id":8}'],
            "value": [value, dvalue],
            "__op": ["u", "d"],
            "__seq": [seq, sequence.mysql("b.1", 43)],
            "__source_ts_ms": pa.array([ts, ts], pa.int64()),
            "__deleted": [False, True],
        }
    )
    flat = flatten("p.db.t", winners)
    assert flat.key_columns == ["id"]
    rows = flat.table.to_pylist()
    assert rows[0]["id"] == 7 and rows[0]["name"] == "x" and rows[0]["qty"] == 3
    assert rows[1]["id"] == 8 and rows[1]["__deleted"] is True
    assert flat.table.schema.field("id").type == (pa.int32() if schemas else pa.int64())


def test_logical_types_become_arrow_types() -> None:
    t = Table(
        "p.db.typed",
        {
            "id": Schema.INT32_SCHEMA,
            "price": Decimal.builder(2).optional().parameter("connect.decimal.precision", "10").build(),
            "blob": Schema.OPTIONAL_BYTES_SCHEMA,
        },
    )
    _, value = t.event("c", 1, {"price": decimal.Decimal("12.34"), "blob": b"\x00\xff"}, 5)
    flat = flatten(
        "p.db.typed",
        pa.table(
            {
                "key": ['{"id":1}'],
                "value": [value],
                "__op": ["c"],
                "__seq": [b"\x01"],
                "__source_ts_ms": pa.array([1], pa.int64()),
                "__deleted": [False],
            }
        ),
    )
    assert flat.table.schema.field("price").type == pa.decimal128(10, 2)
    assert flat.table.to_pylist()[0]["price"] == decimal.Decimal("12.34")
    assert flat.table.to_pylist()[0]["blob"] == b"\x00\xff"
    assert datetime.date(1970, 1, 1)  # date conversion covered by types.arrow_type


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        (b'{"id":1}', b'{"op": "c", "after": {', "malformed JSON"),
        (
            None,
            json.dumps({"op": "c", "after": {"id": 1}, "source": {"file": "b.1", "pos": 4}}).encode(),
            "without a record key",
        ),
        (
            b'{"id":1}',
            json.dumps({"op": "x", "after": {"id": 1}, "source": {"file": "b.1", "pos": 4}}).encode(),
            "unknown op 'x'",
        ),
        (b'{"id":1}', b'{"hello": 1}', "not a Debezium change event"),
    ],
)
def test_poison_events_are_named(key: bytes | None, value: bytes, needle: str) -> None:
    out = decode_one(JsonDeserializer(), "p.db.t", key, value)
    assert out is not None and out[-1] is not None and needle in out[-1]


def test_kafka_tombstones_and_messages_are_not_changes() -> None:
    des = JsonDeserializer()
    assert decode_one(des, "t", b'{"id":1}', None) is None
    assert decode_one(des, "t", None, b'{"op":"m","source":{"lsn":1}}') is None


def test_keep_latest_is_a_per_key_combiner() -> None:
    from cdc_spark.decode.events import DECODED_ARROW, keep_latest

    def row(key: str | None, seq: int, offset: int, err: str | None = None) -> dict:
        return {
            "topic": "t",
            "partition": 0,
            "offset": offset,
            "raw_key": None,
            "key": key,
            "value": b"",
            "__op": "u",
            "__seq": sequence.pack(seq),
            "__source_ts_ms": 0,
            "__deleted": False,
            "__error": err,
        }

    rows = [row("a", 1, 0), row("b", 5, 1), row("a", 3, 2), row(None, 0, 3, "bad"), row("a", 3, 4), row("b", 2, 5)]
    out = keep_latest(pa.Table.from_pylist(rows, schema=DECODED_ARROW)).to_pylist()
    assert sorted((r["key"] or "", r["offset"]) for r in out) == [("", 3), ("a", 4), ("b", 1)]


def _raw(records: list[tuple[bytes | None, bytes | None]], topic: str = "p.db.t") -> pa.RecordBatch:
    from cdc_spark.source.reader import ARROW_SCHEMA

    n = len(records)
    cols = [[topic] * n, [0] * n, list(range(n)), [k for k, _ in records], [v for _, v in records], [0] * n]
    arrays = [pa.array(c, f.type) for c, f in zip(cols, ARROW_SCHEMA, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


@pytest.mark.parametrize("schemas", [True, False])
def test_arrow_decoding_equals_the_record_by_record_path(schemas: bool) -> None:
    from cdc_spark.decode.events import _decode_rows, fast_decode

    t = Table("p.db.t", schemas_enable=schemas)
    records = [t.event("c", i, {"name": f"n{i}", "qty": i}, 10 + i) for i in range(5)]
    records += [t.event("d", 2, None, 30), (b'{"id":9}', None), t.event("u", 1, {"name": "x"}, 31)]
    pg = {"lsn": 500, "sequence": '["450","500"]', "ts_ms": 1}
    pg_events = [(b'{"id":1}', json.dumps({"op": "u", "after": {"id": 1}, "source": pg}).encode())]
    for batch in (_raw(records), _raw(pg_events)):
        fast = fast_decode(batch, None)
        assert fast is not None and fast.equals(_decode_rows(batch, JsonDeserializer()))
    # One poison record sends the whole batch down the path that names it.
    assert fast_decode(_raw([*records, (b'{"id":1}', b'{"op":')]), None) is None


def test_arrow_flattening_equals_the_row_path_across_schema_versions() -> None:
    from cdc_spark.decode.columns import flatten_enveloped
    from cdc_spark.decode.flatten import flatten_rows

    cols = {
        "id": Schema.INT32_SCHEMA,
        "price": Decimal.builder(2).optional().parameter("connect.decimal.precision", "10").build(),
        "blob": Schema.OPTIONAL_BYTES_SCHEMA,
    }
    v1, v2 = Table("p.db.t", cols), Table("p.db.t", {**cols, "note": Schema.OPTIONAL_STRING_SCHEMA})
    events = [
        v1.event("c", 1, {"price": decimal.Decimal("1.50"), "blob": b"\x00"}, 1),
        v2.event("u", 2, {"price": None, "blob": None, "note": "n"}, 2),
        v1.event("d", 3, None, 3),
    ]
    winners = pa.table(
        {
            "key": ['{"id":1}', '{"id":2}', '{"id":3}'],
            "value": [v for _, v in events],
            "__op": ["c", "u", "d"],
            "__seq": [sequence.pack(i) for i in (1, 2, 3)],
            "__source_ts_ms": pa.array([1, 2, 3], pa.int64()),
            "__deleted": [False, False, True],
        }
    )
    fast = flatten_enveloped("p.db.t", winners)
    assert fast is not None and fast.table.equals(flatten_rows("p.db.t", winners).table)
    assert fast.table.column("note").to_pylist() == [None, "n", None]


def test_cut_off_payloads_flatten_like_their_whole_envelopes() -> None:
    """The source ships payloads with a schema id (latestPerKey); the driver flattens them
    without putting the envelopes back, and must get what the whole records give."""
    from cdc_spark.decode.events import decode_batches
    from cdc_spark.decode.schemas import restore

    cols = {"id": Schema.INT32_SCHEMA, "qty": Schema.OPTIONAL_INT64_SCHEMA}
    v1, v2 = Table("p.db.t", cols), Table("p.db.t", {**cols, "note": Schema.OPTIONAL_STRING_SCHEMA})
    first = [v1.event("c", 1, {"qty": 1}, 1), v1.event("c", 2, {"qty": 2}, 2), v1.event("d", 1, None, 5)]
    second = [v2.event("u", 2, {"qty": 3, "note": "n"}, 3), v2.event("c", 3, {"qty": 4, "note": None}, 4)]
    raw = iter([_raw(first), _raw(second)])  # one schema per source batch: each is cut off in Arrow
    decoded = pa.Table.from_batches(list(decode_batches(raw, JsonDeserializer(), combine=True)))
    ids, marks = decoded["schema_id"].to_pylist(), decoded["value_schema"].to_pylist()
    texts = {sid: text for sid, text in zip(ids, marks, strict=True) if text}
    assert len(set(ids)) == 2 and len(texts) == 2  # both versions were cut off
    whole = flatten("p.db.t", restore(decoded, texts))
    cut = flatten("p.db.t", decoded, texts)
    assert cut.table.equals(whole.table) and cut.key_columns == ["id"]
    assert sorted(cut.table.select(["id", "qty", "note", "__deleted"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "qty": None, "note": None, "__deleted": True},
        {"id": 2, "qty": 3, "note": "n", "__deleted": False},
        {"id": 3, "qty": 4, "note": None, "__deleted": False},
    ]
    with pytest.raises(RuntimeError, match="was not collected with its batch"):
        flatten("p.db.t", decoded, {})  # a schema id nobody collected is an error, not a guess


def test_a_batch_spanning_schema_changes_is_read_in_arrow_run_by_run() -> None:
    """A DDL mid-batch gives two envelope prefixes: each run is still cut off in Arrow, and
    a poison record sends only itself and what follows it down the per-record path."""
    from cdc_spark.decode import fast
    from cdc_spark.decode.events import _decode_rows, decode_batches

    cols = {"id": Schema.INT32_SCHEMA, "qty": Schema.OPTIONAL_INT64_SCHEMA}
    v1, v2 = Table("p.db.t", cols), Table("p.db.t", {**cols, "note": Schema.OPTIONAL_STRING_SCHEMA})
    records = [v1.event("c", i, {"qty": i}, i) for i in range(1, 4)]
    records += [v2.event("u", 2, {"qty": 20, "note": "n"}, 4), (b'{"id":3}', None)]
    records += [v1.event("u", 1, {"qty": 10}, 5), v2.event("c", 4, {"qty": 4, "note": None}, 6)]
    values = _raw(records).column("value")
    assert fast.envelope_runs(values) == [(0, 3), (3, 5), (5, 6), (6, 7)]
    assert fast.envelope_runs(values, limit=2) == [(0, 3), (3, 7)]

    decoded = pa.Table.from_batches(list(decode_batches(iter([_raw(records)]), JsonDeserializer(), combine=True)))
    assert decoded["schema_id"].null_count == 0 and len(set(decoded["schema_id"].to_pylist())) == 2
    by_offset = {r["offset"]: (r["key"], r["__op"]) for r in decoded.select(["offset", "key", "__op"]).to_pylist()}
    assert by_offset == {2: ('{"id":3}', "c"), 3: ('{"id":2}', "u"), 5: ('{"id":1}', "u"), 6: ('{"id":4}', "c")}
    marks = zip(decoded["schema_id"].to_pylist(), decoded["value_schema"].to_pylist(), strict=True)
    cut = flatten("p.db.t", decoded, {sid: text for sid, text in marks if text})
    assert sorted(cut.table.select(["id", "qty", "note"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "qty": 10, "note": None},
        {"id": 2, "qty": 20, "note": "n"},
        {"id": 3, "qty": 3, "note": None},
        {"id": 4, "qty": 4, "note": None},
    ]

    poisoned = [*records[:3], (b'{"id":9}', b'{"op":'), *records[5:]]
    assert fast.envelope_runs(_raw(poisoned).column("value")) == [(0, 3), (3, 6)]
    parts = list(decode_batches(iter([_raw(poisoned)]), JsonDeserializer()))
    assert [p.num_rows for p in parts] == [3, 3]
    assert parts[1].equals(_decode_rows(_raw(poisoned).slice(3), JsonDeserializer()))
    assert parts[1].column("__error").to_pylist()[0] is not None


def test_latest_rows_reduces_across_partitions_and_skips_unique_keys() -> None:
    from cdc_spark.apply.latest import latest_rows

    def rows(*spec: tuple[str, str, int, int]) -> pa.Table:
        return pa.table(
            {
                "topic": [t for t, _, _, _ in spec],
                "key": [k for _, k, _, _ in spec],
                "__seq": [sequence.pack(s) for _, _, s, _ in spec],
                "offset": pa.array([o for _, _, _, o in spec], pa.int64()),
            }
        )

    # The same key text in two topics is two keys; within one, the highest sequence wins,
    # then the later offset (an exact replay); a truncate drops what came before it.
    got = latest_rows(
        rows(("a", "k1", 5, 0), ("b", "k1", 1, 1), ("a", "k1", 7, 2), ("a", "k2", 3, 3), ("a", "k2", 3, 9)),
        {"b": sequence.pack(2)},
    )
    assert sorted((r["topic"], r["key"], r["offset"]) for r in got.to_pylist()) == [("a", "k1", 2), ("a", "k2", 9)]
    unique = rows(("a", "k2", 1, 0), ("a", "k1", 2, 1), ("b", "k2", 3, 2))
    assert latest_rows(unique, {}).equals(unique)  # nothing to reduce: kept as collected


def test_decimals_wider_than_28_digits_reach_the_lake_unrounded() -> None:
    """Decimal arithmetic rounds to 28 digits by default: NUMERIC(60,3) and DECIMAL(65,30)
    values lost their last digits on the way to the lake (found by cdc verify)."""
    from cdc_spark.decode.columns import flatten_enveloped
    from cdc_spark.decode.flatten import flatten_rows

    wide = decimal.Decimal("12345678901234567890123456789012345678.123")
    t = Table(
        "p.db.wide",
        {
            "id": Schema.INT32_SCHEMA,
            "big": Decimal.builder(3).optional().parameter("connect.decimal.precision", "60").build(),
        },
    )
    _, value = t.event("c", 1, {"big": wide}, 5)
    winners = pa.table(
        {
            "key": ['{"id":1}'],
            "value": [value],
            "__op": ["c"],
            "__seq": [b"\x01"],
            "__source_ts_ms": pa.array([1], pa.int64()),
            "__deleted": [False],
        }
    )
    for flat in (
        flatten("p.db.wide", winners),
        flatten_rows("p.db.wide", winners),
        flatten_enveloped("p.db.wide", winners),
    ):
        assert flat is not None
        got = flat.table.to_pylist()[0]["big"]
        assert decimal.Decimal(got) == wide and str(got) == str(wide), got


def test_nan_and_infinities_flatten_to_floats() -> None:
    """JsonConverter writes them as the strings "NaN" / "Infinity" / "-Infinity" (as Kafka's);
    a REAL column holding NaN stopped the sink."""
    import math

    t = Table(
        "p.db.f", {"id": Schema.INT32_SCHEMA, "r": Schema.OPTIONAL_FLOAT32_SCHEMA, "d": Schema.OPTIONAL_FLOAT64_SCHEMA}
    )
    rows = [
        t.event("c", 1, {"r": float("nan"), "d": float("-inf")}, 5),
        t.event("c", 2, {"r": 1.5, "d": float("inf")}, 6),
    ]
    winners = pa.table(
        {
            "key": ['{"id":1}', '{"id":2}'],
            "value": [v for _, v in rows],
            "__op": ["c", "c"],
            "__seq": [b"\x01", b"\x02"],
            "__source_ts_ms": pa.array([1, 2], pa.int64()),
            "__deleted": [False, False],
        }
    )
    out = flatten("p.db.f", winners).table.select(["r", "d"]).to_pylist()
    assert math.isnan(out[0]["r"]) and out[0]["d"] == -math.inf
    assert out[1] == {"r": 1.5, "d": math.inf}


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.floats(width=32, allow_nan=False, allow_infinity=False)),
            st.one_of(
                st.none(), st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**53), 2**53).map(float)
            ),
        ),
        min_size=1,
        max_size=30,
    ),
    st.booleans(),
)
def test_float_columns_take_the_arrow_path_and_equal_the_row_path(values: list, non_finite: bool) -> None:
    """FLOAT/DOUBLE columns are read in Arrow (a table with one was flattened row by row, ~85 µs a row on the
    driver, the lake's delay during incremental snapshots). Finite values, whole numbers, NULLs and extremes:
    the same table as the row path. A NaN or infinity (JsonConverter's strings) makes the batch
    take the row path, which gives them as floats."""
    import math

    from cdc_spark.decode.columns import flatten_enveloped
    from cdc_spark.decode.flatten import flatten_rows

    t = Table(
        "p.db.f", {"id": Schema.INT32_SCHEMA, "r": Schema.OPTIONAL_FLOAT32_SCHEMA, "d": Schema.OPTIONAL_FLOAT64_SCHEMA}
    )
    rows = [t.event("c", i, {"r": r, "d": d}, i) for i, (r, d) in enumerate(values)]
    if non_finite:
        rows.append(t.event("c", len(values), {"r": float("nan"), "d": float("-inf")}, len(values)))
    n = len(rows)
    winners = pa.table(
        {
            "key": [f'{{"id":{i}}}' for i in range(n)],
            "value": [v for _, v in rows],
            "__op": ["c"] * n,
            "__seq": [sequence.pack(i + 1) for i in range(n)],
            "__source_ts_ms": pa.array(range(n), pa.int64()),
            "__deleted": [False] * n,
        }
    )
    fast = flatten_enveloped("p.db.f", winners)
    slow = flatten_rows("p.db.f", winners).table
    if non_finite:
        assert fast is None
        last = slow.to_pylist()[-1]
        assert math.isnan(last["r"]) and last["d"] == -math.inf
        return
    assert fast is not None and fast.table.equals(slow), (fast.table.to_pylist() if fast else None, slow.to_pylist())

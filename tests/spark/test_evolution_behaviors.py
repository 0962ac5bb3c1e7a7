"""schema.change.behavior (Flink CDC's five values) as `conform` decides it: per behavior, what a
new column, a dropped column, a lossless widening and an incompatible type change do to the
rows written and to the table's schema (no Spark, no lake: the targets' own tests apply it)."""

from __future__ import annotations

import datetime
import decimal
import random

import pyarrow as pa
import pytest

from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.errors import SchemaChangeRefusedError, SchemaEvolutionError, SinkConfigError
from cdc_spark.apply.evolution import (
    BEHAVIORS,
    EVOLVE,
    EXCEPTION,
    IGNORE,
    LENIENT,
    TRY_EVOLVE,
    SchemaChange,
    conform,
    is_widening,
    widens,
)
from cdc_spark.apply.table_options import TableOptionError, TableOptions
from cdc_spark.decode.types import DEFAULT, default_of, field_metadata

EXISTING = pa.schema([("id", pa.int32()), ("name", pa.string()), ("qty", pa.int32()), ("__seq", pa.binary())])


def _rows(**columns: pa.Array) -> pa.Table:
    return pa.table({**columns, "__seq": pa.array([b"\x01"] * len(next(iter(columns.values()))), pa.binary())})


def test_lenient_adds_keeps_dropped_and_widens() -> None:
    rows = _rows(id=pa.array([1], pa.int64()), name=pa.array(["a"]), color=pa.array(["red"]))  # qty dropped
    out, change = conform("t", EXISTING, rows, LENIENT)
    assert change.added == (pa.field("color", pa.string()),)
    assert change.retyped == (pa.field("id", pa.int64()),) and change.dropped == ()
    assert out.column_names == ["id", "name", "qty", "__seq", "color"]
    assert out.column("qty").to_pylist() == [None] and out.schema.field("id").type == pa.int64()
    assert change.schema_after(EXISTING).names == out.column_names


def test_lenient_refuses_an_incompatible_type_and_names_the_behaviors_that_accept_it() -> None:
    rows = _rows(id=pa.array([1], pa.int32()), name=pa.array([5], pa.int64()), qty=pa.array([1], pa.int32()))
    with pytest.raises(SchemaEvolutionError, match=r"column 'name' changed type from string to int64.*evolve"):
        conform("t", EXISTING, rows, LENIENT)


def test_exception_refuses_every_change_and_names_the_policy_that_accepts_it() -> None:
    base = {"id": pa.array([1], pa.int32()), "name": pa.array(["a"]), "qty": pa.array([1], pa.int32())}
    out, change = conform("t", EXISTING, _rows(**base), EXCEPTION)  # no change: fine
    assert not change and out.num_rows == 1
    cases = [
        ({**base, "color": pa.array(["r"])}, r"new column 'color'.*behavior=exception.*lenient"),
        ({k: v for k, v in base.items() if k != "qty"}, r"column 'qty' \(int32\) dropped.*lenient"),
        ({**base, "qty": pa.array([1], pa.int64())}, r"'qty' changed type from int32 to int64.*to lenient"),
        ({**base, "qty": pa.array(["x"])}, r"'qty' changed type from int32 to string.*to evolve"),
    ]
    for columns, message in cases:
        with pytest.raises(SchemaChangeRefusedError, match=message):
            conform("shop_items", EXISTING, _rows(**columns), EXCEPTION)


def test_ignore_keeps_the_schema_and_refuses_a_value_that_does_not_fit() -> None:
    rows = _rows(id=pa.array([1], pa.int64()), name=pa.array(["a"]), color=pa.array(["red"]))
    out, change = conform("t", EXISTING, rows, IGNORE)
    assert not change and out.schema == pa.schema([f for f in EXISTING])
    big = _rows(id=pa.array([3_000_000_000], pa.int64()), name=pa.array(["a"]), qty=pa.array([1], pa.int32()))
    with pytest.raises(SchemaChangeRefusedError, match=r"behavior=ignore keeps int32, and the value 3000000000"):
        conform("t", EXISTING, big, IGNORE)


def test_evolve_drops_and_retypes_incompatibly() -> None:
    rows = _rows(id=pa.array([1], pa.int32()), name=pa.array([7], pa.int64()))  # qty dropped, name → bigint
    out, change = conform("t", EXISTING, rows, EVOLVE)
    assert change.dropped == ("qty",) and change.retyped == (pa.field("name", pa.int64()),)
    assert out.column_names == ["id", "name", "__seq"] and change.rewrites


def test_try_evolve_keeps_the_old_type_of_an_incompatible_change_and_converts() -> None:
    rows = _rows(id=pa.array([1, 2], pa.int32()), name=pa.array(["a", "b"]), qty=pa.array(["5", "five"]))
    out, change = conform("t", EXISTING, rows, TRY_EVOLVE)
    assert not change.retyped and out.column("qty").to_pylist() == [5, None]
    widened = _rows(id=pa.array([1], pa.int64()), name=pa.array(["a"]), qty=pa.array([1], pa.int32()))
    assert conform("t", EXISTING, widened, TRY_EVOLVE)[1].retyped == (pa.field("id", pa.int64()),)


def test_meta_columns_are_never_a_schema_change() -> None:
    existing = pa.schema([*EXISTING, pa.field("__deleted", pa.bool_())])
    rows = _rows(id=pa.array([1], pa.int32()), name=pa.array(["a"]), qty=pa.array([1], pa.int32()))
    for behavior in BEHAVIORS:
        out, change = conform("t", existing, rows, behavior)
        assert not change.dropped and out.column("__deleted").to_pylist() == [None]


def test_a_new_table_takes_every_column_under_every_behavior() -> None:
    rows = _rows(id=pa.array([1], pa.int32()), name=pa.array(["a"]))
    for behavior in BEHAVIORS:
        out, change = conform("t", pa.schema([]), rows, behavior)
        assert [f.name for f in change.added] == ["id", "name", "__seq"] and out.num_rows == 1


# The source's type lattices (MySQL and PostgreSQL as Debezium maps them): each widening holds
# every value of the old type, so lenient retypes it; each narrowing is refused.
_SAMPLES = {
    pa.int8(): [-128, 127],
    pa.int16(): [-32768, 32767],
    pa.int32(): [-(2**31), 2**31 - 1],
    pa.int64(): [-(2**63), 2**63 - 1],
    pa.float32(): [1.5, -2.25],
    pa.float64(): [1.5e300],
    pa.decimal128(10, 2): [decimal.Decimal("-99999999.99"), decimal.Decimal("12.34")],
    pa.decimal128(12, 2): [decimal.Decimal("9999999999.99")],
    pa.decimal128(12, 4): [decimal.Decimal("99999999.9999")],
    pa.decimal128(20, 0): [decimal.Decimal(2**64 - 1)],
    pa.date32(): [datetime.date(1, 1, 1), datetime.date(9999, 12, 31)],
    pa.timestamp("ms"): [datetime.datetime(2024, 1, 1, 12, 0, 0)],
}


def test_every_widening_holds_every_old_value_and_every_narrowing_is_refused() -> None:
    for old, values in _SAMPLES.items():
        for new in _SAMPLES:
            if old == new or not is_widening(old, new):
                continue
            assert pa.array(values, old).cast(new).cast(old).to_pylist() == values, (old, new)
            existing = pa.schema([("c", old)])
            _, change = conform("t", existing, pa.table({"c": pa.array(values, old).cast(new)}), LENIENT)
            assert change.retyped == (pa.field("c", new),)


def test_a_change_that_is_neither_a_widening_nor_fits_is_refused_under_lenient() -> None:
    for old in _SAMPLES:
        for new in _SAMPLES:
            if widens(old, new) or is_widening(old, new):
                continue
            with pytest.raises(SchemaEvolutionError, match=r"changed type"):
                conform("t", pa.schema([("c", old)]), pa.table({"c": pa.array(_SAMPLES[new], new)}), LENIENT)


def test_random_schema_sequences_keep_each_behaviors_promise() -> None:
    """Seeded: random columns added, dropped, widened and changed incompatibly; after each step
    the rows conform to the table's schema after the change, and only the behavior's changes
    happen (lenient never drops, ignore never changes the schema, exception never passes one)."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    for _ in range(200):
        behavior = rng.choice(BEHAVIORS)
        existing = pa.schema(
            [("id", pa.int32()), *[(f"c{i}", rng.choice([pa.int32(), pa.string()])) for i in range(4)]]
        )
        columns: dict[str, pa.Array] = {"id": pa.array([1, 2], pa.int32())}
        for f in existing:
            if f.name == "id":
                continue
            move = rng.choice(["same", "same", "drop", "widen", "other"])
            if move == "drop":
                continue
            if move == "widen" and f.type == pa.int32():
                columns[f.name] = pa.array([1, None], pa.int64())
            elif move == "other":
                columns[f.name] = pa.array(["7", "x"]) if f.type == pa.int32() else pa.array([7, None], pa.int64())
            else:
                columns[f.name] = pa.array([1, None], f.type) if f.type == pa.int32() else pa.array(["a", None])
        if rng.random() < 0.3:
            columns["new"] = pa.array([True, None])
        rows = pa.table(columns)
        try:
            out, change = conform("t", existing, rows, behavior)
        except SchemaEvolutionError as e:  # SchemaChangeRefusedError too
            assert behavior in (EXCEPTION, LENIENT, IGNORE, EVOLVE) or "does not fit" in str(e), (seed, behavior, e)
            continue
        assert out.schema.names == change.schema_after(existing).names, (seed, behavior)
        assert out.num_rows == 2
        if behavior in (LENIENT, IGNORE):
            assert not change.dropped, (seed, behavior)
        if behavior == IGNORE:
            assert change == SchemaChange(), (seed, behavior)
        if behavior == EXCEPTION:
            assert not change, (seed, behavior)


def test_the_option_is_parsed_per_table_and_for_the_job() -> None:
    assert TableOptions.parse({"schema.change.behavior": "Evolve"}).schema_change_behavior == EVOLVE
    assert TableOptions.parse({}, schema_change_behavior=IGNORE).schema_change_behavior == IGNORE
    with pytest.raises(TableOptionError, match=r"schema.change.behavior: 'strict' is not a behavior; use one of"):
        TableOptions.parse({"schema.change.behavior": "strict"})
    config = SinkConfig.parse(
        {
            "target": "delta",
            "path": "/tmp/lake",
            "schema.change.behavior": "exception",
            "table.options": {"shop.inv.items": {"schema.change.behavior": "try_evolve"}},
        }
    )
    assert config.options_for("shop_inv_items").schema_change_behavior == TRY_EVOLVE
    assert config.options_for("other").schema_change_behavior == EXCEPTION
    with pytest.raises(SinkConfigError, match=r"schema.change.behavior: 'x' is not a behavior"):
        SinkConfig.parse({"target": "delta", "path": "/tmp/lake", "schema.change.behavior": "x"})


# -- a column added with a DEFAULT -------------------------------------------------------------------


def _with_default(name: str, values: pa.Array, default: bytes) -> tuple[pa.Field, pa.Array]:
    return pa.field(name, values.type, metadata={DEFAULT: default}), values


def _rows_with(*columns: tuple[pa.Field, pa.Array]) -> pa.Table:
    base = {"id": pa.array([1, 2], pa.int32()), "name": pa.array(["a", "b"]), "qty": pa.array([1, 2], pa.int32())}
    fields = [pa.field(k, v.type) for k, v in base.items()] + [f for f, _ in columns] + [pa.field("__seq", pa.binary())]
    arrays = [*base.values(), *[a for _, a in columns], pa.array([b"\x01", b"\x02"], pa.binary())]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def test_a_column_added_with_a_default_fills_the_stored_rows_and_the_batch_keeps_its_values() -> None:
    vip = _with_default("vip", pa.array([5, None], pa.int32()), b"0")
    since = _with_default("since", pa.array([None, None], pa.date32()), b'"2024-02-29"')
    price = _with_default("price", pa.array([None, None], pa.decimal128(10, 2)), b'"1.50"')
    note = pa.field("note", pa.string()), pa.array(["x", None])  # no default: NULL in the stored rows
    for behavior in (LENIENT, EVOLVE, TRY_EVOLVE):
        out, change = conform("t", EXISTING, _rows_with(vip, since, price, note), behavior)
        assert [f.name for f in change.added] == ["vip", "since", "price", "note"]
        assert all(not f.metadata for f in change.added) and all(not f.metadata for f in out.schema)
        assert dict(change.filled) == {
            "vip": pa.scalar(0, pa.int32()),
            "since": pa.scalar(datetime.date(2024, 2, 29), pa.date32()),
            "price": pa.scalar(decimal.Decimal("1.50"), pa.decimal128(10, 2)),
        }
        assert change.fill("note") is None and change.rewrites  # the stored rows are written again
        assert "added vip (int32) filled with 0" in change.describe()
        # The batch's rows keep the values their events have (NULL is a value too).
        assert out.column("vip").to_pylist() == [5, None] and out.column("note").to_pylist() == ["x", None]
    # A table created by this batch has no stored rows; meta columns are never filled.
    _, change = conform("t", pa.schema([]), _rows_with(vip), LENIENT)
    assert change.filled == () and not change.rewrites
    meta = _with_default("__op", pa.array(["c", "u"]), b'"r"')
    _, change = conform("t", EXISTING, _rows_with(meta), LENIENT)
    assert change.filled == () and not change.rewrites
    # ignore does not add the column at all; exception refuses it.
    _, change = conform("t", EXISTING, _rows_with(vip), IGNORE)
    assert change == SchemaChange()
    with pytest.raises(SchemaChangeRefusedError, match=r"new column 'vip'"):
        conform("t", EXISTING, _rows_with(vip), EXCEPTION)


def test_a_default_that_does_not_fit_the_column_is_not_written(caplog: pytest.LogCaptureFixture) -> None:
    bad = _with_default("vip", pa.array([1, 2], pa.int8()), b"1000")
    with caplog.at_level("WARNING"):
        _, change = conform("t", EXISTING, _rows_with(bad), LENIENT)
    assert change.filled == () and [f.name for f in change.added] == ["vip"]
    assert "the DEFAULT of the new column 'vip' does not convert to int8" in caplog.text


def test_the_default_travels_in_a_tasks_report_to_the_driver_but_never_to_a_tombstone_table() -> None:
    from cdc_spark.apply.lake_parallel import _reported_change

    vip = _with_default("vip", pa.array([5, None], pa.int64()), b"7")
    out, change = conform("t", EXISTING, _rows_with(vip), LENIENT)
    report = {"kind": "change", "schema": change.reported(out.schema).serialize().to_pybytes()}
    driver = _reported_change("t", EXISTING, [report])
    assert driver.added == (pa.field("vip", pa.int64()),) and not driver.added[0].metadata
    assert driver.filled == (("vip", pa.scalar(7, pa.int64())),) and driver.rewrites
    assert driver.schema_after(EXISTING).names == out.column_names
    assert _reported_change("t__tombstones", EXISTING, [report]).filled == ()


def test_the_decoder_keeps_a_fields_default_in_the_lakes_types() -> None:
    from cdc_spark.apply.arrowutil import for_lake, plain

    def meta(schema: dict[str, object]) -> dict[bytes, bytes]:
        return field_metadata(schema) or {}

    decimal_schema = {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "default": "BNI=",  # the unscaled 1234, base64, as JsonConverter writes it
    }
    assert meta(decimal_schema)[DEFAULT] == b'"12.34"'
    assert meta({"type": "int32", "default": 0})[DEFAULT] == b"0"
    assert meta({"type": "string", "default": ""})[DEFAULT] == b'""'
    assert meta({"type": "bytes", "default": "AP8="})[DEFAULT] == b'"AP8="'
    assert meta({"type": "int32", "name": "io.debezium.time.Date", "default": 19782})[DEFAULT] == b'"2024-02-29"'
    assert DEFAULT not in meta({"type": "int32"}) and DEFAULT not in meta({"type": "int32", "default": None})
    # Debezium's stand-ins for a value the database computes (CURRENT_TIMESTAMP, now(), gen_random_uuid()).
    zoned = {"type": "string", "name": "io.debezium.time.ZonedTimestamp", "default": "1970-01-01T00:00:00Z"}
    assert DEFAULT not in meta(zoned) and DEFAULT not in meta({**zoned, "default": "1970-01-01T00:00:00+00:00"})
    assert DEFAULT not in meta({"type": "int64", "name": "io.debezium.time.Timestamp", "default": 0})
    assert DEFAULT not in meta(
        {"type": "string", "name": "io.debezium.data.Uuid", "default": "0" * 8 + "-0000" * 3 + "-" + "0" * 12}
    )
    assert meta({**zoned, "default": "2024-03-01T10:30:00+02:00"})[DEFAULT] == b'"2024-03-01 08:30:00.000000Z"'
    # A millisecond timestamp becomes a microsecond one in the lakes: the default follows the cast.
    ms = {"type": "int64", "name": "io.debezium.time.Timestamp", "default": 1_709_289_000_123}
    table = pa.table({"at": pa.array([None], pa.timestamp("ms"))})
    table = table.cast(pa.schema([pa.field("at", pa.timestamp("ms"), metadata=meta(ms))]))
    lake = for_lake(table)
    assert lake.schema.field("at").type == pa.timestamp("us")
    assert default_of(lake.schema.field("at")) == pa.scalar(
        datetime.datetime(2024, 3, 1, 10, 30, 0, 123000), pa.timestamp("us")
    )
    assert not plain(lake.schema).field("at").metadata  # a lake table is created without it


def test_json_and_avro_events_carry_the_default_to_the_flattened_field() -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from cdc.api.data import Schema as ConnectSchema
    from cdc.api.data import SchemaBuilder
    from cdc.converters.avro import AvroConverter
    from cdc_spark.decode import JsonDeserializer, flatten
    from cdc_spark.decode.avro import decode_avro_batches
    from cdc_spark.decode.events import decode_batches
    from tests.spark.events import Table
    from tests.spark.test_avro_decode import MockLookup
    from tests.spark.test_decode import _raw

    columns = {
        "id": ConnectSchema.INT32_SCHEMA,
        "vip": SchemaBuilder.int32().optional().default_value(7).build(),
        "tier": SchemaBuilder.string().default_value("gold").build(),
    }
    json_table, avro_table = Table("p.db.t", columns), Table("p.db.t", columns)
    client = SchemaRegistryClient.new_client({"url": "mock://defaults"})
    for attr, is_key in (("keys", True), ("values", False)):
        conv = AvroConverter()
        conv.use_registry(client)
        conv.configure({}, is_key)
        setattr(avro_table, attr, conv)
    json_batch = _raw([json_table.event("c", 1, {"vip": 1, "tier": "x"}, 1)])
    avro_batch = _raw([avro_table.event("c", 1, {"vip": 1, "tier": "x"}, 1)])
    for decoded in (
        list(decode_batches(iter([json_batch]), JsonDeserializer(), combine=True)),
        list(decode_avro_batches(iter([avro_batch]), MockLookup(client), combine=True)),
    ):
        rows = pa.Table.from_batches(decoded)
        marks = zip(rows["schema_id"].to_pylist(), rows["value_schema"].to_pylist(), strict=True)
        flat = flatten("p.db.t", rows, {sid: text for sid, text in marks if text}).table
        assert default_of(flat.schema.field("vip")) == pa.scalar(7, pa.int32())
        assert default_of(flat.schema.field("tier")) == pa.scalar("gold")
        assert default_of(flat.schema.field("id")) is None
        assert flat.column("vip").to_pylist() == [1]


# -- a time-of-day whose precision changes (PostgreSQL TIME(3) ↔ TIME(6), adaptive precision) -----
def _time(values: list[int | None], unit: bytes) -> tuple[pa.Field, pa.Array]:
    from cdc_spark.decode.types import TIME_UNIT

    t = pa.int32() if unit == b"ms" else pa.int64()
    return pa.field("t", t, metadata={TIME_UNIT: unit}), pa.array(values, t)


def test_a_finer_time_unit_retypes_and_scales_the_stored_values() -> None:
    field, values = _time([45_296_123_456], b"us")  # 12:34:56.123456
    rows = pa.Table.from_arrays([values], schema=pa.schema([field]))
    out, change = conform("t", pa.schema([("t", pa.int32())]), rows, LENIENT)
    assert change.retyped[0].type == pa.int64() and change.scale("t") == 1000 and change.rewrites
    assert out.column("t").to_pylist() == [45_296_123_456]
    with pytest.raises(SchemaChangeRefusedError, match=r"'t' changed type from int32 \(ms\) to int64 \(us\)"):
        conform("t", pa.schema([("t", pa.int32())]), rows, EXCEPTION)
    # ignore keeps milliseconds: an exact value goes in, a finer one is refused
    exact = pa.Table.from_arrays([pa.array([45_296_123_000], pa.int64())], schema=pa.schema([field]))
    assert conform("t", pa.schema([("t", pa.int32())]), exact, IGNORE)[0].column("t").to_pylist() == [45_296_123]
    with pytest.raises(SchemaChangeRefusedError, match=r"ignore keeps int32, and the value 45296123456 does not fit"):
        conform("t", pa.schema([("t", pa.int32())]), rows, IGNORE)


def test_a_coarser_time_unit_is_multiplied_into_the_stored_one() -> None:
    field, values = _time([45_296_123, None], b"ms")
    rows = pa.Table.from_arrays([values], schema=pa.schema([field]))
    for behavior in (LENIENT, EVOLVE, IGNORE):
        out, change = conform("t", pa.schema([("t", pa.int64())]), rows, behavior)
        assert not change and out.column("t").to_pylist() == [45_296_123_000, None]


def test_one_batch_across_a_time_precision_change_holds_both_in_the_finer_unit() -> None:
    from cdc_spark.decode.flatbatch import merge_columns
    from cdc_spark.decode.types import TIME_UNIT

    ms, us = _time([1_000], b"ms"), _time([2_000_001], b"us")
    [(field, merged)] = merge_columns("topic", [(1, [ms]), (1, [us])])
    assert field.type == pa.int64() and field.metadata[TIME_UNIT] == b"us"
    assert merged.to_pylist() == [1_000_000, 2_000_001]


def test_a_batch_across_an_add_column_default_gives_the_earlier_rows_the_default() -> None:
    """Events of other keys from before `ADD COLUMN vip INT DEFAULT 7`, in the batch that brings the
    column: the database gave those rows 7 (with no event); a part after a DROP holds NULL."""
    from cdc_spark.decode.flatbatch import merge_columns
    from cdc_spark.decode.types import with_default

    vip = with_default(pa.field("vip", pa.int32()), pa.scalar(7, pa.int32()))
    ids = pa.field("id", pa.int32())
    old = (2, [(ids, pa.array([2, 3], pa.int32()))])
    new = (1, [(ids, pa.array([1], pa.int32())), (vip, pa.array([None], pa.int32()))])
    # The key-sorted winners put the new schema's part first; the spans say which came first.
    merged = dict(
        (f.name, a.to_pylist()) for f, a in merge_columns("t", [new, old], [(b"\x05", b"\x05"), (b"\x01", b"\x03")])
    )
    assert merged == {"id": [1, 2, 3], "vip": [None, 7, 7]}
    # The column dropped: the part without it comes after one with it, so NULL.
    merged = dict(
        (f.name, a.to_pylist()) for f, a in merge_columns("t", [new, old], [(b"\x01", b"\x01"), (b"\x02", b"\x03")])
    )
    assert merged["vip"] == [None, None, None]
    # Without spans (no sequence known), NULL as before.
    assert dict((f.name, a.to_pylist()) for f, a in merge_columns("t", [new, old]))["vip"] == [None, None, None]


def test_a_default_set_after_the_add_does_not_reach_the_rows_the_add_filled() -> None:
    """`ADD COLUMN region VARCHAR(20) NULL`, then `ALTER COLUMN region SET DEFAULT 'emea'`, both in
    one batch's events: the rows stored before hold NULL (the ADD gave them no default), so the
    column's DEFAULT is the oldest version's (none), not the newest's."""
    from cdc_spark.decode.flatbatch import merge_columns
    from cdc_spark.decode.types import DEFAULT, with_default

    plain = pa.field("region", pa.string())
    later = with_default(plain, pa.scalar("emea"))
    ids = pa.field("id", pa.int32())
    added = (1, [(ids, pa.array([1], pa.int32())), (plain, pa.array(["x"]))])
    defaulted = (1, [(ids, pa.array([2], pa.int32())), (later, pa.array([None], pa.string()))])
    [_, (field, _)] = merge_columns("t", [defaulted, added], [(b"\x05", b"\x05"), (b"\x01", b"\x01")])
    assert DEFAULT not in (field.metadata or {})
    [_, (field, _)] = merge_columns("t", [added, defaulted], [(b"\x01", b"\x01"), (b"\x05", b"\x05")])
    assert DEFAULT not in (field.metadata or {})

"""Schema changes on the lakes, read back with each lake's own library (deltalake, pyiceberg):
every widening the source makes (INT → BIGINT on the key too, FLOAT → DOUBLE, DECIMAL
precision and scale up, DATE → DATETIME) is applied, on the driver's path and on the
executors' (bucketed) path; the guard against late events and the remembered deletes still
hold after a rewrite; `evolve` drops a column; `exception` and `ignore` leave the table as it
was."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from cdc.api.data import Schema, SchemaBuilder
from cdc.api.data.logical import Date, Decimal, Timestamp
from cdc_spark.apply import ChangeApplier, SchemaChangeRefusedError
from cdc_spark.apply.buckets import in_layout
from tests.spark.events import Table
from tests.spark.helpers import delta_rows, iceberg_rows, raw_frame

TOPIC = "shop.inv.items"
DAY = datetime.date(2024, 2, 29)


def _decimal(precision: int, scale: int) -> Schema:
    return Decimal.builder(scale).parameter("connect.decimal.precision", str(precision)).optional().build()


NARROW = {
    "id": Schema.INT32_SCHEMA,
    "qty": Schema.OPTIONAL_INT32_SCHEMA,
    "price": Schema.OPTIONAL_FLOAT32_SCHEMA,
    "amount": _decimal(10, 2),
    "day": Date.builder().optional().build(),
    "note": Schema.OPTIONAL_STRING_SCHEMA,
}
WIDE = {
    "id": Schema.INT64_SCHEMA,
    "qty": Schema.OPTIONAL_INT64_SCHEMA,
    "price": Schema.OPTIONAL_FLOAT64_SCHEMA,
    "amount": _decimal(14, 4),
    "day": Timestamp.builder().optional().build(),
    "note": Schema.OPTIONAL_STRING_SCHEMA,
}


def _row(i: int) -> dict[str, Any]:
    return {"qty": i, "price": 1.5, "amount": decimal.Decimal("12345678.91"), "day": DAY, "note": f"n{i}"}


def _wide_row(i: int) -> dict[str, Any]:
    at = datetime.datetime(2024, 3, 1, 10, 30, tzinfo=datetime.UTC)
    return {"qty": 2**40 + i, "price": 1e300, "amount": decimal.Decimal("9999999999.1234"), "day": at, "note": "w"}


def _catalog(tmp_path: Path) -> dict[str, str]:
    """A SQLite SQL catalog with its warehouse under `tmp_path`."""
    (tmp_path / "wh").mkdir(exist_ok=True)
    return {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}


def _delta(lake: str) -> tuple[pa.Schema, dict[int, dict[str, Any]]]:
    dt = DeltaTable(f"{lake}/shop_inv_items")
    return pa.schema(dt.schema().to_arrow()), {r["id"]: r for r in delta_rows(f"{lake}/shop_inv_items")}


def _iceberg(cat: dict[str, str]) -> tuple[pa.Schema, dict[int, dict[str, Any]]]:
    from pyiceberg.catalog.sql import SqlCatalog

    tbl = SqlCatalog("cdc", **cat).load_table(("lake", "shop_inv_items"))
    return tbl.schema().as_arrow(), {r["id"]: r for r in iceberg_rows(cat, "lake", "shop_inv_items")}


def _widen_everything(spark: Any, applier: ChangeApplier) -> None:
    """Batch 0 in the narrow types (keys 1-4, key 4 deleted); batch 1 in the wide ones: an update
    of key 1, a new key past int32, a late update of key 2 older than its stored row, a zombie
    of the deleted key 4; then batch 1 replayed."""
    narrow, wide = Table(TOPIC, NARROW), Table(TOPIC, WIDE)
    applier(
        raw_frame(
            spark,
            TOPIC,
            [*[narrow.event("c", i, _row(i), 10 + i) for i in range(1, 5)], narrow.event("d", 4, None, 20)],
        ),
        0,
    )
    second = [
        wide.event("u", 1, _wide_row(1), 30),
        wide.event("c", 3_000_000_000, _wide_row(9), 31),
        wide.event("u", 2, {**_wide_row(2), "note": "late"}, 5),  # older than the stored row (12)
        wide.event("c", 4, _wide_row(4), 15),  # older than its delete (20): stays deleted
    ]
    applier(raw_frame(spark, TOPIC, second), 1)
    applier(raw_frame(spark, TOPIC, second), 1)  # the replay writes nothing


def _check_widened(schema: pa.Schema, rows: dict[int, dict[str, Any]]) -> None:
    types = {f.name: f.type for f in schema}
    assert types["id"] == pa.int64() and types["qty"] == pa.int64() and types["price"] == pa.float64()
    assert types["amount"] == pa.decimal128(14, 4) and pa.types.is_timestamp(types["day"])
    assert sorted(rows) == [1, 2, 3, 3_000_000_000]
    assert rows[1]["qty"] == 2**40 + 1 and rows[1]["price"] == 1e300
    assert rows[1]["amount"] == decimal.Decimal("9999999999.1234")
    # Rows written before the rewrite keep their values, in the wider type.
    assert rows[2]["note"] == "n2" and rows[2]["qty"] == 2 and rows[2]["amount"] == decimal.Decimal("12345678.9100")
    assert rows[3]["day"].replace(tzinfo=None) == datetime.datetime(2024, 2, 29) and rows[3]["price"] == 1.5


@pytest.mark.parametrize("apply_on", ["executors", "driver"])
def test_delta_takes_every_widening_and_keeps_its_guards(spark: Any, tmp_path: Path, apply_on: str) -> None:
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake, "apply.on": apply_on})
    _widen_everything(spark, applier)
    schema, rows = _delta(lake)
    _check_widened(schema, rows)
    tombs = pa.schema(DeltaTable(f"{lake}/shop_inv_items__tombstones").schema().to_arrow())
    assert tombs.field("id").type == pa.int64()  # the remembered deletes' key follows the table's
    if apply_on == "executors":  # the rewrite kept the bucketed layout
        assert in_layout(f"{lake}/shop_inv_items")


@pytest.mark.parametrize("apply_on", ["executors", "driver"])
def test_iceberg_promotes_in_place_or_rewrites(spark: Any, tmp_path: Path, apply_on: str) -> None:
    cat = _catalog(tmp_path)
    applier = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake", "apply.on": apply_on})
    _widen_everything(spark, applier)
    schema, rows = _iceberg(cat)
    _check_widened(schema, rows)
    assert schema.names[:6] == ["id", "qty", "price", "amount", "day", "note"]  # rewritten columns keep their place


def test_evolve_drops_a_column_and_exception_and_ignore_leave_the_table(spark: Any, tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    narrow = Table(TOPIC, NARROW)
    without_note = Table(TOPIC, {k: v for k, v in NARROW.items() if k != "note"})
    with_color = Table(TOPIC, {**NARROW, "color": Schema.OPTIONAL_STRING_SCHEMA})

    def sink(behavior: str) -> ChangeApplier:
        return ChangeApplier({"target": "delta", "path": lake, "schema.change.behavior": behavior})

    sink("exception")(raw_frame(spark, TOPIC, [narrow.event("c", 1, _row(1), 1)]), 0)
    version = DeltaTable(f"{lake}/shop_inv_items").version()
    with pytest.raises(SchemaChangeRefusedError, match=r"new column 'color' \(string\).*to lenient"):
        sink("exception")(raw_frame(spark, TOPIC, [with_color.event("c", 2, {**_row(2), "color": "red"}, 2)]), 1)
    assert DeltaTable(f"{lake}/shop_inv_items").version() == version  # nothing written
    sink("ignore")(raw_frame(spark, TOPIC, [with_color.event("c", 2, {**_row(2), "color": "red"}, 2)]), 1)
    schema, rows = _delta(lake)
    assert "color" not in schema.names and rows[2]["note"] == "n2"
    sink("lenient")(raw_frame(spark, TOPIC, [without_note.event("c", 3, _row(3), 3)]), 2)
    schema, rows = _delta(lake)
    assert "note" in schema.names and rows[3]["note"] is None and rows[1]["note"] == "n1"
    sink("evolve")(raw_frame(spark, TOPIC, [without_note.event("u", 1, {**_row(1), "qty": 7}, 4)]), 3)
    schema, rows = _delta(lake)
    assert "note" not in schema.names and rows[1]["qty"] == 7 and sorted(rows) == [1, 2, 3]


def test_evolve_retypes_incompatibly_and_stops_on_a_value_that_does_not_cast(spark: Any, tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    as_text = SchemaBuilder.string().optional().build()
    narrow, text = Table(TOPIC, NARROW), Table(TOPIC, {**NARROW, "qty": as_text})
    applier = ChangeApplier(
        {"target": "iceberg", "catalog": cat, "namespace": "lake", "schema.change.behavior": "evolve"}
    )
    applier(raw_frame(spark, TOPIC, [narrow.event("c", i, _row(i), i) for i in (1, 2)]), 0)
    applier(raw_frame(spark, TOPIC, [text.event("u", 1, {**_row(1), "qty": "seven"}, 5)]), 1)
    schema, rows = _iceberg(cat)
    assert schema.field("qty").type in (pa.string(), pa.large_string())
    assert rows[1]["qty"] == "seven" and rows[2]["qty"] == "2"
    # Back to int: "seven" does not cast, so evolve stops and the table stays as it was.
    with pytest.raises(Exception, match=r"column 'qty'.*'seven' does not cast"):
        applier(raw_frame(spark, TOPIC, [narrow.event("u", 2, _row(22), 6)]), 2)
    assert _iceberg(cat)[1][1]["qty"] == "seven"


def test_postgres_follows_each_behavior(spark: Any, postgres_db: Any) -> None:
    from tests.spark.helpers import postgres_rows

    narrow = Table(TOPIC, NARROW)
    as_text = SchemaBuilder.string().optional().build()
    with_color = Table(TOPIC, {**NARROW, "color": Schema.OPTIONAL_STRING_SCHEMA})
    without_note = Table(TOPIC, {k: v for k, v in NARROW.items() if k != "note"})
    qty_text = Table(TOPIC, {**NARROW, "qty": as_text})

    def sink(behavior: str) -> ChangeApplier:
        return ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn, "schema.change.behavior": behavior})

    def table() -> tuple[list[str], dict[int, dict[str, Any]]]:
        rows = postgres_rows(postgres_db.dsn, "shop_inv_items")
        import psycopg

        with psycopg.connect(postgres_db.dsn) as conn:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = 'shop_inv_items' "
                    "ORDER BY ordinal_position"
                )
            ]
        return names, {r["id"]: r for r in rows}

    sink("exception")(raw_frame(spark, TOPIC, [narrow.event("c", i, _row(i), i) for i in (1, 2)]), 0)
    with pytest.raises(Exception, match=r"new column 'color'.*schema.change.behavior=exception.*to lenient"):
        sink("exception")(raw_frame(spark, TOPIC, [with_color.event("c", 3, {**_row(3), "color": "r"}, 3)]), 1)
    assert "color" not in table()[0]
    sink("ignore")(raw_frame(spark, TOPIC, [with_color.event("c", 3, {**_row(3), "color": "r"}, 3)]), 1)
    names, rows = table()
    assert "color" not in names and rows[3]["note"] == "n3"
    sink("try_evolve")(raw_frame(spark, TOPIC, [qty_text.event("u", 1, {**_row(1), "qty": "x"}, 4)]), 2)
    sink("try_evolve")(raw_frame(spark, TOPIC, [qty_text.event("u", 2, {**_row(2), "qty": "22"}, 5)]), 3)
    names, rows = table()
    assert rows[1]["qty"] is None and rows[2]["qty"] == 22  # kept integer; "x" did not convert
    sink("evolve")(raw_frame(spark, TOPIC, [without_note.event("u", 3, {**_row(3), "qty": 33}, 6)]), 4)
    names, rows = table()
    assert "note" not in names and rows[3]["qty"] == 33
    sink("evolve")(raw_frame(spark, TOPIC, [qty_text.event("u", 1, {**_row(1), "qty": "one"}, 7)]), 5)
    names, rows = table()
    assert rows[1]["qty"] == "one" and rows[2]["qty"] == "22"  # the column is text now, stored values cast


# A column added at the source with a DEFAULT (`ALTER TABLE … ADD COLUMN vip INT NOT NULL DEFAULT 0`):
# the database holds the default in every row it had, without an event for them.
SINCE = datetime.date(2024, 1, 1)
WITH_DEFAULTS = {
    **NARROW,
    "vip": SchemaBuilder.int32().default_value(0).build(),
    "since": Date.builder().optional().default_value(SINCE).build(),
    "rate": Decimal.builder(2)
    .parameter("connect.decimal.precision", "10")
    .optional()
    .default_value(decimal.Decimal("1.50"))
    .build(),
}


def _add_with_defaults(spark: Any, applier: ChangeApplier) -> None:
    """Batch 0 in the old schema (keys 1-4, key 4 deleted); batch 1 in the new one, for key 2
    only (its own values); then batch 1 replayed."""
    narrow, wide = Table(TOPIC, NARROW), Table(TOPIC, WITH_DEFAULTS)
    applier(
        raw_frame(
            spark,
            TOPIC,
            [*[narrow.event("c", i, _row(i), 10 + i) for i in range(1, 5)], narrow.event("d", 4, None, 20)],
        ),
        0,
    )
    own = {**_row(2), "vip": 5, "since": DAY, "rate": decimal.Decimal("9.99")}
    second = [wide.event("u", 2, own, 30)]
    applier(raw_frame(spark, TOPIC, second), 1)
    applier(raw_frame(spark, TOPIC, second), 1)  # the replay writes nothing


def _check_filled(rows: dict[int, dict[str, Any]]) -> None:
    assert sorted(rows) == [1, 2, 3]
    for i in (1, 3):  # stored before the column existed: the source's DEFAULT, as the database has it
        assert (rows[i]["vip"], rows[i]["since"], rows[i]["rate"]) == (0, SINCE, decimal.Decimal("1.50"))
        assert rows[i]["note"] == f"n{i}"
    assert (rows[2]["vip"], rows[2]["since"], rows[2]["rate"]) == (5, DAY, decimal.Decimal("9.99"))


@pytest.mark.parametrize("apply_on", ["executors", "driver"])
def test_delta_fills_a_column_added_with_a_default(spark: Any, tmp_path: Path, apply_on: str) -> None:
    lake = str(tmp_path / "lake")
    _add_with_defaults(spark, ChangeApplier({"target": "delta", "path": lake, "apply.on": apply_on}))
    schema, rows = _delta(lake)
    _check_filled(rows)
    assert not any(f.metadata for f in schema)  # the decoder's annotation stays out of the table's schema
    tombs = pa.schema(DeltaTable(f"{lake}/shop_inv_items__tombstones").schema().to_arrow())
    assert "vip" not in tombs.names  # the remembered deletes hold only keys
    if apply_on == "executors":  # the rewrite kept the bucketed layout
        assert in_layout(f"{lake}/shop_inv_items")


@pytest.mark.parametrize("apply_on", ["executors", "driver"])
def test_iceberg_fills_a_column_added_with_a_default(spark: Any, tmp_path: Path, apply_on: str) -> None:
    cat = _catalog(tmp_path)
    applier = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake", "apply.on": apply_on})
    _add_with_defaults(spark, applier)
    schema, rows = _iceberg(cat)
    _check_filled(rows)
    assert [n for n in schema.names if not n.startswith("__")] == [*NARROW, "vip", "since", "rate"]


def test_postgres_fills_a_column_added_with_a_default_and_drops_the_default(spark: Any, postgres_db: Any) -> None:
    import psycopg

    from tests.spark.helpers import postgres_rows

    _add_with_defaults(spark, ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn}))
    _check_filled({r["id"]: r for r in postgres_rows(postgres_db.dsn, "shop_inv_items")})
    with psycopg.connect(postgres_db.dsn) as conn:
        defaults = conn.execute(
            "SELECT column_name, column_default FROM information_schema.columns "
            "WHERE table_name = 'shop_inv_items' AND column_name IN ('vip', 'since', 'rate')"
        ).fetchall()
        tombs = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'shop_inv_items__tombstones'"
            )
        ]
    assert sorted(defaults) == [("rate", None), ("since", None), ("vip", None)]  # later rows hold their events'
    assert "vip" not in tombs


MS_TIME = SchemaBuilder.int32().name("io.debezium.time.Time").optional().build()
US_TIME = SchemaBuilder.int64().name("io.debezium.time.MicroTime").optional().build()


@pytest.mark.parametrize("target", ["delta-executors", "delta-driver", "iceberg", "postgres"])
def test_a_time_precision_change_keeps_every_time_right(
    spark: Any, tmp_path: Path, postgres_db: Any, target: str
) -> None:
    """PostgreSQL TIME(3) → TIME(6) under adaptive precision: Debezium's Time (ms, int32) becomes
    MicroTime (us, int64). The stored times are scaled, not cast: 12:34:56.789 stays that time."""
    from tests.spark.helpers import postgres_rows

    cat = _catalog(tmp_path)
    configs = {
        "delta-executors": {"target": "delta", "path": str(tmp_path / "lake")},
        "delta-driver": {"target": "delta", "path": str(tmp_path / "lake"), "apply.on": "driver"},
        "iceberg": {"target": "iceberg", "catalog": cat, "namespace": "lake"},
        "postgres": {"target": "postgres", "dsn": postgres_db.dsn},
    }
    readers = {
        "delta-executors": lambda: delta_rows(str(tmp_path / "lake" / "shop_inv_items")),
        "delta-driver": lambda: delta_rows(str(tmp_path / "lake" / "shop_inv_items")),
        "iceberg": lambda: iceberg_rows(cat, "lake", "shop_inv_items"),
        "postgres": lambda: postgres_rows(postgres_db.dsn, "shop_inv_items"),
    }
    applier = ChangeApplier(configs[target])
    ms = Table(TOPIC, {"id": Schema.INT32_SCHEMA, "t": MS_TIME})
    us = Table(TOPIC, {"id": Schema.INT32_SCHEMA, "t": US_TIME})
    at = 45_296_789  # 12:34:56.789 in ms
    applier(raw_frame(spark, TOPIC, [ms.event("c", 1, {"t": at}, 1), ms.event("c", 2, {"t": at + 1}, 2)]), 0)
    # One batch across the ALTER: a TIME(3) event, then TIME(6) ones.
    batch = [ms.event("c", 3, {"t": at + 2}, 3), us.event("u", 1, {"t": at * 1000 + 123}, 4)]
    applier(raw_frame(spark, TOPIC, batch), 1)
    applier(raw_frame(spark, TOPIC, [us.event("c", 4, {"t": 1}, 5), ms.event("c", 5, {"t": 7}, 6)]), 2)
    rows = {r["id"]: r["t"] for r in readers[target]()}
    assert rows == {1: at * 1000 + 123, 2: (at + 1) * 1000, 3: (at + 2) * 1000, 4: 1, 5: 7000}


@pytest.mark.parametrize("target", ["delta", "iceberg"])
def test_evolve_drops_a_column_only_once_no_bucket_carries_it(spark: Any, tmp_path: Path, target: str) -> None:
    """A batch across a DROP COLUMN on the executors' path: some buckets' events still carry the
    column, others do not. Each task sees only its buckets, so the drop waits until no event of
    a batch carries it (seed 77 of the seeded schema test looped: one bucket dropped it, the next
    pass another added it back)."""
    cat = _catalog(tmp_path)
    config = (
        {"target": "delta", "path": str(tmp_path / "lake")}
        if target == "delta"
        else {"target": "iceberg", "catalog": cat, "namespace": "lake"}
    )
    applier = ChangeApplier({**config, "schema.change.behavior": "evolve", "buckets": "8"})
    narrow, without_note = Table(TOPIC, NARROW), Table(TOPIC, {k: v for k, v in NARROW.items() if k != "note"})
    applier(raw_frame(spark, TOPIC, [narrow.event("c", i, _row(i), i) for i in range(1, 9)]), 0)
    mixed = [narrow.event("u", i, _row(i), 10 + i) for i in (1, 2, 3)] + [
        without_note.event("u", i, {**_row(i), "qty": 100 + i}, 20 + i) for i in (4, 5, 6)
    ]
    applier(raw_frame(spark, TOPIC, mixed), 1)
    schema, rows = _delta(str(tmp_path / "lake")) if target == "delta" else _iceberg(cat)
    assert "note" in schema.names and rows[1]["note"] == "n1" and rows[4]["qty"] == 104
    applier(raw_frame(spark, TOPIC, [without_note.event("u", 7, {**_row(7), "qty": 77}, 30)]), 2)
    schema, rows = _delta(str(tmp_path / "lake")) if target == "delta" else _iceberg(cat)
    assert "note" not in schema.names and rows[7]["qty"] == 77 and sorted(rows) == list(range(1, 9))

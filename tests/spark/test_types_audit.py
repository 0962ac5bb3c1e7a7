"""Type fidelity and schema evolution across the targets: every value lands equal to the source.

Each test here failed before its fix: VariableScaleDecimal landed as JSON text of base64,
ZonedTimestamp as text, decimal.format=NUMERIC decimals went through a float, PostgreSQL's
±infinity and BC dates broke the COPY, out-of-range dates panicked delta-rs, a type change
inside one micro-batch stopped the query, and PostgreSQL kept stale values of dropped columns.
"""

from __future__ import annotations

import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from cdc.api.data import Decimal, Schema, SchemaBuilder, Struct
from cdc_spark.apply import ChangeApplier
from cdc_spark.apply.errors import ValueOutOfRangeError
from cdc_spark.apply.evolution import conform, widens
from cdc_spark.decode import ColumnTypeConflict, flatten, sequence
from cdc_spark.decode.flatten import flatten_rows
from tests.spark.events import Table
from tests.spark.helpers import delta_rows, iceberg_rows, postgres_rows, raw_frame

TOPIC = "shop.inv.items"
TABLE = "shop_inv_items"
I32 = Schema.INT32_SCHEMA

VSD = (
    SchemaBuilder.struct()
    .name("io.debezium.data.VariableScaleDecimal")
    .version(1)
    .optional()
    .field("scale", Schema.INT32_SCHEMA)
    .field("value", Schema.BYTES_SCHEMA)
    .build()
)
ZONED = SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").version(1).optional().build()
DATE = SchemaBuilder.int32().name("io.debezium.time.Date").version(1).optional().build()
MICROS = SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").version(1).optional().build()
POINT = (
    SchemaBuilder.struct()
    .name("io.debezium.data.geometry.Point")
    .optional()
    .field("x", Schema.FLOAT64_SCHEMA)
    .field("y", Schema.FLOAT64_SCHEMA)
    .build()
)
INFINITY_TS = 9223372036825200000  # what Debezium sends for 'infinity' timestamps


def dec(precision: int, scale: int) -> Schema:
    return Decimal.builder(scale).optional().parameter("connect.decimal.precision", str(precision)).build()


def vsd(text: str) -> Struct:
    d = decimal.Decimal(text)
    exponent = d.as_tuple().exponent
    scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    return Struct(VSD).put("scale", scale).put("value", Decimal.from_logical(Decimal.schema(scale), d))


def winners(events: list[tuple[bytes | None, bytes]], ops: list[str]) -> pa.Table:
    """The driver-side winners table `flatten` takes, from (key, value) records."""
    keys = [json.dumps(json.loads(k or b"null")["payload"], separators=(",", ":")) for k, _ in events]
    n = len(events)
    return pa.table(
        {
            "key": keys,
            "value": [v for _, v in events],
            "__op": ops,
            "__seq": pa.array([sequence.mysql("mysql-bin.000001", i + 1) for i in range(n)], pa.binary()),
            "__source_ts_ms": pa.array([0] * n, pa.int64()),
            "__deleted": [op == "d" for op in ops],
        }
    )


def pg_text(dsn: str, table: str, columns: str) -> dict[int, tuple]:
    """id → the columns as PostgreSQL prints them (Python cannot hold 'infinity' dates)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(f'SELECT id, {columns} FROM public."{table}" ORDER BY id').fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}


def pg_types(dsn: str, table: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped",
            (f'public."{table}"',),
        ).fetchall()
    return dict(rows)


# -- decoding ----------------------------------------------------------------------------------


@pytest.mark.parametrize("row_path", [False, True])
def test_variable_scale_decimal_and_zoned_timestamp_are_typed_exactly(row_path: bool) -> None:
    t = Table(TOPIC, {"id": I32, "v": VSD, "z": ZONED})
    events = [
        t.event("c", 1, {"v": vsd("-12.345"), "z": "2024-01-02T03:04:05.123456Z"}, 1),
        t.event("c", 2, {"v": vsd("123456789012345678901234567890.123456789"), "z": "2024-01-02T05:04:05+02:00"}, 2),
        t.event("c", 3, {"v": vsd("0"), "z": "1969-12-31T23:59:59.999999Z"}, 3),
    ]
    flat = (flatten_rows if row_path else flatten)(TOPIC, winners(events, ["c"] * 3))
    table = flat.table
    assert table.schema.field("z").type == pa.timestamp("us", tz="UTC")
    assert table.column("v").to_pylist() == ["-12.345", "123456789012345678901234567890.123456789", "0"]
    assert table.column("z").cast(pa.int64()).to_pylist() == [1704164645123456, 1704164645000000, -1]
    assert table.schema.field("v").metadata == {b"cdc.sql.type": b"numeric"}


@pytest.mark.parametrize("row_path", [False, True])
def test_decimals_keep_every_digit(row_path: bool) -> None:
    t = Table(TOPIC, {"id": I32, "d": dec(30, 4), "wide": dec(65, 30), "neg": dec(3, -2)})
    d30 = decimal.Decimal("12345678901234567890.1234")
    events = [
        t.event("c", 1, {"d": d30, "wide": decimal.Decimal("0E-30"), "neg": decimal.Decimal("1.23E+4")}, 1),
        t.event("c", 2, {"d": decimal.Decimal("-0.0001")}, 2),
    ]
    flat = (flatten_rows if row_path else flatten)(TOPIC, winners(events, ["c", "c"]))
    assert flat.table.column("d").to_pylist() == [d30, decimal.Decimal("-0.0001")]
    assert flat.table.column("wide").to_pylist() == ["0." + "0" * 30, None]  # not '0E-30'
    assert flat.table.schema.field("wide").metadata == {b"cdc.sql.type": b"numeric(65,30)"}
    # numeric(3,-2) (PostgreSQL 15): same values at scale 0, which Delta and Iceberg accept.
    assert flat.table.schema.field("neg").type == pa.decimal128(5, 0)
    assert flat.table.column("neg").to_pylist() == [decimal.Decimal(12300), None]


def test_numeric_decimal_format_does_not_go_through_a_float() -> None:
    t = Table(TOPIC, {"id": I32, "d": dec(30, 4)})
    t.values.configure({"schemas.enable": True, "decimal.format": "NUMERIC"}, is_key=False)
    exact = decimal.Decimal("12345678901234567890.1234")
    flat = flatten(TOPIC, winners([t.event("c", 1, {"d": exact}, 1)], ["c"]))
    assert flat.table.column("d").to_pylist() == [exact]  # was 12345678901234567000.0000


def test_dates_beyond_python_range_on_the_row_path() -> None:
    # A nested column (Point) sends the batch down the row path, which used Python dates.
    t = Table(TOPIC, {"id": I32, "d": DATE, "p": POINT})
    events = [t.event("c", 1, {"d": 2**31 - 1}, 1), t.event("c", 2, {"d": -800_000}, 2)]
    flat = flatten(TOPIC, winners(events, ["c", "c"]))
    assert flat.table.column("d").cast(pa.int32()).to_pylist() == [2**31 - 1, -800_000]


@pytest.mark.parametrize("row_path", [False, True])
def test_rows_from_both_sides_of_a_widening_meet_in_the_wider_type(row_path: bool) -> None:
    old = Table(TOPIC, {"id": I32, "q": Schema.OPTIONAL_INT32_SCHEMA, "d": dec(10, 2)})
    new = Table(TOPIC, {"id": I32, "q": Schema.OPTIONAL_INT64_SCHEMA, "d": dec(12, 4)})
    events = [
        old.event("c", 1, {"q": 5, "d": decimal.Decimal("12345678.91")}, 1),
        new.event("c", 2, {"q": 2**40, "d": decimal.Decimal("-0.0001")}, 2),
        old.event("u", 3, {"q": 7, "d": decimal.Decimal("1.50")}, 3),
    ]
    flat = (flatten_rows if row_path else flatten)(TOPIC, winners(events, ["c", "c", "u"]))
    assert flat.table.schema.field("q").type == pa.int64()
    assert flat.table.schema.field("d").type == pa.decimal128(12, 4)
    assert flat.table.column("id").to_pylist() == [1, 2, 3]
    assert flat.table.column("q").to_pylist() == [5, 2**40, 7]
    # Each row is read with its own schema's scale (a scale-4 reading of scale-2 bytes is 100x off).
    assert flat.table.column("d").to_pylist() == [
        decimal.Decimal("12345678.91"),
        decimal.Decimal("-0.0001"),
        decimal.Decimal("1.5"),
    ]


def test_incompatible_change_inside_one_batch_names_column_and_fix() -> None:
    old = Table(TOPIC, {"id": I32, "q": Schema.OPTIONAL_INT64_SCHEMA})
    new = Table(TOPIC, {"id": I32, "q": Schema.OPTIONAL_STRING_SCHEMA})
    events = [old.event("c", 1, {"q": 5}, 1), new.event("c", 2, {"q": "x"}, 2)]
    expected = r"topic shop.inv.items: column 'q' arrives as int64 and as string.*Fix:"
    with pytest.raises(ColumnTypeConflict, match=expected):
        flatten(TOPIC, winners(events, ["c", "c"]))


def test_lake_schema_takes_a_narrower_decimal_scale() -> None:
    existing = pa.schema([("d", pa.decimal128(12, 4))])
    incoming = pa.table({"d": pa.array([decimal.Decimal("1.25")], pa.decimal128(10, 2))})
    assert widens(pa.decimal128(12, 4), pa.decimal128(10, 2))
    out, added = conform("t", existing, incoming)
    assert out.column("d").to_pylist() == [decimal.Decimal("1.2500")] and not added
    # decimal(10,2) → decimal(12,4): every old value fits, so the target retypes the column.
    wider = incoming.cast(pa.schema([("d", pa.decimal128(12, 4))]))
    out, change = conform("t", pa.schema([("d", pa.decimal128(10, 2))]), wider)
    assert change.retyped == (pa.field("d", pa.decimal128(12, 4)),) and out.schema == wider.schema


# -- PostgreSQL --------------------------------------------------------------------------------


def test_postgres_stores_every_logical_type_exactly(spark: Any, postgres_db: Any) -> None:
    t = Table(
        TOPIC,
        {"id": I32, "v": VSD, "z": ZONED, "d": DATE, "ts": MICROS, "wide": dec(65, 30), "neg": dec(3, -2)},
    )
    events = [
        t.event("c", 1, {"v": vsd("-12.345"), "z": "2024-01-02T03:04:05.123456Z", "d": 0, "ts": 0}, 1),
        t.event("c", 2, {"v": vsd("1E-40"), "z": "infinity", "d": 2**31 - 1, "ts": INFINITY_TS}, 2),
        t.event("c", 3, {"z": "-0001-06-01T00:00:00Z", "d": -800_000, "wide": decimal.Decimal("0E-30")}, 3),
        t.event("c", 4, {"z": "-infinity", "d": -(2**31), "ts": -9223372036832400000}, 4),
        t.event("c", 5, {"neg": decimal.Decimal("1.23E+4"), "d": -719_162, "ts": -62135596800000000}, 5),
    ]
    ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn})(raw_frame(spark, TOPIC, events), 0)
    types = pg_types(postgres_db.dsn, TABLE)
    assert (types["v"], types["z"], types["d"], types["wide"], types["neg"]) == (
        "numeric",
        "timestamp with time zone",
        "date",
        "numeric(65,30)",
        "numeric(5,0)",
    )
    rows = pg_text(
        postgres_db.dsn,
        TABLE,
        "v::text, to_char(z AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US BC'), d::text, ts::text, wide::text, neg",
    )
    assert rows[1] == ("-12.345", "2024-01-02 03:04:05.123456 AD", "1970-01-01", "1970-01-01 00:00:00", None, None)
    assert rows[2][0] == "0." + "0" * 39 + "1"
    assert rows[2][2:4] == ("infinity", "infinity")
    assert rows[3][1:3] == ("0002-06-01 00:00:00.000000 BC", "0222-09-04 BC")  # -0001 is 2 BC
    assert rows[3][4] == "0." + "0" * 30
    assert rows[4][2:4] == ("-infinity", "-infinity")
    assert rows[5][2:] == ("0001-01-01", "0001-01-01 00:00:00", None, decimal.Decimal(12300))
    with_inf = pg_text(postgres_db.dsn, TABLE, "isfinite(z)")
    assert with_inf[2] == (False,) and with_inf[1] == (True,)


def test_postgres_refuses_nul_naming_table_and_column(spark: Any, postgres_db: Any) -> None:
    t = Table(TOPIC)
    applier = ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn})
    with pytest.raises(Exception, match=r"table public.shop_inv_items: column 'name' holds a NUL character.*Fix:"):
        applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a\x00b"}, 1)]), 0)


def test_postgres_follows_decimal_scale_changes_and_batches_with_two_schemas(spark: Any, postgres_db: Any) -> None:
    applier = ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn})
    old = Table(TOPIC, {"id": I32, "q": Schema.OPTIONAL_INT32_SCHEMA, "d": dec(10, 2)})
    new = Table(TOPIC, {"id": I32, "q": Schema.OPTIONAL_INT64_SCHEMA, "d": dec(12, 4)})
    applier(raw_frame(spark, TOPIC, [old.event("c", 1, {"q": 1, "d": decimal.Decimal("12345678.91")}, 1)]), 0)
    # ALTER TABLE … MODIFY inside the batch: key 2's event is before it, key 3's after it.
    batch = [
        old.event("c", 2, {"q": 2, "d": decimal.Decimal("0.50")}, 2),
        new.event("c", 3, {"q": 2**40, "d": decimal.Decimal("-0.0001")}, 3),
    ]
    applier(raw_frame(spark, TOPIC, batch), 1)
    # A late partition still on the old schema: narrower values go into the wider column.
    applier(raw_frame(spark, TOPIC, [old.event("u", 1, {"q": 9, "d": decimal.Decimal("1.25")}, 4)]), 2)
    types = pg_types(postgres_db.dsn, TABLE)
    assert (types["q"], types["d"]) == ("bigint", "numeric(12,4)")
    assert pg_text(postgres_db.dsn, TABLE, "q, d::text") == {
        1: (9, "1.2500"),
        2: (2, "0.5000"),
        3: (2**40, "-0.0001"),
    }


def test_dropped_column_becomes_null_on_update_in_every_target(spark: Any, postgres_db: Any, tmp_path: Path) -> None:
    v1 = Table(TOPIC)
    v2 = Table(TOPIC, {"id": I32, "name": Schema.OPTIONAL_STRING_SCHEMA})  # qty dropped
    first = [v1.event("c", 1, {"name": "a", "qty": 5}, 1), v1.event("c", 2, {"name": "b", "qty": 6}, 2)]
    second = [v2.event("u", 1, {"name": "a2"}, 3)]
    (tmp_path / "wh").mkdir()
    catalog = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    sinks = {
        "postgres": {"target": "postgres", "dsn": postgres_db.dsn},
        "delta": {"target": "delta", "path": str(tmp_path / "lake")},
        "iceberg": {"target": "iceberg", "catalog": catalog, "namespace": "lake"},
    }
    stored = {}
    for name, sink in sinks.items():
        applier = ChangeApplier(sink)
        applier(raw_frame(spark, TOPIC, first), 0)
        applier(raw_frame(spark, TOPIC, second), 1)
        rows = {
            "postgres": lambda: postgres_rows(postgres_db.dsn, TABLE),
            "delta": lambda: delta_rows(str(tmp_path / "lake" / TABLE)),
            "iceberg": lambda: iceberg_rows(catalog, "lake", TABLE),
        }[name]()
        stored[name] = {r["id"]: (r["name"], r["qty"]) for r in rows}
    assert stored["postgres"] == stored["delta"] == stored["iceberg"] == {1: ("a2", None), 2: ("b", 6)}


# -- Delta and Iceberg -------------------------------------------------------------------------


def test_lakes_store_zoned_timestamps_as_instants_and_exact_decimals(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC, {"id": I32, "z": ZONED, "v": VSD})
    pi = "3.14159265358979323846264338327950288"
    events = [t.event("c", 1, {"z": "2024-01-02T05:04:05.5+02:00", "v": vsd(pi)}, 1)]
    (tmp_path / "wh").mkdir()
    catalog = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    ChangeApplier({"target": "delta", "path": str(tmp_path / "lake")})(raw_frame(spark, TOPIC, events), 0)
    ChangeApplier({"target": "iceberg", "catalog": catalog, "namespace": "lake"})(raw_frame(spark, TOPIC, events), 0)
    for rows in (delta_rows(str(tmp_path / "lake" / TABLE)), iceberg_rows(catalog, "lake", TABLE)):
        (row,) = rows
        assert row["z"].isoformat() == "2024-01-02T03:04:05.500000+00:00"
        assert row["v"] == pi


@pytest.mark.parametrize("target", ["delta", "iceberg"])
def test_lakes_refuse_dates_beyond_year_9999_with_advice(spark: Any, tmp_path: Path, target: str) -> None:
    t = Table(TOPIC, {"id": I32, "d": DATE})
    (tmp_path / "wh").mkdir()
    sink: dict[str, Any] = (
        {"target": "delta", "path": str(tmp_path / "lake")}
        if target == "delta"
        else {
            "target": "iceberg",
            "catalog": {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"},
            "namespace": "lake",
        }
    )
    with pytest.raises(ValueOutOfRangeError, match=r"table shop_inv_items: column 'd' holds a value outside.*Fix:"):
        ChangeApplier(sink)(raw_frame(spark, TOPIC, [t.event("c", 1, {"d": 2**31 - 1}, 1)]), 0)

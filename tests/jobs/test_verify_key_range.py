"""`cdc verify --key-range` and `--sample` without a server: the option's parsing and errors, the range's
truth on canonical keys, and that every filter pushed into a lake read holds every key the truth holds.

The pushed-down filters are checked against the lakes' own libraries: a Delta table written with
deltalake (several files, so that file statistics prune some) and an Iceberg table in a SQLite catalog,
both in the types the sink writes (cdc_spark/decode/types.py). The seed of the random values is
printed; CDC_TEST_SEED replays one.
"""

from __future__ import annotations

import datetime
import decimal
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from cdc.api.errors import ConfigException
from cdc.jobs.verify.compare import _key
from cdc.jobs.verify.key_range import KeyRange, RangeUnusable, bind, parse_key_range
from cdc.jobs.verify.normalize import Column, canon
from cdc.jobs.verify.sample import KeySample, rank, rank_parts, sample_keys
from cdc.jobs.verify.scope import TableScope
from cdc.jobs.verify.target import DeltaReader
from cdc_spark.apply.arrowutil import delta_dataset

pytestmark = pytest.mark.unit

SEED = int(os.environ.get("CDC_TEST_SEED", random.SystemRandom().randrange(1 << 30)))
ID = Column("id", "int", "int(11)")


# -- the option ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("id=100..200", KeyRange("id", "100", "200")),
        ("id=..500", KeyRange("id", None, "500")),
        ("id=100..", KeyRange("id", "100", None)),
        (" day = 2024-01-01 .. 2024-01-31 ", KeyRange("day", "2024-01-01", "2024-01-31")),
        ("price=1.5..2.25", KeyRange("price", "1.5", "2.25")),
        ("n=-5..-1", KeyRange("n", "-5", "-1")),
    ],
)
def test_key_range_parses_column_and_inclusive_bounds(text: str, want: KeyRange) -> None:
    assert parse_key_range(text) == want


@pytest.mark.parametrize("text", ["id", "id=100", "=1..2", "id=..", "100..200"])
def test_a_malformed_key_range_is_one_line_naming_the_option_and_the_form(text: str) -> None:
    with pytest.raises(ConfigException) as e:
        parse_key_range(text)
    message = str(e.value)
    assert message.startswith(f"--key-range {text!r}: ") and "\n" not in message
    assert "id=100..200" in message or "=100..200" in message


def test_key_range_describes_itself() -> None:
    assert parse_key_range("id=100..200").describe() == "100 ≤ id ≤ 200"
    assert parse_key_range("id=..500").describe() == "id ≤ 500"
    assert parse_key_range("id=100..").text == "id=100.."


# -- binding to a table ----------------------------------------------------------------------------
def test_the_range_binds_only_to_the_first_key_column_of_a_range_type() -> None:
    cols = [ID, Column("k", "text", "varchar(10)"), Column("v", "text", "text")]
    r = parse_key_range("id=100..200")
    bound = bind(r, "db.t", ["id", "k"], cols)
    assert (bound.low, bound.high) == (100, 200)
    with pytest.raises(RangeUnusable, match=r"id is a later key column of db.t \(its key: k, id\).*--key-range k="):
        bind(r, "db.t", ["k", "id"], cols)
    with pytest.raises(RangeUnusable, match=r"id is not a key column of db\.t"):
        bind(r, "db.t", ["k"], cols)
    with pytest.raises(RangeUnusable, match=r"no primary key and no sink.tables.db.t.keys; set sink.tables.db.t.keys"):
        bind(r, "db.t", [], cols)
    with pytest.raises(RangeUnusable, match="does not exist in the source database"):
        bind(r, "db.t", ["id"], [])
    with pytest.raises(RangeUnusable, match=r"db.t.k is varchar\(10\): a range needs an integer, decimal, date"):
        bind(parse_key_range("k=a..b"), "db.t", ["k"], cols)


@pytest.mark.parametrize(
    ("column", "text", "fix"),
    [
        (ID, "id=abc..", "100"),
        (ID, "id=1.5..", "100"),
        (Column("id", "date", "date"), "id=2024-13-01..", "2024-01-31"),
        (Column("id", "datetime", "datetime"), "id=2024-01-01T00:00:00+02:00..", "2024-01-31T12:00:00"),
        (Column("id", "decimal", "decimal(10,2)"), "id=NaN..", "10.5"),
        (Column("id", "uint64", "bigint unsigned"), "id=-1..", "100"),
    ],
)
def test_a_bound_that_is_not_a_value_of_the_column_is_one_line_with_an_example(
    column: Column, text: str, fix: str
) -> None:
    with pytest.raises(ConfigException) as e:
        bind(parse_key_range(text), "db.t", ["id"], [column])
    message = str(e.value)
    assert message.startswith(f"--key-range {text}: ") and "\n" not in message
    assert f"is not a value of db.t.id ({column.type}" in message and f"write it as e.g. {fix}" in message


def test_a_low_bound_above_the_high_one_is_refused() -> None:
    with pytest.raises(ConfigException, match="the low bound is above the high bound"):
        bind(parse_key_range("id=9..1"), "db.t", ["id"], [ID])


def test_the_truth_compares_canonical_values_of_each_kind() -> None:
    def holds(col: Column, text: str, value: Any, target: bool = False) -> bool:
        return bind(parse_key_range(f"id={text}"), "t", ["id"], [col]).holds(canon(col, value, target))

    assert holds(ID, "100..200", 100) and holds(ID, "100..200", 200) and not holds(ID, "100..200", 201)
    assert holds(ID, "..-3", -10) and not holds(ID, "..-3", 7)
    assert not bind(parse_key_range("id=1.."), "t", ["id"], [ID]).holds(None)
    big = Column("id", "uint64", "bigint unsigned")
    assert holds(big, f"{2**63}..", 2**64 - 1)  # canonical wraps to -1: the range is over the unsigned value
    assert holds(big, f"{2**63}..", -1, True) and not holds(big, f"..{2**63 - 1}", -1, True)
    dec = Column("id", "decimal", "decimal(10,2)")
    assert holds(dec, "1.5..2", decimal.Decimal("1.50")) and not holds(dec, "1.5..2", decimal.Decimal("2.01"))
    day = Column("id", "date", "date")
    assert holds(day, "2024-01-01..2024-01-31", datetime.date(2024, 1, 31))
    assert holds(day, "2024-01-01..2024-01-31", 19723, True)  # days since the epoch, as the lake may hold it
    assert not holds(day, "2024-01-01..", "infinity")  # unreadable values are in no range, on either side
    ms = Column("id", "datetime", "datetime(3)", unit="ms")
    assert holds(ms, "..2024-01-01T00:00:00", datetime.datetime(2024, 1, 1, 0, 0, 0, 900))  # truncated to ms
    tz = Column("id", "timestamptz", "timestamp")
    assert holds(tz, "2024-01-01T10:00:00+02:00..2024-01-01T08:00:00Z", "2024-01-01T08:00:00Z", True)
    assert holds(tz, "2024-01-01T08:00:00..", datetime.datetime(2024, 1, 1, 8))  # no offset: UTC


def test_the_source_query_takes_parameters_and_widens_what_canonical_truncates() -> None:
    r = bind(parse_key_range("id=100..200"), "t", ["id"], [ID])
    assert r.source_sql("`id`", "mysql") == ("`id` >= %s AND `id` <= %s", [100, 200])
    assert bind(parse_key_range("id=..5"), "t", ["id"], [ID]).source_sql('"id"', "postgres") == ('"id" <= %s', [5])
    ms = Column("id", "datetime", "datetime(3)", unit="ms")
    _, params = bind(parse_key_range("id=..2024-01-01T00:00:00"), "t", ["id"], [ms]).source_sql("`id`", "mysql")
    assert params == [datetime.datetime(2024, 1, 1, 0, 0, 0, 1000)]
    tz = Column("id", "timestamptz", "timestamptz")
    _, params = bind(parse_key_range("id=2024-01-01T10:00:00+02:00.."), "t", ["id"], [tz]).source_sql("x", "postgres")
    assert params == [datetime.datetime(2024, 1, 1, 8, tzinfo=datetime.UTC)]


# -- what the lake reads: a superset of the truth, exact where the types agree ---------------------
def _lake_values(rng: random.Random, n: int) -> dict[str, tuple[Column, pa.DataType, list[Any]]]:
    """Per case: the source column, the lake's type for it (as the sink writes it) and random values."""
    base = datetime.datetime(2024, 1, 1)
    return {
        "int": (ID, pa.int32(), [rng.randrange(-1000, 1000) for _ in range(n)]),
        "bigint": (Column("id", "int", "bigint"), pa.int64(), [rng.randrange(-(2**62), 2**62) for _ in range(n)]),
        "uint64": (
            Column("id", "uint64", "bigint unsigned"),
            pa.int64(),
            [v - 2**64 if v >= 2**63 else v for v in (rng.randrange(2**64) for _ in range(n))],
        ),
        "decimal": (
            Column("id", "decimal", "decimal(10,2)"),
            pa.decimal128(10, 2),
            [decimal.Decimal(rng.randrange(-100000, 100000)).scaleb(-2) for _ in range(n)],
        ),
        "double": (
            Column("id", "decimal", "decimal(30,10)", decimal_mode="double"),
            pa.float64(),
            [rng.uniform(-1000, 1000) for _ in range(n)],
        ),
        "date": (
            Column("id", "date", "date"),
            pa.date32(),
            [datetime.date(2020, 1, 1) + datetime.timedelta(days=rng.randrange(2000)) for _ in range(n)],
        ),
        "datetime_ms": (
            Column("id", "datetime", "datetime(3)", unit="ms"),
            pa.timestamp("ms"),
            [base + datetime.timedelta(milliseconds=rng.randrange(10**9)) for _ in range(n)],
        ),
        "timestamptz": (
            Column("id", "timestamptz", "timestamp(6)"),
            pa.timestamp("us", tz="UTC"),
            [
                (base + datetime.timedelta(microseconds=rng.randrange(10**12))).replace(tzinfo=datetime.UTC)
                for _ in range(n)
            ],
        ),
    }


def _bound_text(col: Column, values: list[Any], rng: random.Random) -> str:
    """A random bound near the values (sometimes one of them exactly, so the edges are exercised)."""
    v = rng.choice(values)
    if col.kind == "uint64":
        return str(v + 2**64 if v < 0 else v)
    if col.kind == "decimal" and col.decimal_mode == "double":
        return repr(v) if rng.random() < 0.5 else str(decimal.Decimal(v).quantize(decimal.Decimal("0.001")))
    between = rng.random() < 0.5  # a bound finer than the stored values: between two of them
    if isinstance(v, datetime.datetime):
        return (v + datetime.timedelta(microseconds=rng.randrange(1, 1000) if between else 0)).isoformat()
    return str(v) + ("5" if between and col.kind == "decimal" else "")


@pytest.mark.parametrize("case", ["int", "bigint", "uint64", "decimal", "double", "date", "datetime_ms", "timestamptz"])
def test_the_delta_and_iceberg_filters_hold_every_key_in_the_range(case: str, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    rng = random.Random(f"{SEED}-{case}")
    print(f"seed {SEED}")
    col, arrow_type, values = _lake_values(rng, 400)[case]
    table = pa.table({"id": pa.array(values, arrow_type), "n": pa.array(range(len(values)), pa.int64())})
    lake = tmp_path / "delta"
    for i in range(4):  # four files: their statistics let the filter skip some
        write_deltalake(str(lake), table.slice(i * 100, 100), mode="append")
    dataset = delta_dataset(DeltaTable(str(lake)), str(lake))
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("n")
    ice = catalog.create_table(("n", "t"), schema=table.schema)
    ice.append(table)
    for _ in range(12):
        low, high = sorted([_bound_text(col, values, rng), _bound_text(col, values, rng)], key=_sort_key(col))
        shape = rng.choice(["both", "low", "high"])
        given = KeyRange("id", low if shape != "high" else None, high if shape != "low" else None)
        r = bind(given, "t", ["id"], [col])
        truth = {n for n, v in zip(table.column("n").to_pylist(), values, strict=True) if r.holds(canon(col, v, True))}
        delta = set(dataset.to_table(columns=["n"], filter=r.arrow_filter(arrow_type)).column("n").to_pylist())
        iceberg_filter = r.iceberg_filter(ice.schema().as_arrow().field("id").type)
        iceberg = set(ice.scan(row_filter=iceberg_filter, selected_fields=("n",)).to_arrow().column("n").to_pylist())
        assert truth <= delta and truth <= iceberg, (given, sorted(truth - delta)[:3], sorted(truth - iceberg)[:3])
        if case not in ("double",):  # the stored values compare like the canonical ones: exact
            assert delta == truth == iceberg, given


def _sort_key(col: Column) -> Any:
    if col.kind in ("int", "uint64"):
        return int
    if col.kind == "decimal":
        return decimal.Decimal
    return str


def test_a_delta_read_in_a_range_skips_the_files_outside_it(tmp_path: Path) -> None:
    lake = tmp_path / "t"
    for i in range(5):
        ids = range(i * 1000, (i + 1) * 1000)
        write_deltalake(
            str(lake),
            pa.table({"id": pa.array(ids, pa.int32()), "v": [f"v{k}" for k in ids], "__deleted": [False] * 1000}),
            mode="append",
        )
    r = bind(parse_key_range("id=1500..2600"), "db.t", ["id"], [ID])
    scope = TableScope([ID], r)
    dataset = delta_dataset(DeltaTable(str(lake)), str(lake))
    assert len(list(dataset.get_fragments(filter=scope.arrow_filter(dataset.schema)))) == 2
    rows = list(DeltaReader(str(tmp_path)).rows("t", ["id", "v"], scope))
    assert sorted(rows) == [(k, f"v{k}") for k in range(1500, 2601)]


# -- the sample's rank -----------------------------------------------------------------------------
def test_the_rank_is_md5_of_the_seed_and_the_key_parts() -> None:
    import hashlib

    assert rank_parts(7, ["12"]) == hashlib.md5(b"7\x1f12").hexdigest()
    assert rank_parts(7, ["a", None]) == hashlib.md5(b"7\x1fa\x1f\x01").hexdigest()
    assert rank(7, "12") == rank_parts(7, ["12"])
    assert rank(7, _key(["a", "b"]), 2) == rank_parts(7, ["a", "b"])
    assert rank(7, "12") != rank(8, "12")


def test_a_scope_is_one_predicate_for_compare_and_for_the_lake_batches() -> None:
    keys = [Column("id", "int", "int"), Column("k", "text", "varchar(5)")]
    rng = random.Random(SEED)
    rows = [(rng.randrange(1000), rng.choice(["a", "b", "ü", None])) for _ in range(2000)]
    canonical = [_key([canon(keys[0], i), k]) for i, k in rows]
    picked = sample_keys(canonical, 300, 11, width=2)
    assert isinstance(picked, KeySample) and picked.size == 300
    scope = TableScope(keys, bind(parse_key_range("id=200..700"), "t", ["id", "k"], keys), picked)
    batch = pa.record_batch({"id": pa.array([i for i, _ in rows], pa.int32()), "k": [k for _, k in rows]})
    mask = scope.batch_mask(batch)
    assert mask is not None
    assert mask.to_pylist() == [k in scope for k in canonical]
    assert 0 < sum(mask.to_pylist()) < 300
    assert all(200 <= i <= 700 for (i, _), kept in zip(rows, mask.to_pylist(), strict=True) if kept)
    only = TableScope(keys, keys={canonical[0]})
    assert only.batch_mask(batch).to_pylist() == [k == canonical[0] for k in canonical]
    assert TableScope(keys).batch_mask(batch) is None

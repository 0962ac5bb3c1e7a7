"""Audit of `cdc verify` and `cdc status`: cases where they reported a wrong "0 differences",
a false difference, or hid tables. Each test failed before its fix."""

from __future__ import annotations

import base64
import decimal
import json
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner, Result
from deltalake import write_deltalake

from cdc.cli.verify import verify
from cdc.jobs.load import load_job
from cdc.jobs.status import collect
from cdc.jobs.verify.compare import TableResult, compare
from cdc.jobs.verify.normalize import Column, canon
from tests.jobs import test_verify as verify_tests
from tests.jobs.test_ops import _job as _ops_job
from tests.jobs.test_ops import _state as _ops_state


def _verify(*args: str) -> Result:
    return CliRunner().invoke(verify, ["--quiet", *args], catch_exceptions=False)


def _meta(n: int) -> dict[str, pa.Array]:
    return {
        "__op": pa.array(["r"] * n),
        "__seq": pa.array([i.to_bytes(32, "big") for i in range(n)], pa.binary()),
        "__source_ts_ms": pa.array([0] * n, pa.int64()),
        "__deleted": pa.array([False] * n),
    }


def _pg_job(tmp_path: Path, server, tables: str = "") -> Path:
    return verify_tests._pg_job(tmp_path, server, tables, name="audit", prefix="pga")


def test_decimals_beyond_28_digits_are_compared_exactly() -> None:
    # NUMERIC(60,3): the lake held a 28-digit rounding of the value and verify said 0 differences,
    # because Decimal.normalize() and scaleb() round to the default context's 28 digits.
    col = Column("n", "decimal", "numeric(60,3)")
    exact = decimal.Decimal("12345678901234567890123456789012345678.123")
    assert canon(col, exact) == "12345678901234567890123456789012345678.123"
    assert canon(col, exact) != canon(col, "1.234567890123456789012345679E+37", True)
    unscaled = 12345678901234567890123456789012345678123
    vsd = {"scale": 3, "value": base64.b64encode(unscaled.to_bytes(17, "big", signed=True)).decode()}
    assert canon(col, json.dumps(vsd), True) == canon(col, exact)  # VariableScaleDecimal, exactly
    assert canon(col, decimal.Decimal("1.50")) == canon(col, "1.5", True)  # trailing zeros still agree


def test_bigint_unsigned_in_long_mode_compares_as_the_connector_emits_it() -> None:
    # Debezium's default bigint.unsigned.handling.mode=long emits 2^64-1 as -1: a false difference
    # before; the mapping is one-to-one, so a real change still shows.
    cols = [Column("id", "int", "int"), Column("ub", "uint64", "bigint(20) unsigned")]
    source = [(1, 2**64 - 1), (2, 2**63), (3, 5), (4, 2**64 - 2)]
    target = [(1, -1), (2, -(2**63)), (3, 5), (4, -1)]
    r = compare(TableResult("s.t", "t"), cols, ["id"], lambda: iter(source), lambda: iter(target), 10)
    assert (r.changed, [d.key["id"] for d in r.samples]) == (1, ["4"])
    assert r.samples[0].columns == [("ub", "-2", "-1")]


def test_sink_tables_options_hide_no_table_and_targets_are_named_as_the_sink_names_them(
    tmp_path: Path, postgres_db
) -> None:
    sql = postgres_db.connect()
    for t in ("opts", "other", "never", "empty"):
        sql.execute(f"CREATE TABLE {t}(id int PRIMARY KEY, v text)")
    sql.execute("INSERT INTO opts VALUES (1, 'a')")
    sql.execute("INSERT INTO other VALUES (1, 'source')")
    sql.execute("INSERT INTO never VALUES (1, 'x')")
    lake = tmp_path / "lake"
    row = {"id": pa.array([1], pa.int32()), **_meta(1)}
    # The sink sanitizes a configured target as it does a topic name: `my.opts-t` → `my_opts_t`.
    write_deltalake(str(lake / "my_opts_t"), pa.table({**row, "v": ["a"]}))
    write_deltalake(str(lake / "pga_public_other"), pa.table({**row, "v": ["LAKE"]}))
    job = _pg_job(tmp_path, postgres_db, "  tables:\n    public.opts: {target: my.opts-t}\n")
    res = _verify(str(job), "--json")
    assert res.exit_code == 1, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    got = {t["source"]: (t["target"].rsplit("/", 1)[-1], t["missing"], t["changed"]) for t in doc["tables"]}
    assert got == {
        "public.opts": ("my_opts_t", 0, 0),
        "public.other": ("pga_public_other", 0, 1),  # not named in sink.tables, but applied by the sink
        "public.never": ("pga_public_never", 1, 0),  # rows in the source, no table in the lake
    }
    assert doc["not_checked"] == ["public.empty"]  # no rows, so no events: no table yet is right
    res = _verify(str(job), "--table", "public.other")
    assert res.exit_code == 1 and "changed: id=1: v: source source, target LAKE" in res.stdout


def test_postgres_infinite_timestamps_do_not_stop_verify(tmp_path: Path, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t(id int PRIMARY KEY, tz timestamptz, d date)")
    sql.execute("INSERT INTO t VALUES (1, 'infinity', '-infinity'), (2, '2024-01-01 00:00:00+00', '2024-01-01')")
    write_deltalake(
        str(tmp_path / "lake" / "pga_public_t"),
        pa.table(
            {
                "id": pa.array([1, 2], pa.int32()),
                "tz": ["infinity", "2024-01-01T00:00:00Z"],
                "d": ["-infinity", "2024-01-01"],
                **_meta(2),
            }
        ),
    )
    res = _verify(str(_pg_job(tmp_path, postgres_db)))
    assert res.exit_code == 0, res.stdout + res.stderr  # was exit 2: "timestamp too large (after year 10K)"
    assert "2 source rows, 2 target rows, 0 differences" in res.stdout


def test_status_lists_every_table_topic_not_only_sink_tables(tmp_path: Path) -> None:
    job_file = _ops_job(tmp_path)
    job_file.write_text(job_file.read_text() + "  tables:\n    shop.customers: {keys: [id]}\n")
    _ops_state(job_file)  # the topic srv.shop.items: 3 changes, 2 applied
    status = collect(load_job(job_file, inspect_only=True), now_ms=10_000)
    assert [(t.table, t.applied_events, t.pending_events) for t in status.tables] == [("shop.items", 2, 1)]


def test_tables_routed_by_regexrouter_are_looked_for_under_their_new_name() -> None:
    """A job whose RegexRouter renames topics: the sink names the tables after the new topics,
    so verify must too, or every row of those tables reads as missing."""
    from cdc.jobs.verify.job import topic_router

    config = {
        "transforms": "route,other",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": r"shop\.inv\.(.*)",
        "transforms.route.replacement": "lake.$1",
        "transforms.route.predicate": "orders",
        "transforms.other.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.other.static.field": "origin",
        "transforms.other.static.value": "x",
        "predicates": "orders",
        "predicates.orders.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.orders.pattern": r".*\.orders",
    }
    route = topic_router(config)
    assert route("shop.inv.orders") == "lake.orders"
    assert route("shop.inv.items") == "shop.inv.items"  # the predicate does not match: unchanged
    assert topic_router({})("shop.inv.orders") == "shop.inv.orders"

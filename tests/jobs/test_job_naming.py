"""Job ergonomics (issue 24): `sink.table.name.format` and per-table targets, `mode`/`delete.mode`
set once for the job and overridable per table, and `cdc verify` on a job that never ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.jobs.load import validate_job_text
from cdc.jobs.paths import format_path
from cdc.jobs.sink_config import TableNamer, sink_config
from cdc.jobs.spec import JobSpec
from cdc_spark.apply.config import SinkConfig
from tests.mysql.harness import connector_props
from tests.support.examples import examples
from tests.support.proc import run_cdc

_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_PIECE = st.sampled_from(["${db}", "${schema}", "${table}", "${prefix}", "${topic}", "_", "raw_", "x"])


def _spec(sink: dict, include: str | None = None, prefix: str = "p") -> JobSpec:
    source = {"connector.class": "mysql", "topic.prefix": prefix}
    if include is not None:
        source["table.include.list"] = include
    return JobSpec("job", source, [], {}, {"type": "delta", "path": "/lake", **sink})


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.tuples(_NAME, _NAME), min_size=1, max_size=5, unique=True),
    st.lists(_PIECE, min_size=1, max_size=4),
    _NAME,
    st.data(),
)
def test_the_sink_names_each_table_as_the_format_says(tables, pieces, prefix, data) -> None:
    """Whatever the format, the Spark sink (SinkConfig.table_for, the code that names the tables
    it writes) gives each listed table the name the job's format and targets say, and `cdc verify`
    (TableNamer) looks for the same name."""
    fmt = "".join(pieces)
    names = [f"{db}.{t}" for db, t in tables]
    targets = {n: data.draw(_NAME, label=f"target {n}") for n in names if data.draw(st.booleans(), label=n)}
    listed = [n for n in names if data.draw(st.booleans(), label=f"in sink.tables {n}") or n in targets]
    rest = [n for n in names if n not in listed]
    job = _spec(
        {"table.name.format": fmt, "tables": {n: ({"target": targets[n]} if n in targets else {}) for n in listed}},
        include=",".join(rest) or None,
        prefix=prefix,
    )
    sink = SinkConfig.parse(sink_config(job))
    namer = TableNamer(job)
    for name in names:
        db, table = name.split(".")
        topic = f"{prefix}.{name}"
        expected = targets.get(name) or (
            fmt.replace("${db}", db)
            .replace("${schema}", db)
            .replace("${table}", table)
            .replace("${prefix}", prefix)
            .replace("${topic}", topic)
        )
        assert sink.table_for(topic) == expected.replace(".", "_")
        assert namer.target(name) == expected


def test_a_format_without_db_also_names_tables_the_job_does_not_know() -> None:
    """${table}/${prefix}/${topic} need no table list: the sink applies the format itself, so a
    table created while the job runs is named the same way."""
    sink = SinkConfig.parse(sink_config(_spec({"table.name.format": "${prefix}_${table}"}, prefix="shop")))
    assert sink.table_for("shop.inventory.new_table") == "shop_new_table"
    # ${db} only the job can fill in: the tables the connector captures are named up front.
    conf = sink_config(_spec({"table.name.format": "${db}__${table}"}), captured=["a.b", "c.d"])
    assert conf["table.names"] == {"p.a.b": "a__b", "p.c.d": "c__d"}


@settings(max_examples=examples(100), deadline=None)
@given(
    st.sampled_from([None, "scd1", "scd2"]),
    st.sampled_from([None, "hard", "soft"]),
    st.lists(
        st.tuples(_NAME, st.sampled_from([None, "scd1", "scd2"]), st.sampled_from([None, "hard", "soft"])),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t[0],
    ),
)
def test_mode_is_set_for_the_job_and_each_table_may_override_it(job_mode, job_delete, tables) -> None:
    """Whatever the job-wide and per-table values, the Spark sink (SinkConfig.mode_for /
    delete_mode_for, what the engine and targets apply) gives each table its own value, else
    the job's, else the default; the source forwards every event while any table keeps history."""
    sink: dict = {"tables": {}}
    if job_mode:
        sink["mode"] = job_mode
    if job_delete:
        sink["delete.mode"] = job_delete
    for name, mode, delete in tables:
        sink["tables"][f"s.{name}"] = {k: v for k, v in (("mode", mode), ("delete.mode", delete)) if v}
    config = SinkConfig.parse(sink_config(_spec(sink)))
    modes = set()
    for name, mode, delete in tables:
        table = config.table_for(f"p.s.{name}")
        assert config.mode_for(table) == (mode or job_mode or "scd1")
        assert config.delete_mode_for(table) == (delete or job_delete or "hard")
        modes.add(config.mode_for(table))
    assert config.mode_for("not_listed") == (job_mode or "scd1")
    assert config.keeps_only_latest == ("scd2" not in modes and job_mode != "scd2")


def test_a_table_override_is_refused_only_where_the_target_cannot_keep_it() -> None:
    base = "name: j\nsource: {connector.class: mysql, topic.prefix: p}\nsink:\n  type: iceberg\n  path: /lake\n"
    text = base + "  tables:\n    s.a: {delete.mode: soft}\n    s.b: {mode: scd1}\n"
    job, problems = validate_job_text(text, check_connectivity=False, inspect_only=True)
    assert job is not None and not [p for p in problems if not p.warning]
    assert sink_config(job)["table.delete.modes"] == {"p.s.a": "soft"}
    job, problems = validate_job_text(text + "    s.c: {mode: scd2}\n", "job.yaml", check_connectivity=False)
    assert job is None
    line = problems[0].render("job.yaml")
    assert line.startswith(f"job.yaml:9: {format_path(('sink', 'tables', 's.c', 'mode'))}: mode=scd2 keeps history")
    assert "\n" not in line and len(line) < 200


def test_an_unknown_placeholder_is_refused_with_the_ones_there_are() -> None:
    text = "name: j\nsource: {connector.class: mysql}\nsink: {type: delta, path: /l, table.name.format: '${x}_y'}\n"
    job, problems = validate_job_text(text, "job.yaml", check_connectivity=False, inspect_only=True)
    assert job is None
    assert "${db} (or ${schema}), ${table}" in problems[0].render("job.yaml")


@pytest.mark.slow
def test_run_names_tables_by_the_job_format_and_verify_says_when_it_never_ran(tmp_path: Path, mariadb_db) -> None:
    db = mariadb_db.database
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        for table in ("customers", "orders", "notes"):
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(20))")
            cur.execute(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, '{table}{i}')" for i in range(1, 7)))
        cur.execute("DELETE FROM notes WHERE id = 6")
    # No table.include.list: `cdc run` asks the connector which tables it captures to name them.
    source = "\n".join(f"  {k}: '{v}'" for k, v in connector_props(mariadb_db).items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: shop
source:
{source}
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
  table.name.format: 'lake_${{db}}_${{table}}'
  delete.mode: soft
  tables:
    {db}.orders: {{target: orders}}
"""
    )
    res = run_cdc("verify", str(job), "--quiet")
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.startswith("error: job 'shop' has not run yet: its sink has committed no batch and none of its")
    assert f"run `cdc run {job} --until-caught-up` first" in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "state").exists()  # verify reads, it creates nothing

    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    lake = {p.name for p in (tmp_path / "lake").iterdir() if not p.name.startswith("_")}
    assert lake == {"orders", f"lake_{db}_customers", f"lake_{db}_notes"}
    notes = DeltaTable(str(tmp_path / "lake" / f"lake_{db}_notes")).to_pyarrow_table().to_pylist()
    assert len(notes) == 5 and not any(r["__deleted"] for r in notes)  # the snapshot: 5 rows, none deleted
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("DELETE FROM customers WHERE id = 1")
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    customers = DeltaTable(str(tmp_path / "lake" / f"lake_{db}_customers")).to_pyarrow_table().to_pylist()
    assert [r["id"] for r in customers if r["__deleted"]] == [1]  # the job-wide delete.mode: soft
    res = run_cdc("verify", str(job), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{db}.customers → " in res.stdout and "3 tables verified: 0 differences" in res.stdout

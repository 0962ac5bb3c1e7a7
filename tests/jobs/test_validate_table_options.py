"""`cdc validate` and the job's sink config for AUTO CDC's per-table options: column_list /
except_column_list, ignore_null_updates (per table and job-wide), the SCD2 history lists.

Offline: the options' shapes, the lists that exclude each other, a history list on a table that
keeps none, a list dropping a key the job names, each refused in one line at its YAML path.
Online (a real MariaDB and PostgreSQL): each named column is looked up in the source table, and
the primary key must stay."""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cdc.cli.jobs import validate
from cdc.jobs.load import validate_job_text
from cdc.jobs.sink_config import sink_config
from cdc.runtime.plugins import PluginRegistry
from cdc_spark.apply import SinkConfig
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props as mysql_props
from tests.postgres.harness import connector_props as pg_props
from tests.rig import MariaDbServer, PostgresServer

JOB = """\
name: shop
source:
  connector.class: mysql
  database.hostname: 127.0.0.1
  database.user: cdc
  database.server.id: 5401
  topic.prefix: shop
transport:
  state.dir: {tmp}/state
sink:
  type: {type}
  path: {tmp}/lake
{extra}  tables:
    shop.orders: {{{options}}}
"""


@cache
def _registry() -> PluginRegistry:
    return PluginRegistry.discover()


def _offline(tmp_path: Path, options: str, sink_type: str = "delta", extra: str = "") -> tuple[Any, list[str]]:
    text = JOB.format(tmp=tmp_path, type=sink_type, options=options, extra=extra)
    job, problems = validate_job_text(text, "job.yaml", check_connectivity=False, registry=_registry())
    return job, [" ".join(p.render("job.yaml").split()) for p in problems if not p.warning]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("options", "where", "says"),
    [
        (
            "column_list: [id, name], except_column_list: [note]",
            "sink.tables['shop.orders'].except_column_list",
            "column_list and except_column_list exclude each other",
        ),
        (
            "track_history_column_list: [name]",
            "sink.tables['shop.orders'].track_history_column_list",
            "this table's mode is scd1: drop track_history_column_list, or set mode: scd2",
        ),
        (
            "mode: scd2, track_history_column_list: [a], track_history_except_column_list: [b]",
            "sink.tables['shop.orders'].track_history_except_column_list",
            "exclude each other",
        ),
        (
            "keys: [id], column_list: [name]",
            "sink.tables['shop.orders'].column_list",
            "leaves out key column(s) id; the sink applies every change by its key, so the key stays: add id",
        ),
        (
            "keys: [id], except_column_list: [id, note]",
            "sink.tables['shop.orders'].except_column_list",
            "remove id from except_column_list",
        ),
        (
            "mode: scd2, column_list: [id, name], track_history_column_list: [qty]",
            "sink.tables['shop.orders'].track_history_column_list",
            "names qty, which column_list leaves out of the target",
        ),
        ("ignore_null_updates: yes please", "sink.tables['shop.orders'].ignore_null_updates", "expected boolean"),
        ("column_list: []", "sink.tables['shop.orders'].column_list", "should be non-empty"),
    ],
)
def test_a_table_option_the_sink_cannot_honour_is_one_line_at_its_path(
    tmp_path: Path, options: str, where: str, says: str
) -> None:
    job, errors = _offline(tmp_path, options)
    assert job is None and len(errors) == 1, errors
    assert where in errors[0] and says in errors[0], errors[0]


@pytest.mark.unit
def test_the_parquet_changelog_refuses_them_naming_the_key(tmp_path: Path) -> None:
    _, errors = _offline(tmp_path, "ignore_null_updates: true", "parquet")
    assert len(errors) == 1 and "sink.tables['shop.orders'].ignore_null_updates" in errors[0]
    assert "parquet changelog appends every event" in errors[0]
    _, errors = _offline(tmp_path, "target: o", "parquet", "  ignore_null_updates: true\n")
    assert len(errors) == 1 and "sink.ignore_null_updates: ignore_null_updates: the parquet changelog" in errors[0]


@pytest.mark.unit
def test_a_misspelled_option_is_told_its_name(tmp_path: Path) -> None:
    _, errors = _offline(tmp_path, "ignore_null_update: true")
    assert len(errors) == 1 and "did you mean 'ignore_null_updates'?" in errors[0]


@pytest.mark.unit
def test_the_options_reach_the_sink_by_topic(tmp_path: Path) -> None:
    options = "except_column_list: [note], ignore_null_updates: false"
    job, errors = _offline(tmp_path, options, extra="  ignore_null_updates: true\n")
    assert not errors
    conf = sink_config(job)
    assert conf["ignore.null.updates"] == "true"
    assert conf["table.options"] == {"shop.shop.orders": {"except_column_list": ["note"], "ignore_null_updates": False}}
    sink = SinkConfig.parse(conf)
    assert sink.options_for("shop_shop_orders").except_column_list == ("note",)
    assert not sink.options_for("shop_shop_orders").ignore_null_updates
    assert sink.options_for("shop_shop_other").ignore_null_updates  # the job's default


@pytest.mark.unit
def test_schema_change_behavior_is_checked_and_reaches_the_sink(tmp_path: Path) -> None:
    _, errors = _offline(tmp_path, "schema.change.behavior: strict")
    assert len(errors) == 1 and "sink.tables['shop.orders']['schema.change.behavior']" in errors[0], errors
    assert "exception" in errors[0] and "lenient" in errors[0]
    _, errors = _offline(tmp_path, "target: o", extra="  schema.change.behavior: evolv\n")
    assert len(errors) == 1 and "sink['schema.change.behavior']" in errors[0] and "evolve" in errors[0], errors
    job, errors = _offline(tmp_path, "schema.change.behavior: evolve", extra="  schema.change.behavior: exception\n")
    assert not errors
    sink = SinkConfig.parse(sink_config(job))
    assert sink.options_for("shop_shop_orders").schema_change_behavior == "evolve"
    assert sink.options_for("shop_shop_other").schema_change_behavior == "exception"
    # The parquet changelog has no table schema to change: the option is only checked there.
    _, errors = _offline(tmp_path, "schema.change.behavior: ignore", "parquet")
    assert not errors


# -- online: the source's own columns --------------------------------------------------------------
def _validate(tmp_path: Path, job: Path) -> tuple[int, list[str]]:
    started = time.monotonic()
    res = CliRunner().invoke(validate, [str(job)], catch_exceptions=False)
    assert time.monotonic() - started < 60
    return res.exit_code, [" ".join(line.split()) for line in res.output.splitlines() if line.strip()]


@pytest.fixture
def shop(mariadb_db: MariaDbServer) -> MariaDbServer:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE orders (id INT PRIMARY KEY, customer INT, note TEXT, secret TEXT)")
    return mariadb_db


@pytest.mark.integration
def test_mysql_columns_are_looked_up_in_the_table(tmp_path: Path, shop: MariaDbServer) -> None:
    table = f"{shop.database}.orders"

    def job(options: str) -> Path:
        return mysql_delta_job(tmp_path, "shop", mysql_props(shop), {table: options})

    code, lines = _validate(tmp_path, job("except_column_list: [secrt]"))
    assert code == 2 and len(lines) == 1, lines
    assert f"sink.tables['{table}'].except_column_list[0]" in lines[0]
    assert "has no column 'secrt'; did you mean 'secret'?" in lines[0] and "id, customer, note, secret" in lines[0]
    code, lines = _validate(tmp_path, job("column_list: [customer, note]"))  # the primary key is id
    assert code == 2 and f"sink.tables['{table}'].column_list" in lines[0] and "add id to column_list" in lines[0]
    code, lines = _validate(tmp_path, job("except_column_list: [secret], ignore_null_updates: true"))
    assert code == 0, lines


@pytest.fixture
def bank(postgres_db: PostgresServer) -> PostgresServer:
    with postgres_db.connect() as conn:
        conn.execute('CREATE TABLE accounts (id int PRIMARY KEY, "Balance" numeric, owner text)')
    return postgres_db


@pytest.mark.integration
def test_postgres_columns_are_looked_up_exactly(tmp_path: Path, bank: PostgresServer) -> None:
    props = pg_props(bank)
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items() if k != "slot.drop.on.stop")

    def job(options: str) -> Path:
        path = tmp_path / "job.yaml"
        path.write_text(
            f"name: bank\nsource:\n{source}\ntransport:\n  state.dir: {tmp_path / 'state'}\n"
            f"sink:\n  type: delta\n  path: {tmp_path / 'lake'}\n  tables:\n    public.accounts: {{{options}}}\n"
        )
        return path

    code, lines = _validate(tmp_path, job("mode: scd2, track_history_column_list: [balance]"))
    assert code == 2 and len(lines) == 1, lines
    assert "sink.tables['public.accounts'].track_history_column_list[0]" in lines[0]
    assert "no column 'balance'; did you mean 'Balance'?" in lines[0]
    code, lines = _validate(tmp_path, job("mode: scd2, track_history_column_list: [Balance]"))
    assert code == 0, lines

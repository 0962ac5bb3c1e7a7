"""`cdc run job.yaml --until-caught-up`: MariaDB → MySQL connector → embedded log → Spark → Delta."""

from __future__ import annotations

import decimal
import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.support.proc import run_cdc

pytestmark = pytest.mark.slow  # a minute or more: `pytest -m 'not slow'` for a quick local run


def _job(tmp_path: Path, mariadb_db) -> Path:
    tables = {f"{mariadb_db.database}.items": "keys: [id], target: items, partition.by: [kind]"}
    return mysql_delta_job(tmp_path, "shop", connector_props(mariadb_db), tables)


def _source_rows(server) -> dict[int, tuple]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, name, price FROM items")
        return {r[0]: (r[1], r[2]) for r in cur.fetchall()}


def _lake_rows(tmp_path: Path, db: str) -> dict[int, tuple]:
    table = DeltaTable(str(tmp_path / "lake" / "items"))  # the job's `target`
    assert table.metadata().partition_columns == ["kind", "__bucket"]
    return {r["id"]: (r["name"], r["price"]) for r in table.to_pyarrow_table().to_pylist() if not r["__deleted"]}


def test_run_until_caught_up_twice(tmp_path: Path, mariadb_db) -> None:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2), kind CHAR(1))"
        )
        cur.execute(
            "INSERT INTO items VALUES " + ", ".join(f"({i}, 'item{i}', {i}.25, '{'abc'[i % 3]}')" for i in range(1, 51))
        )
    job = _job(tmp_path, mariadb_db)
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "caught up" in res.stderr
    assert "sink: micro-batch 0 applied; " in res.stderr  # progress while the backlog is applied
    assert "(py4j." not in res.stderr  # the gateway's INFO chatter (one line per callback) stays out
    assert _lake_rows(tmp_path, mariadb_db.database) == _source_rows(mariadb_db)

    # A second run resumes from the stored offsets and the checkpoint: changes only.
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("UPDATE items SET price = price + 1 WHERE id <= 10")
        cur.execute("DELETE FROM items WHERE id > 40")
        cur.execute("UPDATE items SET id = 100 WHERE id = 20")  # primary-key change
        cur.execute("INSERT INTO items VALUES (200, 'new', 9.99, 'a')")
        cur.execute("UPDATE items SET kind = 'b' WHERE id = 3")  # moves the row to another partition
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "sink: micro-batch 1 applied; " in res.stderr and "micro-batch 0" not in res.stderr
    source = _source_rows(mariadb_db)
    assert source[1] == ("item1", decimal.Decimal("2.25")) and 41 not in source
    assert _lake_rows(tmp_path, mariadb_db.database) == source

    # `cdc status` on the real state: everything in the log is applied, and up to where.
    res = run_cdc("status", str(job), "--json")
    assert res.returncode == 0, res.stderr
    status = json.loads(res.stdout)
    (table,) = status["tables"]
    assert table["table"] == f"{mariadb_db.database}.items" and table["pending_events"] == 0
    assert table["applied_events"] == table["log_events"] > 50 and table["lag_ms"] == 0
    assert table["applied_position"].startswith("mysql-bin.") and status["checkpoint_batch"] == 1
    assert status["source_offset"]["file"].startswith("mysql-bin.") and not status["running"]


def test_run_until_caught_up_from_postgres(tmp_path: Path, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE accounts(id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2))")
    sql.execute("INSERT INTO accounts SELECT g, 'owner' || g, g * 10 FROM generate_series(1, 30) g")
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: bank
source:
  connector.class: postgres
  database.hostname: {postgres_db.host}
  database.port: {postgres_db.port}
  database.user: {postgres_db.user}
  database.dbname: {postgres_db.dbname}
  topic.prefix: bank
  slot.name: bank_slot
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
"""
    )
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    sql.execute("UPDATE accounts SET balance = 0 WHERE id <= 5")
    sql.execute("DELETE FROM accounts WHERE id > 25")
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    source = {r[0]: (r[1], r[2]) for r in sql.execute("SELECT id, owner, balance FROM accounts").fetchall()}
    lake = DeltaTable(str(tmp_path / "lake" / "bank_public_accounts")).to_pyarrow_table().to_pylist()
    assert {r["id"]: (r["owner"], r["balance"]) for r in lake if not r["__deleted"]} == source

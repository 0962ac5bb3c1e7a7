"""Issue 16, defect 1: a VARCHAR primary key through `cdc run --until-caught-up` into Delta.

deltalake ≥ 1.6 writes MERGE output whose Parquet files carry string_view in their Arrow
schema, while the table's dataset declares string; pyarrow then failed to prune those files
by statistics for the sink's key lookups (tombstones, stored rows), and from the third run
on every run exited 1. These are the issue's steps, plus a fourth round.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.support.proc import run_cdc

pytestmark = pytest.mark.slow  # four `cdc run`s, each starting Spark


def _job(tmp_path: Path, mariadb_db) -> Path:  # type: ignore[no-untyped-def]
    tables = {f"{mariadb_db.database}.items": "target: items"}
    return mysql_delta_job(tmp_path, "vkeys", connector_props(mariadb_db), tables)


def _source_rows(server) -> dict[str, tuple]:  # type: ignore[no-untyped-def]
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, name, qty FROM items")
        return {r[0]: (r[1], r[2]) for r in cur.fetchall()}


def _lake_rows(tmp_path: Path) -> dict[str, tuple]:
    table = DeltaTable(str(tmp_path / "lake" / "items"))
    rows = [r for r in table.to_pyarrow_table().to_pylist() if not r["__deleted"]]
    assert len({r["id"] for r in rows}) == len(rows), "a key is stored twice"
    return {r["id"]: (r["name"], r["qty"]) for r in rows}


def _run(job: Path, round_: int) -> None:
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, f"run {round_} exited {res.returncode}:\n{res.stderr[-4000:]}"


def test_varchar_key_survives_every_run(tmp_path: Path, mariadb_db) -> None:  # type: ignore[no-untyped-def]
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id VARCHAR(40) PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT)")
        cur.execute("INSERT INTO items VALUES " + ", ".join(f"('key-{i}', 'item{i}', {i})" for i in range(1, 101)))
    job = _job(tmp_path, mariadb_db)
    rounds = [
        [],  # 1: the snapshot
        [  # 2: writes the __tombstones table
            "DELETE FROM items WHERE id IN ('key-1', 'key-9')",
            "UPDATE items SET qty = qty + 1000 WHERE id IN ('key-2', 'key-3')",
        ],
        ["UPDATE items SET name = CONCAT(name, '!') WHERE id IN ('key-4', 'key-5', 'key-6')"],  # 3: exited 1
        [  # 4: a deleted key comes back, more deletes and updates, a primary-key change
            "INSERT INTO items VALUES ('key-1', 'back', -1)",
            "DELETE FROM items WHERE id IN ('key-10', 'key-4')",
            "UPDATE items SET qty = NULL WHERE id = 'key-5'",
            "UPDATE items SET id = 'key-100x' WHERE id = 'key-100'",
            "INSERT INTO items VALUES ('key-101', 'new', 101)",
        ],
    ]
    for n, statements in enumerate(rounds, 1):
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
        _run(job, n)
        source = _source_rows(mariadb_db)
        assert _lake_rows(tmp_path) == source, f"the lake differs from the source after run {n}"
    assert "key-1" in source and "key-9" not in source and source["key-6"][0] == "item6!"

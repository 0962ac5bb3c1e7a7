"""`cdc plan job.yaml` against jobs that ran on the session MariaDB and PostgreSQL.

Each job runs to caught-up with two tables, then its include list drops one and adds another; the
plan (a `cdc` subprocess, asking the database and the lake) must say add/drop/keep, how each table is
read at the next start, which topic and Delta table would be created, and, beside a state.dir whose
lock is held, report the holder and leave the lock file as it was. The planning rules are tested
without servers in test_plan.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cdc.runtime.state_lock import StateDirLock
from tests.mysql.harness import connector_props
from tests.support.proc import run_cdc

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


def _plan(job: Path, *extra: str) -> dict[str, Any]:
    res = run_cdc("plan", str(job), "--json", *extra, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def _rows(doc: dict[str, Any]) -> dict[str, tuple[str, str, bool | None, bool | None]]:
    return {t["table"]: (t["action"], t["snapshot"], t["topic_created"], t["target_created"]) for t in doc["tables"]}


def _mysql_job(tmp_path: Path, props: dict[str, str], include: str) -> Path:
    source = "\n".join(f"  {k}: '{v}'" for k, v in {**props, "table.include.list": include}.items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: planned
source:
{source}
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
  table.name.format: ${{table}}
spark:
  master: local[2]
"""
    )
    return job


def test_mariadb_include_list_change(tmp_path: Path, mariadb_db) -> None:
    db = mariadb_db.database
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        for t in ("a", "b", "c"):
            cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(10))")
            cur.execute(f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y')")
    props = {k: v for k, v in connector_props(mariadb_db).items() if k != "poll.interval.ms"}
    job = _mysql_job(tmp_path, props, f"{db}.a,{db}.b")
    assert _rows(_plan(job)) == {
        f"{db}.a": ("add", "initial", True, True), f"{db}.b": ("add", "initial", True, True),
    }  # fmt: skip
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]

    job = _mysql_job(tmp_path, props, f"{db}.a,{db}.c")
    doc = _plan(job)
    print(json.dumps(doc, indent=1))
    assert doc["database_checked"] and doc["targets_checked"] and doc["stored_position"] == "kept"
    assert doc["start"]["kind"] == "stream" and not doc["running"]
    assert _rows(doc) == {
        f"{db}.a": ("keep", "none", False, False),
        f"{db}.b": ("drop", "none", False, False),
        f"{db}.c": ("add", "none", True, True),  # streamed from the offset on, without its rows
    }
    by_table = {t["table"]: t for t in doc["tables"]}
    assert "execute-snapshot" in by_table[f"{db}.c"]["reason"]
    assert by_table[f"{db}.c"]["target"] == "c" and by_table[f"{db}.c"]["topic"] == f"dbserver1.{db}.c"
    assert {"log topic", "schema history"} <= set(by_table[f"{db}.a"]["stored_traces"])
    modes = {m["mode"]: m for m in doc["modes"]}
    assert modes["initial"]["current"] and modes["always"]["snapshot"] == "initial"
    assert modes["when_needed"]["start"] == "stream" and modes["initial_only"]["start"] == "idle"

    # Beside a running job (its lock held): the plan names the holder and leaves the lock alone.
    with StateDirLock.for_job(tmp_path / "state", "planned").acquire():
        lock = tmp_path / "state" / "cdc.lock"
        held = (lock.read_bytes(), lock.stat().st_mtime_ns, lock.stat().st_size)
        doc = _plan(job, "--offline")
        assert doc["running"] and doc["pid"] == os.getpid()
        assert (lock.read_bytes(), lock.stat().st_mtime_ns, lock.stat().st_size) == held
        assert _rows(doc)[f"{db}.c"] == ("add", "none", True, None)  # --offline: the lake is not looked at
        res = run_cdc("plan", str(job), "--offline", timeout=120)
        # The table output wraps at the terminal width: compare with whitespace runs as single spaces.
        assert res.returncode == 0 and "the job is running (pid" in " ".join(res.stdout.split()), res.stderr


def _pg_job(tmp_path: Path, server, include: str) -> Path:
    job = tmp_path / "pg.yaml"
    job.write_text(
        f"""name: pgplan
source:
  connector.class: postgres
  database.hostname: {server.host}
  database.port: {server.port}
  database.user: {server.user}
  database.dbname: {server.dbname}
  topic.prefix: pgplan
  slot.name: pgplan_slot
  publication.name: pgplan_pub
  publication.autocreate.mode: filtered
  table.include.list: '{include}'
  snapshot.new.tables: parallel
  signal.data.collection: public.plan_signals
transport:
  state.dir: {tmp_path / "pgstate"}
sink:
  type: delta
  path: {tmp_path / "pglake"}
spark:
  master: local[2]
"""
    )
    return job


def test_postgres_include_list_change_with_snapshot_new_tables(tmp_path: Path, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE plan_signals(id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
    for t in ("pa", "pb", "pc"):
        sql.execute(f"CREATE TABLE {t}(id int PRIMARY KEY, v text)")
        sql.execute(f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y')")
    job = _pg_job(tmp_path, postgres_db, r"public\.pa,public\.pb,public\.plan_signals")
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]

    job = _pg_job(tmp_path, postgres_db, r"public\.pa,public\.pc,public\.plan_signals")
    doc = _plan(job)
    print(json.dumps(doc, indent=1))
    assert doc["family"] == "postgres" and doc["start"]["kind"] == "stream" and doc["stored_position"] == "kept"
    assert doc["stored_sources"][0] == "offset filters (snapshot.new.tables)"
    rows = _rows(doc)
    assert rows["public.pa"] == ("keep", "none", False, False)
    assert rows["public.pb"] == ("drop", "none", False, False)
    assert rows["public.pc"] == ("add", "incremental", True, True)  # read while streaming goes on
    assert {m["mode"]: m["start"] for m in doc["modes"]}["always"] == "snapshot"

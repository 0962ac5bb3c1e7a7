"""Unchanged TOASTed values through `cdc run --until-caught-up`: PostgreSQL → Delta and the
PostgreSQL warehouse sink.

Under REPLICA IDENTITY DEFAULT, pgoutput leaves an unchanged out-of-line value out of an
UPDATE, and the connector sends Debezium's `__debezium_unavailable_value` in its place. The
sink must keep the real value: from the key's earlier events in the same micro-batch, else
from the row the target already stores. The placeholder must never reach a target cell.
A primary-key change arrives as a delete and a create of the new key that no target holds:
the connector re-selects those values from the table, and the lake must equal the source.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from cdc.cli.verify import verify
from cdc.jobs.load import load_job
from cdc.runtime.transport import open_log
from cdc.runtime.worker_config import WorkerConfig
from tests.postgres.test_reselect import KINDS, _check_toasted, _create_tables, run_workload
from tests.support.logs import topic_records
from tests.support.proc import run_cdc

pytestmark = pytest.mark.slow  # two Spark runs per target: `pytest -m 'not slow'` for a quick local run

PLACEHOLDER = "__debezium_unavailable_value"
TOPIC = "toast.public.docs"
TABLE = "toast_public_docs"  # <prefix>_<schema>_<table>, in both sinks


def _body(row: int, version: int) -> str:
    """8,000 characters, unique per row and version: far past the ~2 KB TOAST threshold."""
    return "".join(hashlib.md5(f"{row}:{version}:{n}".encode()).hexdigest() for n in range(250))


def _job(tmp_path: Path, server, target: str) -> Path:
    sink = (
        f"  type: delta\n  path: {tmp_path / 'lake'}\n"
        if target == "delta"
        else f"  type: postgres\n  dsn: {server.dsn}\n  schema: lake\n"
    )
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: toast
source:
  connector.class: postgres
  database.hostname: {server.host}
  database.port: {server.port}
  database.user: {server.user}
  database.password: '{server.password}'
  database.dbname: {server.dbname}
  topic.prefix: toast
  slot.name: toast_{target}
  table.include.list: public.docs
transport:
  state.dir: {tmp_path / "state"}
sink:
{sink}"""
    )
    return job


def _run(job: Path) -> CompletedProcess[str]:
    return run_cdc("run", str(job), "--until-caught-up", timeout=300)


def _check_run(res: CompletedProcess[str]) -> None:
    assert res.returncode == 0, res.stderr[-4000:]
    # apply/unchanged.py warns when it keeps a placeholder for want of an earlier value.
    assert "unavailable-value placeholder" not in res.stderr, res.stderr[-4000:]


def _digest(rows: list[tuple[int, int, str]]) -> dict[int, tuple[int, str]]:
    """id → (qty, body digest): readable when the comparison fails, unlike 8 KB bodies."""
    return {i: (qty, body if body == PLACEHOLDER else hashlib.md5(body.encode()).hexdigest()) for i, qty, body in rows}


def _target_rows(target: str, tmp_path: Path, sql: psycopg.Connection) -> list[tuple[int, int, str]]:
    if target == "delta":
        lake = DeltaTable(str(tmp_path / "lake" / TABLE)).to_pyarrow_table(columns=["id", "qty", "body", "__deleted"])
        return [(r["id"], r["qty"], r["body"]) for r in lake.to_pylist() if not r["__deleted"]]
    return sql.execute(f"SELECT id, qty, body FROM lake.{TABLE} WHERE __deleted IS NOT TRUE").fetchall()


def _assert_target_equals_source(target: str, tmp_path: Path, sql: psycopg.Connection, job: Path) -> None:
    stored = _target_rows(target, tmp_path, sql)
    assert [i for i, _, body in stored if body == PLACEHOLDER] == []
    source = sql.execute("SELECT id, qty, body FROM docs").fetchall()
    assert _digest(stored) == _digest(source)
    res = CliRunner().invoke(verify, ["--quiet", str(job)], catch_exceptions=False)
    assert res.exit_code == 0, res.stdout + res.stderr
    assert f"{len(source)} source rows, {len(source)} target rows, 0 differences" in res.stdout


def _events(job: Path) -> list[tuple[str, int, bool]]:
    """(op, id, whether `after.body` is the placeholder) of every event on the table's topic, in
    log order: what the connector really sent (tombstones left out)."""
    spec = load_job(job, inspect_only=True)
    with open_log(WorkerConfig(spec.worker_config())) as log_:
        records = topic_records(log_, TOPIC)
    out = []
    for r in records:
        if r.value is None:
            continue
        p = json.loads(r.value)["payload"]
        row = p["after"] or p["before"]
        out.append((p["op"], row["id"], p["after"] is not None and p["after"]["body"] == PLACEHOLDER))
    return out


def _stream_during_snapshot(sql: psycopg.Connection, server, slot: str, run: Future) -> None:
    """Commit changes that the run streams, after the snapshot it takes and before it stops.

    The run stops once its source passes the WAL position read at its start, so changes
    committed after that start are streamed only if they arrive before the first heartbeat.
    They are committed while the snapshot waits: once the slot is consistent (changes after
    it are streamed, not read by the snapshot), an ACCESS EXCLUSIVE lock holds the snapshot's
    ACCESS SHARE lock back until they commit, and the heartbeat clock starts after the snapshot.
    Not earlier: that lock takes a transaction id, and a slot being created waits for it.
    """
    deadline = time.monotonic() + 120
    while not sql.execute(
        "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND confirmed_flush_lsn IS NOT NULL", (slot,)
    ).fetchone():
        if run.done():
            pytest.fail(f"cdc run ended before creating slot {slot}:\n{run.result().stderr[-4000:]}")
        assert time.monotonic() < deadline, f"slot {slot} not consistent within 120 s"
        time.sleep(0.02)
    with server.connect(autocommit=False) as gate, gate.transaction():
        gate.execute("LOCK TABLE docs IN ACCESS EXCLUSIVE MODE")
        for i in range(7, 11):
            gate.execute("INSERT INTO docs VALUES (%s, %s, %s)", (i, i, _body(i, 0)))
        # Placeholder updates of rows inserted in this run: their value is in the same batch only.
        gate.execute("UPDATE docs SET qty = qty + 100 WHERE id BETWEEN 7 AND 10")
        gate.execute("UPDATE docs SET qty = qty + 100 WHERE id = 7")  # two placeholders in a row
        # Snapshot rows: their value is in the batch's `r` events (the new target holds nothing yet).
        gate.execute("UPDATE docs SET qty = qty + 100 WHERE id BETWEEN 1 AND 3")


# Delta only here, for suite time: tests/spark/test_unchanged.py takes every target (the
# PostgreSQL warehouse included) through the same cases; this run adds the real connector.
@pytest.mark.parametrize("target", ["delta"])
def test_unchanged_toast_values_are_kept_not_stored_as_the_placeholder(
    tmp_path: Path, postgres_db, target: str
) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE docs(id int PRIMARY KEY, qty int NOT NULL, body text NOT NULL)")
    sql.execute("ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL")  # out of line, uncompressed
    for i in range(1, 7):
        sql.execute("INSERT INTO docs VALUES (%s, %s, %s)", (i, i, _body(i, 0)))
    assert sql.execute("SELECT relreplident FROM pg_class WHERE oid = 'docs'::regclass").fetchone() == ("d",)
    job = _job(tmp_path, postgres_db, target)

    # Run 1: the snapshot, then inserts and placeholder updates streamed in the same run.
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(_run, job)
        _stream_during_snapshot(sql, postgres_db, f"toast_{target}", run)
        res = run.result()
    _check_run(res)
    assert "sink: micro-batch 0 applied" in res.stderr and "micro-batch 1 applied" not in res.stderr
    first = _events(job)
    # Rows 1-6 read by the snapshot, 7-10 streamed after it: the run did both.
    assert sorted((i, op) for op, i, _ in first if op in "rc") == [(i, "r" if i < 7 else "c") for i in range(1, 11)]
    updates = sorted((i, hole) for op, i, hole in first if op == "u")
    assert updates == [(i, True) for i in (1, 2, 3, 7, 7, 8, 9, 10)]  # every update lacks the body
    _assert_target_equals_source(target, tmp_path, sql, job)

    # Run 2: stored rows' bodies must come from the target; a delete; a new body, then a
    # placeholder that must take the new body, not the stored one; a delete and re-insert.
    sql.execute("UPDATE docs SET qty = qty + 1000 WHERE id IN (4, 6, 8)")
    sql.execute("DELETE FROM docs WHERE id = 9")
    sql.execute("UPDATE docs SET body = %s WHERE id = 10", (_body(10, 1),))
    sql.execute("UPDATE docs SET qty = qty + 1000 WHERE id = 10")
    sql.execute("DELETE FROM docs WHERE id = 5")
    sql.execute("INSERT INTO docs VALUES (5, 5, %s)", (_body(5, 1),))
    sql.execute("UPDATE docs SET qty = qty + 1000 WHERE id = 5")
    res = _run(job)
    _check_run(res)
    second = _events(job)[len(first) :]
    holes = sorted(i for op, i, hole in second if op == "u" and hole)
    assert holes == [4, 5, 6, 8, 10]
    _assert_target_equals_source(target, tmp_path, sql, job)
    assert sql.execute("SELECT body FROM docs WHERE id = 10").fetchone() == (_body(10, 1),)


def _pk_job(tmp_path: Path, server) -> Path:
    job = tmp_path / "pk.yaml"
    job.write_text(
        f"""name: pkmoves
source:
  connector.class: postgres
  database.hostname: {server.host}
  database.port: {server.port}
  database.user: {server.user}
  database.password: '{server.password}'
  database.dbname: {server.dbname}
  topic.prefix: pk
  slot.name: pk_moves
  table.include.list: public.blobs,public.pairs
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
"""
    )
    return job


def _lake_rows(tmp_path: Path, table: str, key: tuple[str, ...]) -> dict[Any, dict[str, Any]]:
    """The live rows of a Delta table, read with deltalake, in the form tests/postgres/test_reselect compares."""
    lake = DeltaTable(str(tmp_path / "lake" / table)).to_pyarrow_table()
    out = {}
    for r in lake.to_pylist():
        if r["__deleted"]:
            continue
        row = {c: v for c, v in r.items() if not c.startswith("__")}
        out[row[key[0]] if len(key) == 1 else tuple(row[k] for k in key)] = row
    return out


def _blobs_in_lake(tmp_path: Path) -> dict[Any, dict[str, Any]]:
    """Arrays land in Delta as JSON text: read back as lists, to compare with the source."""
    rows = _lake_rows(tmp_path, "pk_public_blobs", ("id",))
    for row in rows.values():
        for column in ("tags", "nums"):
            row[column] = None if row[column] is None else json.loads(row[column])
    return rows


def _blobs_in_source(sql: psycopg.Connection) -> dict[Any, dict[str, Any]]:
    rows = sql.execute("SELECT id, qty, body, raw, doc::text, tags, nums FROM blobs").fetchall()
    names = ("id", "qty", "body", "raw", "doc", "tags", "nums")
    return {r[0]: dict(zip(names, r, strict=True)) for r in rows}


def _pairs_in_source(sql: psycopg.Connection) -> dict[Any, dict[str, Any]]:
    return {(k, n): {"k": k, "n": n, "qty": q, "note": note} for k, n, q, note in sql.execute("SELECT * FROM pairs")}


def _short(rows: dict[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Long values as a digest: a failed comparison stays readable."""

    def cut(v: Any) -> Any:
        if isinstance(v, (str, bytes, list)) and len(str(v)) > 40:
            return hashlib.md5(str(v).encode()).hexdigest()[:10]
        return v

    return {k: {c: cut(v) for c, v in r.items()} for k, r in rows.items()}


@pytest.mark.parametrize("seed", [4242])
def test_primary_key_changes_of_toasted_rows_land_with_their_values(tmp_path: Path, postgres_db, seed: int) -> None:
    """Random primary-key changes of rows with unchanged TOASTed text, bytea, jsonb and arrays,
    under REPLICA IDENTITY DEFAULT, streamed by `cdc run` into Delta: the lake equals the tables."""
    sql = postgres_db.connect()
    _create_tables(sql)
    rng = random.Random(seed)
    job = _pk_job(tmp_path, postgres_db)
    work = run_workload(rng, sql, steps=0)  # rows for the snapshot, and one transaction of each kind
    _check_run(_run(job))
    for _ in range(30):
        work.step(rng.choice(KINDS))
    _check_toasted(sql)
    res = _run(job)
    assert res.returncode == 0, res.stderr[-4000:]
    where = f"seed {seed}, transactions {work.kinds}"
    lake, source = _blobs_in_lake(tmp_path), _blobs_in_source(sql)
    assert _short(lake) == _short(source), where
    assert lake == source, where
    assert _lake_rows(tmp_path, "pk_public_pairs", ("k", "n")) == _pairs_in_source(sql), where

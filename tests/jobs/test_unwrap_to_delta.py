"""Issue 23's acceptance: MariaDB → embedded log → ExtractNewRecordState (add.fields with op and the
source position, rewritten deletes) → Spark → Delta, equal to the source.

A seeded random workload (inserts, updates, deletes, primary-key changes) on a VARCHAR-keyed table
and a composite-keyed one, applied by `cdc run --until-caught-up` runs; then a continuous `cdc run`
is SIGKILLed while its sink applies batches and a last run catches up, so batches are replayed
(and records re-read) after the kill. After every run the Delta tables, read with deltalake, hold
exactly the source's rows. Set CDC_UNWRAP_SEED to replay a workload.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pymysql
import pytest
from deltalake import DeltaTable

from tests.mysql.harness import connector_props
from tests.support.proc import REPO, cdc_argv, run_cdc

pytestmark = pytest.mark.slow  # several `cdc run`s, each starting Spark

ADD_FIELDS = "op,source.file,source.pos,source.row,source.sequence,source.snapshot,source.ts_ms"


def _job(tmp_path: Path, server, db: str) -> Path:  # type: ignore[no-untyped-def]
    props = connector_props(server, topic__prefix="uw")
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: unwrapped
source:
{source}
transforms:
  - name: unwrap
    type: io.debezium.transforms.ExtractNewRecordState
    add.fields: '{ADD_FIELDS}'
    delete.tombstone.handling.mode: rewrite
transport:
  type: embedded
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
  tables:
    {db}.items: {{target: items}}
    {db}.pairs: {{target: pairs}}
spark:
  master: local[2]
  trigger: {{processingTime: 1 second}}
"""
    )
    return job


class Workload:
    """Random changes to `items` (VARCHAR key) and `pairs` (composite key), from one seed."""

    def __init__(self, conn: pymysql.connections.Connection, rng: random.Random) -> None:
        self.conn, self.rng, self.next_id = conn, rng, 0

    def _keys(self, sql: str) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def round(self, changes: int) -> None:
        rng = self.rng
        with self.conn.cursor() as cur:
            for _ in range(changes):
                items = self._keys("SELECT id FROM items")
                pairs = self._keys("SELECT a, b FROM pairs")
                kind = rng.choice(["insert", "insert", "update", "update", "delete", "pk"])
                self.next_id += 1
                n = self.next_id
                if kind == "insert" or not items or not pairs:
                    cur.execute("INSERT INTO items VALUES (%s, %s, %s)", (f"k-{n}-é", f"name{n}", rng.randint(-5, 99)))
                    cur.execute(
                        "INSERT IGNORE INTO pairs VALUES (%s, %s, %s)",
                        (rng.randint(1, 6), f"b{n % 7}", rng.randint(0, 9)),
                    )
                elif kind == "update":
                    # several changes of one key in one transaction: one binlog event group, ordered by row
                    cur.execute(
                        "UPDATE items SET qty = qty + 1, name = %s WHERE id = %s", (f"u{n}", rng.choice(items)[0])
                    )
                    a, b = rng.choice(pairs)
                    cur.execute("UPDATE pairs SET v = v + %s WHERE a = %s AND b = %s", (rng.randint(1, 5), a, b))
                elif kind == "delete":
                    cur.execute("DELETE FROM items WHERE id = %s", (rng.choice(items)[0],))
                    a, b = rng.choice(pairs)
                    cur.execute("DELETE FROM pairs WHERE a = %s AND b = %s", (a, b))
                else:  # primary-key changes: a delete of the old key and a create of the new one
                    cur.execute("UPDATE items SET id = %s WHERE id = %s", (f"moved-{n}", rng.choice(items)[0]))
                    a, b = rng.choice(pairs)
                    cur.execute("UPDATE IGNORE pairs SET b = %s WHERE a = %s AND b = %s", (f"m{n}", a, b))
                if rng.random() < 0.2:  # a deleted key comes back
                    cur.execute("INSERT IGNORE INTO items VALUES (%s, 'back', 0)", (f"k-{rng.randint(1, n)}-é",))


def _source(conn: pymysql.connections.Connection) -> dict[str, dict]:
    with conn.cursor() as cur:
        cur.execute("SELECT id, name, qty FROM items")
        items = {r[0]: (r[1], r[2]) for r in cur.fetchall()}
        cur.execute("SELECT a, b, v FROM pairs")
        pairs = {(r[0], r[1]): r[2] for r in cur.fetchall()}
    return {"items": items, "pairs": pairs}


def _lake(tmp_path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for table, key, value in (("items", ("id",), ("name", "qty")), ("pairs", ("a", "b"), ("v",))):
        path = tmp_path / "lake" / table
        rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist() if DeltaTable.is_deltatable(str(path)) else []
        added = {"__source_file", "__source_pos", "__source_row", "__source_sequence", "__source_snapshot"}
        assert not rows or not added & set(rows[0]), f"{table}: the position fields became columns"
        live = [r for r in rows if not r["__deleted"]]
        keyed = {
            (r[key[0]] if len(key) == 1 else tuple(r[k] for k in key)): (
                tuple(r[c] for c in value) if len(value) > 1 else r[value[0]]
            )
            for r in live
        }
        assert len(keyed) == len(live), f"{table}: a key is stored twice"
        out[table] = keyed
    return out


def _until_caught_up(job: Path, what: str) -> None:
    res = run_cdc("run", str(job), "--until-caught-up", timeout=420)
    assert res.returncode == 0, f"{what} exited {res.returncode}:\n{res.stderr[-4000:]}"


def _killed_mid_batch(job: Path, log: Path, rng: random.Random) -> None:
    """A continuous `cdc run`, SIGKILLed (with Spark's JVM) while it applies batches."""
    with log.open("ab") as out:
        start = log.stat().st_size if log.exists() else 0
        proc = subprocess.Popen(
            cdc_argv("run", str(job)), stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            with log.open("rb") as f:
                f.seek(start)
                if b"sink query started" in f.read():
                    break
            time.sleep(0.2)
        assert proc.poll() is None, f"cdc run exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        time.sleep(rng.uniform(0.5, 3.0))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def test_unwrapped_job_to_delta_equals_the_source(tmp_path: Path, mariadb_db) -> None:  # type: ignore[no-untyped-def]
    seed = int(os.environ.get("CDC_UNWRAP_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    conn = pymysql.connect(
        host=mariadb_db.host,
        port=mariadb_db.port,
        user=mariadb_db.user,
        password=mariadb_db.password,
        database=mariadb_db.database,
        autocommit=True,
    )
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE items (id VARCHAR(40) PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT)")
            cur.execute("CREATE TABLE pairs (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))")
        load = Workload(conn, rng)
        load.round(15)  # the snapshot's rows
        job = _job(tmp_path, mariadb_db, mariadb_db.database)
        res = run_cdc("validate", str(job), "--offline", timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr
        for n in range(1, 3):
            _until_caught_up(job, f"run {n} (seed {seed})")
            assert _lake(tmp_path) == _source(conn), f"the lake differs from the source after run {n}, seed {seed}"
            load.round(25)
        # a restart in the middle: killed while applying, then caught up (replayed batches change nothing)
        _killed_mid_batch(job, tmp_path / "killed.log", rng)
        load.round(10)
        _until_caught_up(job, f"the run after the kill (seed {seed})")
        final = _source(conn)
        assert _lake(tmp_path) == final, f"the lake differs from the source after the kill, seed {seed}"
        assert final["items"] and final["pairs"], f"seed {seed}: the workload left nothing to compare"
    finally:
        conn.close()
    res = run_cdc("verify", str(job), timeout=120)
    assert res.returncode == 0 and "0 differences" in res.stdout, (
        f"seed {seed}: {res.stdout[-3000:]}{res.stderr[-2000:]}"
    )

"""`cdc verify --repair` end to end: MariaDB → `cdc run` → Delta, drift made in the lake, healed through
the job's signal table by incremental snapshots of exactly the differing keys.

The drift is made where the pipeline cannot see it (deltalake on the lake, as test_verify.py does):
rows deleted (a run of ids, single ids, composite keys with quotes) and rows changed. With the job
running, `cdc verify --repair` waits and exits 0; the lake then equals the source, read with deltalake.
With the job stopped, the signal waits in the binlog for the next run. A row only in the lake is
reported as not repairable by a snapshot and left alone.
"""

from __future__ import annotations

import datetime
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from cdc.jobs.load import load_job
from cdc.jobs.status import collect
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.mysql.incremental_support import create_signal_table
from tests.support.proc import CdcProcess, run_cdc, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NAMES = ["plain", "it's", 'say "hi"', "back\\slash", "100%", "ünïcødé 😀"]


def _source(server: Any, table: str) -> set[tuple[Any, ...]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {table}")
        return {tuple(r) for r in cur.fetchall()}


def _lake(tmp_path: Path, table: str, columns: list[str]) -> set[tuple[Any, ...]]:
    rows = DeltaTable(str(tmp_path / "lake" / table)).to_pyarrow_table().to_pylist()
    return {tuple(r[c] for c in columns) for r in rows if not r["__deleted"]}


class _Writer(threading.Thread):
    """Updates rows 150..200 of `items` (no drift is made there) one transaction at a time."""

    def __init__(self, server: Any) -> None:
        super().__init__(name="repair-writer", daemon=True)
        self.server, self.done, self.error = server, 0, None
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            with self.server.connect() as conn, conn.cursor() as cur:
                while not self._stop_event.is_set():
                    cur.execute("UPDATE items SET v = v + 1 WHERE id = %s", (150 + self.done % 51,))
                    conn.commit()
                    self.done += 1
                    time.sleep(0.02)
        except Exception as e:  # reported by the test
            self.error = e

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(10)


def test_repair_heals_the_lake_through_the_running_job_and_the_next_run(tmp_path: Path, mariadb_db: Any) -> None:
    db = mariadb_db.database
    create_signal_table(mariadb_db)
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) CHARACTER SET utf8mb4, v INT)")
        cur.executemany(
            "INSERT INTO items VALUES (%s, %s, %s)", [(i, NAMES[i % len(NAMES)], i * 3) for i in range(1, 201)]
        )
        cur.execute("CREATE TABLE pairs (a VARCHAR(20) CHARACTER SET utf8mb4, b DATE, v INT, PRIMARY KEY (a, b))")
        day = datetime.date(2024, 2, 27)
        cur.executemany(
            "INSERT INTO pairs VALUES (%s, %s, %s)",
            [(name, day + datetime.timedelta(days=d), d) for name in NAMES for d in range(3)],
        )
        conn.commit()
    props = connector_props(
        mariadb_db, table__include__list=f"{db}.items,{db}.pairs", signal__data__collection=f"{db}.debezium_signal"
    )
    job = mysql_delta_job(tmp_path, "heal", props, {f"{db}.items": "target: items", f"{db}.pairs": "target: pairs"})
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    items, pairs = str(tmp_path / "lake" / "items"), str(tmp_path / "lake" / "pairs")
    assert _lake(tmp_path, "items", ["id", "name", "v"]) == _source(mariadb_db, "items")

    # Drift the pipeline cannot see: deleted and changed rows in the lake.
    DeltaTable(items).delete("(id >= 10 AND id <= 59) OR id = 77 OR id = 123")
    DeltaTable(items).update(updates={"v": "-1"}, predicate="id >= 100 AND id <= 104")
    DeltaTable(pairs).delete("a = 'it''s' OR (a = 'back\\slash' AND v = 1) OR a = '100%'")
    res = run_cdc("verify", str(job), "--quiet", timeout=120)
    assert res.returncode == 1 and "57 differences (52 missing in the target, 5 changed)" in res.stdout, (
        res.stdout + res.stderr
    )

    proc = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
    writer = _Writer(mariadb_db)
    try:
        spec = load_job(str(job), inspect_only=True)
        wait_for(lambda: collect(spec).task_state == "RUNNING", 120, "the source task", proc)
        # A writer changes other rows all along: the running job's repair compares online (before and
        # after), so what the job has not applied yet is neither signalled nor counted.
        writer.start()
        wait_for(lambda: writer.done >= 20, 60, "the writer's first changes", proc)
        res = run_cdc("verify", str(job), "--repair", "--repair-timeout", "240", timeout=400)
        assert res.returncode == 0, res.stdout + res.stderr + proc.output()[-3000:]
        assert writer.done >= 40, f"the writer made only {writer.done} changes during the repair"
        writer.stop()
        assert writer.error is None, writer.error
        wait_for(lambda: _lake(tmp_path, "items", ["id", "name", "v"]) == _source(mariadb_db, "items"), 120,
                 "the lake to apply the writer's changes", proc)  # fmt: skip
    finally:
        writer.stop()
        if proc.alive():
            proc.terminate(60)
    out = res.stdout
    assert f"repair {db}.items: 57 keys to read again in 1 signal(s)" in out, out
    before = f"repair {db}.items: before 57 differences (52 missing, 5 changed); 1/1 signals"
    assert f"{before}; after, on those keys: 0 differences" in out
    assert (
        f"repair {db}.pairs: before 7 differences (7 missing); 1/1 signals; after, on those keys: 0 differences" in out
    )
    assert "to the signal table" in res.stderr, res.stderr
    assert "waiting for" in res.stderr or "sent repair-" in res.stderr
    assert _lake(tmp_path, "items", ["id", "name", "v"]) == _source(mariadb_db, "items")
    assert _lake(tmp_path, "pairs", ["a", "b", "v"]) == _source(mariadb_db, "pairs")

    # The job stopped: the signal waits in the binlog, and the next run reads the rows again.
    DeltaTable(items).delete("id = 5 OR id = 200")
    res = run_cdc("verify", str(job), "--repair", timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "the job is not running: sent 1 of 1 signal(s) to the source channel" in res.stdout, res.stdout
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _lake(tmp_path, "items", ["id", "name", "v"]) == _source(mariadb_db, "items")
    res = run_cdc("verify", str(job), "--quiet", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr

    # A row only in the lake: reported, never signalled, the lake left as it is.
    row = DeltaTable(items).to_pyarrow_table(filters=[("id", "=", 8)])
    write_deltalake(
        items, row.set_column(row.schema.get_field_index("id"), "id", pa.array([999], pa.int32())), mode="append"
    )
    version = DeltaTable(items).version()
    res = run_cdc("verify", str(job), "--repair", "--quiet", timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"repair {db}.items: nothing a snapshot can read again" in res.stdout, res.stdout
    assert "1 extra in the target, not repairable by a snapshot" in res.stdout
    assert "id=999" in res.stdout
    assert DeltaTable(items).version() == version

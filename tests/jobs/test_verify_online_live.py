"""`cdc verify` while `cdc run` runs: MariaDB → Delta with a writer changing rows all along.

The lake is never caught up at a quiet moment: the writer keeps updating, inserting and deleting
rows of one id range while `cdc verify` runs. The online verify reads the source in one snapshot
at a binlog position, waits until the lake applied it, and compares the lake as it was there: no
difference. Drift made in the lake with deltalake (a row deleted, a value changed, on ids the writer
never touches) is then found exactly, with the writer still going; by a sample, and by a key range
(`--key-range`) over the cold ids, while one over the writer's ids finds nothing.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from cdc.jobs.load import load_job
from cdc.jobs.status import collect
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.support.proc import CdcProcess, run_cdc, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOT = range(1, 101)  # the writer's ids
COLD = range(101, 201)  # ids nobody changes: the drift goes there


class Writer(threading.Thread):
    """Updates, deletes and inserts rows of HOT (and new ids) until stopped; may pause."""

    def __init__(self, server: Any) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.stop = threading.Event()
        self.paused = threading.Event()
        self.changes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(37)
        next_id = 1000
        try:
            with self.server.connect() as conn, conn.cursor() as cur:
                while not self.stop.is_set():
                    if self.paused.is_set():
                        time.sleep(0.05)
                        continue
                    for _ in range(rng.randrange(1, 6)):
                        k = rng.choice(HOT)
                        roll = rng.random()
                        if roll < 0.15:
                            cur.execute("DELETE FROM items WHERE id = %s", (k,))
                        elif roll < 0.3:
                            cur.execute("INSERT INTO items VALUES (%s, 'new', 0)", (next_id,))
                            next_id += 1
                        else:
                            cur.execute(
                                "INSERT INTO items VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE name = VALUES(name), "
                                "v = v + 1",
                                (k, f"w{rng.randrange(100)}", rng.randrange(1000)),
                            )
                    conn.commit()
                    self.changes += 1
                    time.sleep(0.01)
        except BaseException as e:  # reported by the test
            self.error = e


def _verify(job: Path, *args: str) -> Any:
    return run_cdc("verify", str(job), "--json", *args, timeout=400)


def test_online_verify_finds_nothing_while_rows_change_and_then_exactly_the_drift(
    tmp_path: Path, mariadb_db: Any
) -> None:
    db = mariadb_db.database
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
        cur.executemany("INSERT INTO items VALUES (%s, %s, %s)", [(i, f"n{i}", i) for i in range(1, 201)])
        conn.commit()
    props = connector_props(mariadb_db, table__include__list=f"{db}.items")
    job = mysql_delta_job(tmp_path, "online", props, {f"{db}.items": "target: items"})
    lake = str(tmp_path / "lake" / "items")
    proc = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
    writer = Writer(mariadb_db)
    try:
        spec = load_job(str(job), inspect_only=True)
        wait_for(lambda: collect(spec).task_state == "RUNNING", 120, "the source task", proc)
        wait_for(lambda: DeltaTable.is_deltatable(lake), 180, "the lake table", proc)
        writer.start()
        wait_for(lambda: writer.changes > 20, 60, "the writer")

        res = _verify(job)  # online by default: the job runs
        assert res.returncode == 0, res.stdout + res.stderr + proc.output()[-3000:]
        doc = json.loads(res.stdout)
        assert doc["online"] is not None and doc["differences"] == 0, doc
        assert "source snapshot at mysql-bin" in res.stderr or "source snapshot at" in res.stderr, res.stderr
        table = doc["tables"][0]
        assert table["changed_since"] >= 0 and table["source_rows"] > 150, table
        changes_during = writer.changes

        # The offline comparison of a lake in motion is what online replaces: not asserted (it may pass by
        # luck), only run to show both modes work on the same job.
        assert _verify(job, "--offline", "--quiet").returncode in (0, 1)

        # Drift on cold rows. Pause the writer until the lake is quiet, so that the sink commits nothing
        # while deltalake commits the drift (two writers of one Delta table would conflict).
        writer.paused.set()
        time.sleep(1)
        version = -1
        while DeltaTable(lake).version() != version:
            version = DeltaTable(lake).version()
            time.sleep(6)
        DeltaTable(lake).delete("id = 150")
        DeltaTable(lake).update(updates={"v": "-1"}, predicate="id = 160")
        writer.paused.clear()
        wait_for(lambda: writer.changes > changes_during + 40, 60, "the writer again")

        res = _verify(job, "--max-diffs", "10")
        assert res.returncode == 1, res.stdout + res.stderr + proc.output()[-3000:]
        doc = json.loads(res.stdout)
        table = doc["tables"][0]
        assert (table["missing"], table["changed"], table["extra"], table["duplicates"]) == (1, 1, 0, 0), table
        kinds = {(s["kind"], s["key"]["id"]) for s in table["samples"]}
        assert kinds == {("missing", "150"), ("changed", "160")}, table["samples"]
        changed = next(s for s in table["samples"] if s["kind"] == "changed")
        assert changed["columns"] == [{"column": "v", "source": "160", "target": "-1"}]

        # A sample: seeded, printed, and the cold drift is found when its keys are drawn.
        res = run_cdc("verify", str(job), "--sample", "500", "--seed", "7", timeout=400)
        assert res.returncode == 1, res.stdout + res.stderr
        assert "sample: 500 random keys per table, seed 7" in res.stdout

        # A key range, online: the cold range holds exactly the drift; the writer's range (a sample in it,
        # ranked by the database) none, though its rows change all along.
        res = _verify(job, "--key-range", "id=101..200")
        assert res.returncode == 1, res.stdout + res.stderr
        doc = json.loads(res.stdout)
        assert doc["key_range"] == {
            "column": "id",
            "low": "101",
            "high": "200",
            "tables": [f"{db}.items"],
            "skipped": [],
        }
        table = doc["tables"][0]
        assert (table["source_rows"], table["target_rows"], table["missing"], table["changed"]) == (100, 99, 1, 1)
        res = _verify(job, "--key-range", "id=..100", "--sample", "30", "--seed", "11")
        assert res.returncode == 0, res.stdout + res.stderr + proc.output()[-3000:]
        table = json.loads(res.stdout)["tables"][0]
        assert table["differences"] == 0 and table["source_rows"] <= 30, table
        assert writer.error is None, writer.error
    finally:
        writer.stop.set()
        if writer.is_alive():
            writer.join(10)
        if proc.alive():
            proc.terminate(60)

"""Online verify under a steady writer (issue 37's acceptance): no false difference in a series of runs,
every planted lake corruption found, and a sampled run finding each with the sample's probability.

MariaDB → Delta through `cdc run`, a seeded writer changing about 1,000 rows/s of one id range (HOT)
the whole time. `CDC_VERIFY_SERIES` online verifies (3 in CI; the acceptance run is 20) must each
report nothing. Then, on ids nobody writes (COLD), the lake is corrupted with deltalake: a row
deleted (missing), a value changed (changed), a row the source deleted put back (resurrected:
extra). One more online verify, the writer still going, must find exactly those three. Sampled
runs with different seeds find each planted key about as often as the sample's share of the table
(a binomial bound wide enough to fail only on a broken draw), and never report anything else.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from cdc.jobs.load import load_job
from cdc.jobs.status import collect
from cdc.jobs.verify.job import Verifier, verify_online
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.support.proc import CdcProcess, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = int(os.environ.get("CDC_TEST_SEED", "0")) or random.randrange(1, 2**31)
SERIES = int(os.environ.get("CDC_VERIFY_SERIES", "3"))
HOT = range(1, 1001)
COLD = range(1001, 2001)
RATE = 1000  # rows/s


class Writer(threading.Thread):
    """About RATE row changes a second on HOT ids (upserts and deletes, 10 rows per transaction)."""

    def __init__(self, server: Any, seed: int) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.paused = threading.Event()
        self.rows = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = self.rng
        started, base = time.monotonic(), 0  # the pace restarts after a pause
        try:
            with self.server.connect() as conn, conn.cursor() as cur:
                while not self.stop.is_set():
                    if self.paused.is_set():
                        time.sleep(0.05)
                        started, base = time.monotonic(), self.rows
                        continue
                    for _ in range(10):
                        k = rng.choice(HOT)
                        if rng.random() < 0.1:
                            cur.execute("DELETE FROM items WHERE id = %s", (k,))
                        else:
                            cur.execute(
                                "INSERT INTO items VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE name = VALUES(name), "
                                "v = VALUES(v)",
                                (k, f"w{rng.randrange(1000)}", rng.randrange(10**6)),
                            )
                    conn.commit()
                    self.rows += 10
                    ahead = (self.rows - base) / RATE - (time.monotonic() - started)
                    if ahead > 0:
                        time.sleep(ahead)
        except BaseException as e:  # reported by the test
            self.error = e


def _online(job: Any, sample: tuple[int, int] | None = None) -> Any:
    with Verifier(job) as v:
        results, _passed, run = verify_online(v, None, 50, 300, sample)
    return results[0], run


def _quiet(lake: str) -> None:
    """Until the sink commits nothing for 4 s (deltalake's own commits must meet no other writer)."""
    version = -1
    while DeltaTable(lake).version() != version:
        version = DeltaTable(lake).version()
        time.sleep(4)


def test_online_verify_under_a_writer_finds_nothing_then_exactly_the_planted_corruptions(
    tmp_path: Path, mariadb_db: Any
) -> None:
    rng = random.Random(SEED)
    note = f"seed {SEED} (CDC_TEST_SEED={SEED} repeats it)"
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
        cur.executemany("INSERT INTO items VALUES (%s, %s, %s)", [(i, f"n{i}", i) for i in range(1, 2001)])
        conn.commit()
    table = f"{mariadb_db.database}.items"
    props = connector_props(mariadb_db, table__include__list=table, heartbeat__interval__ms=500)
    job_file = mysql_delta_job(tmp_path, "accept", props, {table: "target: items"})
    lake = str(tmp_path / "lake" / "items")
    proc = CdcProcess("run", str(job_file), log_path=tmp_path / "run.log")
    writer = Writer(mariadb_db, SEED)
    try:
        job = load_job(str(job_file), inspect_only=True)
        wait_for(lambda: collect(job).task_state == "RUNNING", 120, "the source task", proc)
        wait_for(lambda: DeltaTable.is_deltatable(lake), 180, "the lake table", proc)
        writer.start()
        began = time.monotonic()
        wait_for(lambda: writer.rows > 2 * RATE, 60, "the writer")

        waits = []
        for i in range(SERIES):
            result, run = _online(job)
            assert result.differences == 0, f"{note}: run {i + 1} of {SERIES}: {result.to_json()}"
            assert result.source_rows >= len(COLD), result.to_json()  # keys changed after X are not compared
            waits.append(run.waited_s)
        pace = writer.rows / (time.monotonic() - began)
        waited = sorted(round(w, 1) for w in waits)
        print(f"{SERIES} online runs, no difference; writer {pace:.0f} rows/s; lake waits {waited} s; {note}")

        # The corruptions, on COLD ids, made while the sink has nothing to commit.
        lost, stale, back = rng.sample(COLD, 3)
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            cur.execute("DELETE FROM items WHERE id = %s", (back,))
            conn.commit()
        wait_for(lambda: back not in _ids(lake), 60, "the source's delete in the lake", proc)
        writer.paused.set()
        _quiet(lake)
        dt = DeltaTable(lake)
        row = dt.to_pyarrow_table(filters=[("id", "=", stale)])
        dt.delete(f"id = {lost}")
        DeltaTable(lake).update(updates={"v": "-1"}, predicate=f"id = {stale}")
        resurrected = row.set_column(
            row.schema.get_field_index("id"), "id", pa.array([back], row.schema.field("id").type)
        )
        write_deltalake(lake, resurrected, mode="append")
        before = writer.rows
        writer.paused.clear()
        wait_for(lambda: writer.rows > before + RATE, 30, "the writer again")

        result, _run = _online(job)
        found = {(d.kind, int(d.key["id"])) for d in result.samples}
        assert (result.missing, result.changed, result.extra, result.duplicates) == (1, 1, 1, 0), (note, found)
        assert found == {("missing", lost), ("changed", stale), ("extra", back)}, note

        # Sampled: each planted key is drawn with the sample's share of the table; nothing else is reported.
        share, draws, hits = 0.5, 4, 0
        for _ in range(draws):
            seed = rng.randrange(2**32)
            result, _run = _online(job, (int(share * len(COLD) * 2), seed))
            kinds = {(d.kind, int(d.key["id"])) for d in result.samples}
            assert kinds <= found, f"{note}: sampled run (seed {seed}) reported {kinds - found}"
            hits += len(kinds)
        # 12 draws at p = 0.5: outside [1, 11] has probability 2 * 0.5**12 (about 1 in 2000).
        assert 1 <= hits <= 3 * draws - 1, f"{note}: {hits} of {3 * draws} planted keys found by samples"
        assert writer.error is None, writer.error
    finally:
        writer.stop.set()
        if writer.is_alive():
            writer.join(10)
        if proc.alive():
            proc.terminate(60)


def _ids(lake: str) -> set[int]:
    return set(DeltaTable(lake).to_pyarrow_table(columns=["id"]).column("id").to_pylist())

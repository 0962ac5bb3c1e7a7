"""`cdc verify --repair` from a PostgreSQL source into a PostgreSQL target (issue 37's acceptance; the MariaDB →
Delta case is test_verify_repair_live.py): drift made in the warehouse with psycopg is healed through the
running job's signal table by incremental snapshots of exactly the differing keys, while a writer keeps
changing other rows. The warehouse is read back with psycopg, not with `cdc verify`.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cdc.jobs.load import load_job
from cdc.jobs.status import collect
from tests.jobs.jobfile import mysql_delta_job
from tests.postgres.harness import connector_props
from tests.support.proc import CdcProcess, run_cdc, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = random.randrange(2**32)
NAMES = ["plain", "it's", 'say "hi"', "back\\slash", "100%", "ünïcødé 😀", None]
SIGNALS = "public.debezium_signal"


def _rows(server: Any, table: str) -> set[tuple[Any, ...]]:
    with server.connect() as conn:
        return {tuple(r) for r in conn.execute(f"SELECT id, name, v FROM {table}").fetchall()}


class _Writer(threading.Thread):
    """Updates rows 150..200 (no drift is made there), one transaction at a time."""

    def __init__(self, server: Any) -> None:
        super().__init__(name="repair-writer", daemon=True)
        self.server, self.done, self.error = server, 0, None
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            with self.server.connect(autocommit=True) as conn:
                while not self._stop_event.is_set():
                    conn.execute("UPDATE items SET v = v + 1 WHERE id = %s", (150 + self.done % 51,))
                    self.done += 1
                    time.sleep(0.02)
        except Exception as e:  # reported by the test
            self.error = e

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(10)


def test_repair_heals_a_postgres_target_from_a_postgres_source_under_a_writer(tmp_path: Path, postgres_db: Any) -> None:
    rng = random.Random(SEED)
    with postgres_db.connect(autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"
        )
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text, v int)")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO items VALUES (%s, %s, %s)", [(i, NAMES[i % len(NAMES)], i * 3) for i in range(1, 201)]
            )
    props = connector_props(
        postgres_db,
        table__include__list="public.items",
        signal__data__collection=SIGNALS,
        slot__drop__on__stop="false",
    )
    job = mysql_delta_job(tmp_path, "heal", props, {"public.items": "target: items"})
    text = job.read_text()
    start, end = text.index("sink:\n"), text.index("  tables:\n")
    job.write_text(text[:start] + f"sink:\n  type: postgres\n  dsn: {postgres_db.dsn}\n  schema: lake\n" + text[end:])
    try:
        res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        assert _rows(postgres_db, "lake.items") == _rows(postgres_db, "items")

        # Drift the pipeline cannot see, on ids below the writer's: a run of ids and single ones deleted,
        # values changed (one to NULL), a seeded choice.
        lost = sorted(rng.sample(range(1, 140), 12)) + list(range(20, 30))
        stale = sorted(rng.sample([i for i in range(1, 140) if i not in lost], 5))
        with postgres_db.connect(autocommit=True) as conn:
            conn.execute("DELETE FROM lake.items WHERE id = ANY(%s)", (lost,))
            conn.execute("UPDATE lake.items SET v = -1 WHERE id = ANY(%s)", (stale[:-1],))
            conn.execute("UPDATE lake.items SET name = NULL, v = NULL WHERE id = %s", (stale[-1],))
        missing = len(set(lost))
        res = run_cdc("verify", str(job), "--quiet", timeout=120)
        want = f"{missing + 5} differences ({missing} missing in the target, 5 changed)"
        assert res.returncode == 1 and want in res.stdout, (SEED, res.stdout + res.stderr)

        proc = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
        writer = _Writer(postgres_db)
        try:
            spec = load_job(str(job), inspect_only=True)
            wait_for(lambda: collect(spec).task_state == "RUNNING", 120, "the source task", proc)
            writer.start()
            wait_for(lambda: writer.done >= 20, 60, "the writer's first changes", proc)
            res = run_cdc("verify", str(job), "--repair", "--repair-timeout", "240", timeout=400)
            assert res.returncode == 0, res.stdout + res.stderr + proc.output()[-3000:]
            assert writer.done >= 40, f"the writer made only {writer.done} changes during the repair"
            writer.stop()
            assert writer.error is None, writer.error
            wait_for(
                lambda: _rows(postgres_db, "lake.items") == _rows(postgres_db, "items"),
                120,
                "the warehouse to equal the source",
                proc,
            )
        finally:
            writer.stop()
            if proc.alive():
                proc.terminate(60)
        out = res.stdout
        assert f"repair public.items: before {missing + 5} differences ({missing} missing, 5 changed)" in out, out
        assert "after, on those keys: 0 differences" in out, out
    finally:
        with postgres_db.connect(autocommit=True) as conn:
            # This job's slot only: the session server's other slots belong to tests running beside this one.
            conn.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s AND NOT active",
                (props["slot.name"],),
            )

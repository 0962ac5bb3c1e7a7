"""`cdc status` while `cdc run` runs: the sink's heartbeat watermark says how far the lake reflects the
database, and the lake (read with deltalake) is never behind what it claims (issue 31).

A seeded writer inserts, updates and deletes rows of MariaDB or PostgreSQL in bursts with idle gaps,
and changes a table the job does not capture; every value
written is a new number from one counter, so "the lake holds this change or a later one" is a
comparison. Each time `cdc status` says "the lake reflects the database as of T", the lake, read
right after, must hold for every key the last change committed before T, or a later one. Heartbeats
run every 300 ms, so the watermark moves on while the database is idle.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from cdc.jobs.load import load_job
from cdc.jobs.status import collect, render
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.postgres.harness import connector_props as pg_props
from tests.rig import mariadb as mariadb_rig
from tests.rig import postgres as postgres_rig
from tests.support.proc import CdcProcess, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = int(os.environ.get("CDC_TEST_SEED", "0")) or random.randrange(1, 2**31)
KEYS = range(1, 41)


class Writer(threading.Thread):
    """Bursts of single-row transactions, then idle gaps; records when each commit returned."""

    def __init__(self, server: Any, seed: int, upsert: str) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.upsert = upsert
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.seq = 1000
        # key -> [(commit returned at ms, value or None for a delete)], in commit order
        self.history: dict[int, list[tuple[int, int | None]]] = {k: [] for k in KEYS}
        self.lock = threading.Lock()
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = self.rng
        try:
            with self.server.connect() as conn, conn.cursor() as cur:
                while not self.stop.is_set():
                    for _ in range(rng.randrange(1, 30)):
                        key = rng.choice(KEYS)
                        self.seq += 1
                        roll = rng.random()
                        if roll < 0.1:
                            cur.execute("INSERT INTO other VALUES (%s)", (self.seq,))  # not captured
                            conn.commit()
                            continue
                        if roll < 0.3:
                            cur.execute("DELETE FROM items WHERE id = %s", (key,))
                            value = None
                        else:
                            cur.execute(self.upsert, (key, self.seq))
                            value = self.seq
                        conn.commit()
                        with self.lock:
                            self.history[key].append((int(time.time() * 1000), value))
                    time.sleep(rng.choice((0.0, 0.05, 0.5, 1.5, 3.0)))
        except BaseException as e:  # reported by the test
            self.error = e


def _lake(path: str) -> dict[int, int]:
    table = DeltaTable(path).to_pyarrow_table(columns=["id", "v"]).to_pylist()
    return {row["id"]: row["v"] for row in table}


def _check(lake: dict[int, int], history: dict[int, list[tuple[int, int | None]]], as_of: int) -> list[str]:
    """Keys whose lake value is older than the last change committed before `as_of`."""
    wrong = []
    for key, changes in history.items():
        before = [i for i, (at, _v) in enumerate(changes) if at < as_of]
        if not before:
            continue
        due = before[-1]
        held = lake.get(key)
        # The lake may be further on than T: any change from the due one on is right.
        allowed = {v for _at, v in changes[due:]}
        if held not in allowed:
            wrong.append(f"id {key}: lake {held}, due {changes[due][1]} (changes {changes[due:][:4]})")
    return wrong


UPSERT = {
    "mariadb": "INSERT INTO items VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)",
    "postgres": "INSERT INTO items VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v",
}


@contextmanager
def _source(which: str) -> Iterator[tuple[Any, dict[str, str], str]]:
    """A private server (another test's writes on a shared one would move its log past every heartbeat,
    and "nothing lies past it" would rarely hold), the job's source keys (heartbeats every 300 ms) and
    the captured table's name."""
    with ExitStack() as stack:
        if which == "mariadb":
            server = stack.enter_context(stack.enter_context(mariadb_rig.spawn_local()).fresh_database())
            table = f"{server.database}.items"
            props = connector_props(server, table__include__list=table, heartbeat__interval__ms=300)
        else:
            private = stack.enter_context(postgres_rig.provide({"wal_sender_timeout": "60s"}))
            server = stack.enter_context(private.fresh_database())
            table = "public.items"
            props = pg_props(server, table__include__list=table, heartbeat__interval__ms=300)
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE items (id INT PRIMARY KEY, v INT)")
            cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")  # never captured: its changes are only bytes
            conn.commit()
        yield server, props, table


@pytest.mark.parametrize("which", ["mariadb", "postgres"])
def test_the_lake_holds_everything_the_watermark_claims_while_a_writer_runs(tmp_path: Path, which: str) -> None:
    with _source(which) as (server, props, table):
        _watermark_under_a_writer(tmp_path, server, props, table, UPSERT[which])


def _watermark_under_a_writer(tmp_path: Path, server: Any, props: dict[str, str], table: str, upsert: str) -> None:
    job = mysql_delta_job(tmp_path, "watermark", props, {table: "target: items"})
    lake = str(tmp_path / "lake" / "items")
    proc = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
    writer = Writer(server, SEED, upsert)
    note = f"seed {SEED} (CDC_TEST_SEED={SEED} repeats it)"
    checked = 0
    try:
        spec = load_job(str(job), inspect_only=True)
        wait_for(lambda: collect(spec).task_state == "RUNNING", 120, "the source task", proc)
        writer.start()
        wait_for(lambda: DeltaTable.is_deltatable(lake), 180, "the lake table", proc)
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline or checked < 3:
            assert time.monotonic() < deadline + 90, f"the lake never caught up while idle 3 times; {note}"
            status = collect(spec)
            mark = status.watermark
            if mark is None or mark.get("unread_bytes") != 0:
                time.sleep(0.3)
                continue
            text = "\n".join(render(status))
            assert "lake: reflects the database as of" in text, text
            with writer.lock:
                history = {k: list(v) for k, v in writer.history.items()}
            wrong = _check(_lake(lake), history, mark["asked_at_ms"])
            assert not wrong, f"{note}: the lake is behind its watermark: {wrong[:5]}\n{text}"
            checked += 1
            time.sleep(random.Random(SEED + checked).uniform(0.1, 1.2))
        writer.stop.set()
        writer.join(30)
        assert writer.error is None, writer.error
        # With the writer stopped, the watermark passes the last change and the lake equals the database.
        last = {k: v[-1][1] for k, v in writer.history.items() if v}
        wait_for(lambda: collect(spec).lake_caught_up, 60, "the watermark after the writer stopped", proc)
        assert {k: v for k, v in last.items() if v is not None} == _lake(lake), note
    finally:
        writer.stop.set()
        if writer.is_alive():
            writer.join(10)
        if proc.alive():
            proc.terminate(60)

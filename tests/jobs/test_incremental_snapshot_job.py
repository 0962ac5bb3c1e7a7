"""Issue 22's acceptance: a table added to a running job's include list is brought into the lake by an
incremental snapshot (`cdc signal ... execute-snapshot`), without re-reading the other tables.

MariaDB → MySQL connector → embedded log → Spark → Delta. The first `cdc run --until-caught-up`
snapshots `a` and `b`; `c` exists but is not included. The job file then includes `c`, a
background `cdc run` streams, the signal goes through the signal table, and a seeded writer
updates, deletes and inserts rows of `c` (and updates `a`) while the chunks are read. `cdc status`
(collected in-process, as the command does) shows the snapshot's per-table progress meanwhile.
Afterwards the Delta table `c` equals the source table, and the log holds no `r` events of `a` and
`b` beyond the first run's.
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
from cdc.log.embedded import EmbeddedLog
from cdc_debezium.signals.incremental import IncrementalSnapshotContext
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.mysql.incremental_support import create_signal_table
from tests.rig import MariaDbServer
from tests.support.logs import incremental_read_ids, stored_offsets, topic_records
from tests.support.proc import CdcProcess, run_cdc, wait_for

pytestmark = pytest.mark.slow

SEED = 2240
CHUNK = 10  # about 300 chunks of c: long enough for `cdc status` to see it running
ROWS = {"a": 40, "b": 30, "c": 3000}


def _job(tmp_path: Path, server: MariaDbServer, tables: list[str], **extra: str) -> Path:
    db = server.database
    props = connector_props(
        server, table__include__list=",".join(f"{db}.{t}" for t in tables),
        signal__data__collection=f"{db}.debezium_signal", incremental__snapshot__chunk__size=str(CHUNK), **extra,
    )  # fmt: skip
    return mysql_delta_job(tmp_path, "grow", props, {f"{db}.{t}": f"keys: [id], target: {t}" for t in tables})


def _source(server: MariaDbServer, table: str) -> dict[int, int]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id, v FROM {table}")
        return {r[0]: r[1] for r in cur.fetchall()}


def _lake(tmp_path: Path, table: str) -> dict[int, int]:
    rows = DeltaTable(str(tmp_path / "lake" / table)).to_pyarrow_table().to_pylist()
    return {r["id"]: r["v"] for r in rows if not r["__deleted"]}


def _reads(tmp_path: Path, db: str) -> dict[str, list[str]]:
    """Per table, the `source.snapshot` of each `r` event in its topic."""
    out: dict[str, list[str]] = {}
    with EmbeddedLog(tmp_path / "state", synchronous="NORMAL") as log_:
        for table in ROWS:
            values = [json.loads(r.value) for r in topic_records(log_, f"dbserver1.{db}.{table}") if r.value]
            payloads = [v.get("payload", v) for v in values]
            out[table] = [str(p["source"]["snapshot"]) for p in payloads if p["op"] == "r"]
    return out


class Writer(threading.Thread):
    """Seeded updates, deletes and inserts on `c` (and updates on `a`) until stopped."""

    def __init__(self, server: MariaDbServer, seed: int) -> None:
        super().__init__(daemon=True)
        self.server, self.rnd = server, random.Random(seed)
        self.stop_flag, self.error, self.ops = threading.Event(), None, 0

    def run(self) -> None:
        try:
            with self.server.connect() as conn, conn.cursor() as cur:
                while not self.stop_flag.is_set():
                    key, op = self.rnd.randint(1, ROWS["c"] + 200), self.rnd.random()
                    if op < 0.5:
                        cur.execute("UPDATE c SET v = v + 1 WHERE id = %s", (key,))
                    elif op < 0.75:
                        cur.execute("DELETE FROM c WHERE id = %s", (key,))
                    elif op < 0.95:
                        cur.execute("INSERT INTO c VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = -v", (key, self.ops))
                    else:
                        cur.execute("UPDATE a SET v = v + 1 WHERE id = %s", (self.rnd.randint(1, ROWS["a"]),))
                    conn.commit()
                    self.ops += 1
                    time.sleep(0.002)
        except Exception as e:  # reported by the test
            self.error = e


class StatusWatcher(threading.Thread):
    """Collects `cdc status` over and over, keeping the given table's incremental progress rows and
    the last stored source offset."""

    def __init__(self, collect_status: Any, table: str, seen: list[dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.collect_status, self.table, self.seen = collect_status, table, seen
        self.stop_flag = threading.Event()
        self.last_offset: dict[str, Any] | None = None
        self._rounds = 0
        self._mark: int | None = None

    def offset_after_mark(self) -> dict[str, Any] | None:
        """The last offset, once a round begun after the first call has ended (else None)."""
        if self._mark is None:
            self._mark = self._rounds
        return self.last_offset if self._rounds >= self._mark + 2 else None

    def run(self) -> None:
        while not self.stop_flag.is_set():
            try:
                status = self.collect_status()
            except Exception:  # the running job holds the state: collect again
                time.sleep(0.05)
                continue
            self.seen.extend(t.incremental for t in status.tables if t.table == self.table and t.incremental)
            self.last_offset = status.source_offset
            self._rounds += 1


def _tables(server: MariaDbServer, rnd: random.Random) -> None:
    create_signal_table(server)
    with server.connect() as conn, conn.cursor() as cur:
        for table, n in ROWS.items():
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT)")
            cur.execute(
                f"INSERT INTO {table} VALUES " + ",".join(f"({i}, {rnd.randint(0, 99)})" for i in range(1, n + 1))
            )
        conn.commit()


def test_a_table_added_to_the_include_list_is_snapshotted_by_a_signal_alone(
    tmp_path: Path, mariadb_db: MariaDbServer
) -> None:
    rnd = random.Random(SEED)
    db = mariadb_db.database
    _tables(mariadb_db, rnd)
    job = _job(tmp_path, mariadb_db, ["a", "b"])
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    first = _reads(tmp_path, db)
    assert (len(first["a"]), len(first["b"]), len(first["c"])) == (ROWS["a"], ROWS["b"], 0)

    job = _job(tmp_path, mariadb_db, ["a", "b", "c"])  # c joins the include list
    writer = Writer(mariadb_db, SEED)
    proc = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
    try:
        spec = load_job(str(job), inspect_only=True)
        wait_for(lambda: collect(spec).task_state == "RUNNING", 120, "the source task", proc)
        writer.start()
        # `cdc status` is collected in a loop of its own from before the signal on: on a quiet
        # machine the whole snapshot can take less than one collection round of the wait below.
        seen: list[dict[str, Any]] = []
        watcher = StatusWatcher(lambda: collect(spec), f"{db}.c", seen)
        watcher.start()
        res = run_cdc("signal", str(job), "execute-snapshot", "--tables", f"{db}.c", "--id", "grow-c")
        assert res.returncode == 0 and "signal table" in res.stdout, res.stdout + res.stderr

        def snapshot_done() -> bool:
            # Done: c's reads have begun, and a status round begun after that found the snapshot's
            # keys gone from the stored offset.
            if not _reads_c(tmp_path, db):
                return False
            offset = watcher.offset_after_mark()
            return bool(offset) and "incremental_snapshot_collections" not in offset

        wait_for(snapshot_done, 180, "the incremental snapshot's end", proc)
    finally:
        writer.stop_flag.set()
        writer.join(30)
        if "watcher" in locals():
            watcher.stop_flag.set()
            watcher.join(60)
        if proc.alive():
            proc.terminate(60)
    assert writer.error is None, writer.error
    assert writer.ops > 50, writer.ops  # the writer ran during the snapshot
    # Progress was visible while it ran: rows, chunks by the chunk size, and the database's estimate.
    assert seen, "cdc status never showed the running incremental snapshot"
    assert all(p["chunks"] == p["rows"] // CHUNK and p["state"] == "running" for p in seen)
    assert any(p["estimate"] is not None and p["rows"] > 0 and p["eta_ms"] is not None for p in seen), seen

    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _lake(tmp_path, "c") == _source(mariadb_db, "c")
    assert _lake(tmp_path, "a") == _source(mariadb_db, "a")
    after = _reads(tmp_path, db)
    assert after["a"] == first["a"] and after["b"] == first["b"]  # no table but c was read again
    assert after["c"] and set(after["c"]) == {"incremental"}


def _reads_c(tmp_path: Path, db: str) -> list[str]:
    try:
        return _reads(tmp_path, db)["c"]
    except Exception:  # the running job holds a write transaction: read again next time
        return []


def test_with_snapshot_new_tables_a_restart_snapshots_the_added_table_by_itself_across_a_kill(
    tmp_path: Path, mariadb_db: MariaDbServer
) -> None:
    """snapshot.new.tables=parallel: no signal. The run that first includes `c` is SIGKILLed during c's
    snapshot; the next `cdc run --until-caught-up` resumes it after the stored chunk (it waits for the
    snapshot, not only for the binlog position) and the lake's `c` equals the table, with `a` and `b`
    never read again."""
    rnd = random.Random(SEED + 1)
    db = mariadb_db.database
    state = tmp_path / "state"
    _tables(mariadb_db, rnd)
    job = _job(tmp_path, mariadb_db, ["a", "b"], snapshot__new__tables="parallel")
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    first = _reads(tmp_path, db)
    assert (len(first["a"]), len(first["b"]), len(first["c"])) == (ROWS["a"], ROWS["b"], 0)

    job = _job(tmp_path, mariadb_db, ["a", "b", "c"], snapshot__new__tables="parallel")
    writer = Writer(mariadb_db, SEED + 1)
    topic = f"dbserver1.{db}.c"
    proc = CdcProcess("run", str(job), log_path=tmp_path / "run-killed.log")
    try:
        writer.start()
        wait_for(
            lambda: len(incremental_read_ids(state, topic)) >= 30 * CHUNK, 180, "c's first chunks in the log", proc
        )
        proc.kill9()
        killed = incremental_read_ids(state, topic)
        assert len(killed) < ROWS["c"], "the snapshot ended before the kill: make c larger"
        stored = _stored_snapshot(state)
        assert stored.running and stored.last_key is not None, "no chunk of c in the stored offset"
        res = run_cdc("run", str(job), "--until-caught-up", timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
    finally:
        writer.stop_flag.set()
        writer.join(30)
        if proc.alive():
            proc.kill9()
    assert writer.error is None, writer.error
    assert "incremental_snapshot_collections" not in _stored_offset(state)  # --until-caught-up waited for it
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)  # the writer's last changes
    assert res.returncode == 0, res.stderr[-3000:]
    assert _lake(tmp_path, "c") == _source(mariadb_db, "c")
    assert _lake(tmp_path, "a") == _source(mariadb_db, "a")
    after = _reads(tmp_path, db)
    assert after["a"] == first["a"] and after["b"] == first["b"]  # no table but c was read again
    assert set(after["c"]) == {"incremental"}
    # Resumed, not restarted: every read after the kill is above the chunk key the offset had stored.
    resumed = incremental_read_ids(state, topic)[len(killed) :]
    assert resumed and min(resumed) > _first(stored.last_key), (min(resumed), stored.last_key)


def _stored_offset(state: Path) -> dict[str, Any]:
    with EmbeddedLog(state, synchronous="NORMAL") as log_:
        offsets = [v for k, v in stored_offsets(log_).items() if "dbserver1" in k]
    return offsets[-1] if offsets else {}


def _stored_snapshot(state: Path) -> IncrementalSnapshotContext:
    return IncrementalSnapshotContext.load(_stored_offset(state))


def _first(key: Any) -> int:
    return int(key[0] if isinstance(key, (tuple, list)) else key)

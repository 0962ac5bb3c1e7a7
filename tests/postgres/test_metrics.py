"""PostgreSQL task metrics, read from the status topic as another process would: snapshot progress, retained WAL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import State, StatusBackingStore
from tests.postgres.test_connector import connector


@pytest.fixture
def config(tmp_path: Path) -> WorkerConfig:
    return WorkerConfig({"transport": "embedded", "state.dir": str(tmp_path / "state")})


@pytest.fixture
def herder(config: WorkerConfig) -> Iterator[StandaloneHerder]:
    log_ = open_log(config)
    worker = Worker(
        config, PluginRegistry.discover(), log_, open_offset_store(config, log_), open_status_store(config, log_), "w"
    )
    h = StandaloneHerder(worker)
    h.start()
    yield h
    h.stop()


def wait_for_metrics(store: StatusBackingStore, cond, what: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    metrics: dict = {}
    while time.monotonic() < deadline:
        store.refresh()
        reports = store.task_metrics("pg")
        metrics = reports[0].metrics if reports else {}
        if metrics and cond(metrics):
            return metrics
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last: {metrics}")


def test_snapshot_progress_and_retained_wal(herder: StandaloneHerder, config: WorkerConfig, postgres_db) -> None:
    sql = postgres_db.connect(autocommit=True)
    sql.execute("CREATE TABLE public.t(id int PRIMARY KEY, pad text)")
    sql.execute("INSERT INTO t SELECT g, 'x' FROM generate_series(1, 25) g")
    reader_log = open_log(config)
    reader = StatusBackingStore(reader_log, config.get("status.storage.topic"))
    try:
        herder.put_connector_config(connector(postgres_db))
        reader.start()
        m = wait_for_metrics(reader, lambda m: m.get("SnapshotCompleted"), "a completed snapshot")
        assert m["TotalTableCount"] == 1 and m["RemainingTableCount"] == 0 and m["SnapshotRunning"] is False
        assert m["RowsScanned"] == {"public.t": 25} and "public.t" in m["RowsEstimated"]
        assert m["RetainedWalBytes"] is None or m["RetainedWalBytes"] >= 0

        # Paused, the task stores no offsets, so the slot's restart_lsn stays put and every byte of
        # WAL written now is retained.
        herder.pause_connector("pg")
        status = herder.worker.status_store
        deadline = time.monotonic() + 10
        while (s := status.get_task("pg", 0)) is None or s.state is not State.PAUSED:
            assert time.monotonic() < deadline, "task did not pause"
            time.sleep(0.05)
        lsn = "SELECT pg_current_wal_lsn()"
        before = sql.execute(lsn).fetchone()[0]
        sql.execute("INSERT INTO t SELECT g, repeat('y', 1000) FROM generate_series(26, 2025) g")
        written = sql.execute(f"SELECT pg_wal_lsn_diff(({lsn}), %s::pg_lsn)", (before,)).fetchone()[0]
        assert written > 1_000_000
        m = wait_for_metrics(reader, lambda m: (m.get("RetainedWalBytes") or 0) >= written, "retained WAL")
        (retained_now,) = sql.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots "
            "WHERE slot_name = 'cdc_test'"
        ).fetchone()
        # restart_lsn may still catch up to the confirmed position from before the pause (a few KB).
        assert written <= m["RetainedWalBytes"] <= retained_now + 256 * 1024
        assert herder.worker.tasks[ConnectorTaskId("pg", 0)].paused
    finally:
        reader.stop()
        reader_log.close()

"""Snapshot progress and streaming metrics of the MySQL connector, read back from the status topic."""

from __future__ import annotations

import time
from pathlib import Path

from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import StatusBackingStore
from tests.mysql.harness import connector_props, execute


def wait_for_metrics(store: StatusBackingStore, cond, what: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        store.refresh()
        reports = store.task_metrics("shop")
        if reports and cond(reports[0].metrics):
            return reports[0].metrics
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last: {reports[0].metrics if reports else None}")


def test_snapshot_progress_and_streaming_metrics(mariadb_db, tmp_path: Path) -> None:
    db = mariadb_db.database
    execute(
        mariadb_db,
        "CREATE TABLE a (id INT PRIMARY KEY)",
        "CREATE TABLE b (id INT PRIMARY KEY)",
        "INSERT INTO a VALUES (1), (2), (3)",
        "INSERT INTO b VALUES (1), (2), (3), (4), (5)",
    )
    config = WorkerConfig({"transport": "embedded", "state.dir": str(tmp_path / "state")})
    log_ = open_log(config)
    worker = Worker(
        config, PluginRegistry.discover(), log_, open_offset_store(config, log_), open_status_store(config, log_), "w"
    )
    herder = StandaloneHerder(worker)
    herder.start()
    # `cdc status` in another process: its own client of the same embedded log.
    reader_log = open_log(config)
    reader = StatusBackingStore(reader_log, config.get("status.storage.topic"))
    try:
        herder.put_connector_config({"name": "shop", **connector_props(mariadb_db)})
        reader.start()
        m = wait_for_metrics(reader, lambda m: m.get("SnapshotCompleted"), "a completed snapshot")
        assert m["SnapshotRunning"] is False
        assert m["TotalTableCount"] == 2 and m["RemainingTableCount"] == 0
        assert m["RowsScanned"] == {f"{db}.a": 3, f"{db}.b": 5}
        assert set(m["RowsEstimated"]) == {f"{db}.a", f"{db}.b"}

        execute(mariadb_db, "INSERT INTO a VALUES (4)")
        m = wait_for_metrics(reader, lambda m: m.get("TotalNumberOfEventsSeen"), "streaming metrics")
        assert m["TotalNumberOfEventsSeen"] == 1 and m["Connected"] is True  # the insert, not the snapshot rows
        assert m["MilliSecondsBehindSource"] >= 0 and m["LastEventTs"] > 0
        position = m["SourceEventPosition"]
        assert position["file"] and position["pos"] > 0 and position["row"] == 1 and "snapshot" not in position
    finally:
        reader.stop()
        reader_log.close()
        herder.stop()

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


def test_lag_is_reported_when_every_batch_ends_with_a_transaction_end_record(mariadb_db) -> None:
    """With provide.transaction.metadata=true a streamed transaction's batch ends with its END
    record, which has no source block: MilliSecondsBehindSource stayed None (and left /metrics)."""
    from tests.mysql.harness import TaskRunner

    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)")
    with TaskRunner(connector_props(mariadb_db, provide__transaction__metadata="true")) as run:
        run.wait_streaming()
        execute(mariadb_db, "INSERT INTO t VALUES (1)")
        run.poll_until(lambda recs: any(r.topic.endswith(".transaction") for r in recs), what="a transaction's END")
        while run.poll_once():
            pass
        assert run.records[-1].topic.endswith(".transaction"), "the last record must be the END record"
        metrics = run.task.stream_metrics.values(True)
    assert metrics["MilliSecondsBehindSource"] is not None and metrics["MilliSecondsBehindSource"] >= 0
    assert metrics["LastEventTs"] > 0

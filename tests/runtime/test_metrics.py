"""Task metrics: a task's report reaches the status topic and another process's StatusBackingStore reads it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cdc.api import TaskMetrics
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import StatusBackingStore, TaskMetricsReport
from tests.rest.conftest import Rest
from tests.runtime.metered import MeteredSource, MeteredTask


def wait_for(cond, timeout: float = 20, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = cond()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def config(tmp_path: Path) -> WorkerConfig:
    return WorkerConfig({"transport": "embedded", "state.dir": str(tmp_path / "state")})


def start_herder(config: WorkerConfig) -> StandaloneHerder:
    registry = PluginRegistry.discover()
    registry.add(MeteredSource, "1.0", "test")
    log_ = open_log(config)
    worker = Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_), "w1")
    h = StandaloneHerder(worker)
    h.start()
    return h


def test_metrics_reach_a_second_store_over_the_same_log(config: WorkerConfig) -> None:
    MeteredTask.instances.clear()
    herder = start_herder(config)
    stopped = False
    # Another process: its own log client and status store over the same embedded file.
    reader_log = open_log(config)
    reader = StatusBackingStore(reader_log, config.get("status.storage.topic"))
    try:
        for name in ("m", "gone"):
            herder.put_connector_config({"name": name, "connector.class": "MeteredSource"})
        reader.start()

        def seen(name: str) -> TaskMetricsReport | None:
            reader.refresh()
            found = reader.task_metrics(name)
            return found[0] if found else None

        report = wait_for(lambda: seen("m"), what="the task's metrics in the status topic")
        assert report.task == 0 and report.worker_id == "w1" and report.timestamp > 0
        assert report.metrics["Connected"] is True and report.metrics["RowsScanned"] == {"db.t": 3}
        assert herder.worker.status_store.get_task_metrics("m", 0) is not None

        # Deleting a connector removes its tasks' metrics.
        wait_for(lambda: seen("gone"), what="the second connector's metrics")
        herder.delete_connector("gone")
        reader.refresh()
        assert reader.task_metrics("gone") == [] and herder.worker.status_store.task_metrics("gone") == []

        # Stopping the worker publishes the final values: every poll counted.
        herder.stop()
        stopped = True
        reader.refresh()
        (final,) = reader.task_metrics("m")
        (task,) = [t for t in MeteredTask.instances if t.name == "m"]
        assert final.metrics["TotalNumberOfEventsSeen"] == task.polls
    finally:
        reader.stop()
        reader_log.close()
        if not stopped:
            herder.stop()


def test_metrics_of_a_context_without_them_is_detached() -> None:
    class OldContext:
        def configs(self) -> dict[str, str]:
            return {}

    metrics = TaskMetrics.of(OldContext())
    metrics.update({"a": 1})
    metrics.register(lambda: {"b": 2})
    assert metrics.snapshot() == {"a": 1, "b": 2}


@pytest.mark.e2e
def test_metrics_of_a_task_in_its_own_process(tmp_path: Path) -> None:
    """`task.isolation=process`: the child's metrics reach the parent's status store (and REST)."""
    rest = Rest(tmp_path, **{"task.isolation": "process"})
    try:
        config = {"connector.class": "tests.runtime.metered.MeteredSource"}  # the child imports it by name
        assert rest.http.post("/connectors", json={"name": "iso", "config": config}).status_code == 201
        body = wait_for(
            lambda: (r := rest.http.get("/connectors/iso/tasks/0/metrics").json())["metrics"] and r,
            30,
            "metrics from the task process",
        )
        assert body["metrics"]["Connected"] is True and body["worker_id"] == "w1"
    finally:
        rest.close()

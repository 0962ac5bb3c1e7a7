"""Kafka Connect's connector-task-metrics offset-commit-* and the sampled statistics behind them.

Unit: Kafka's SampledStat window (cdc.runtime.sampled) and OffsetCommitMeter, with a clock given
by the test. Integration: a standalone worker with its REST API scraped at GET /metrics, once on
the embedded log (each log transaction is a commit) and once on Tansu (at-least-once: a flush of
the offsets every offset.flush.interval.ms), where the offsets file is made unwritable for a
while so that flushes really fail.
"""

from __future__ import annotations

import math
import os
import threading
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client import generate_latest

from cdc.api import ConfigDef, Schema, SourceConnector, SourceRecord, SourceTask, Task
from cdc.rest.server import RestServer
from cdc.runtime.prometheus import worker_registry
from cdc.runtime.sampled import SampledStat
from cdc.runtime.source_task import WorkerSourceTask
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.task_meters import OffsetCommitMeter
from tests.rest.conftest import make_worker, wait_until
from tests.runtime.prometheus_scrape import parse, scrape, scrape_until, value

# -- Kafka's sampled statistics ------------------------------------------------------------------


def test_an_empty_window_is_nan_for_avg_and_max_and_zero_for_frequencies() -> None:
    stat = SampledStat()
    assert math.isnan(stat.avg(0)) and math.isnan(stat.max(0))
    assert stat.frequencies(0) == (0.0, 0.0)


def test_values_stay_for_two_windows_then_are_forgotten() -> None:
    stat = SampledStat(window_ms=30_000, samples=2)
    stat.record(10, now=0)
    stat.record(20, now=10_000)
    assert stat.avg(10_000) == 15 and stat.max(10_000) == 20
    stat.record(30, now=35_000)  # the first sample is a window old: a second one starts
    assert stat.avg(35_000) == 20 and stat.max(35_000) == 30
    stat.record(40, now=65_000)  # the second is a window old too: the first (10, 20) is reused
    assert stat.avg(65_000) == 35 and stat.max(65_000) == 40
    # Read 60 s after a sample's last value: that sample is reset, the newer one is kept.
    assert stat.avg(95_000) == 40 and stat.max(95_000) == 40
    assert math.isnan(stat.avg(125_000)) and math.isnan(stat.max(125_000))


def test_frequencies_are_fractions_of_the_window() -> None:
    stat = SampledStat()
    for i, ok in enumerate([True, True, True, False]):
        stat.record(1.0 if ok else 0.0, now=i * 1000)
    assert stat.frequencies(5000) == (0.25, 0.75)
    assert stat.frequencies(200_000) == (0.0, 0.0)  # a quiet minute: nothing left


def test_offset_commit_meter_times_only_successful_commits() -> None:
    meter = OffsetCommitMeter()
    empty = meter.values(now=0)
    assert math.isnan(empty["offset-commit-avg-time-ms"]) and math.isnan(empty["offset-commit-max-time-ms"])
    assert empty["offset-commit-success-percentage"] == empty["offset-commit-failure-percentage"] == 0.0
    meter.record(4.0, True, now=0)
    meter.record(8.0, True, now=100)
    meter.record(500.0, False, now=200)  # a failed commit's time is not a commit time (Kafka's recordCommit)
    meter.record(6.0, True, now=300)
    v = meter.values(now=400)
    assert v["offset-commit-avg-time-ms"] == 6.0 and v["offset-commit-max-time-ms"] == 8.0
    assert v["offset-commit-success-percentage"] == 0.75 and v["offset-commit-failure-percentage"] == 0.25
    assert (meter.attempts, meter.failures) == (4, 1)


# -- a source that never runs dry ----------------------------------------------------------------


class TickSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def task_class(self) -> type[Task]:
        return TickTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()


class TickTask(SourceTask):
    """One record every 20 ms, each with its offset, so every flush has offsets to store."""

    def start(self, props: dict[str, str]) -> None:
        self.topic = props["topic"]
        self.stopped = threading.Event()
        stored = self.context.offset_storage_reader().offset({"tick": self.topic})
        self.n = stored["n"] if stored else 0

    def poll(self) -> list[SourceRecord] | None:
        if self.stopped.wait(0.02):
            return None
        self.n += 1
        return [SourceRecord({"tick": self.topic}, {"n": self.n}, self.topic, None, None, None, Schema.INT32_SCHEMA, 1)]

    def stop(self) -> None:
        self.stopped.set()


class Worker:
    """A standalone worker with TickSource installed and its REST API (GET /metrics) listening."""

    def __init__(self, tmp_path: Path, **props: str) -> None:
        worker = make_worker(tmp_path, **props)
        worker.registry.add(TickSource, "1.0", "test")
        self.herder = StandaloneHerder(worker, tick_interval=0.05)
        self.server = RestServer(worker.config, self.herder)
        self.herder.start()
        self.server.start()
        self.http = httpx.Client(base_url=self.server.url, timeout=30)

    def runner(self, name: str) -> WorkerSourceTask:
        runner = wait_until(lambda: self.herder.worker.tasks.get(ConnectorTaskId(name, 0)), 30, f"{name}'s task")
        assert isinstance(runner, WorkerSourceTask)
        return runner

    def close(self) -> None:
        self.http.close()
        self.server.stop()
        self.herder.stop()


def commit_values(samples, name: str) -> dict[str, float | None]:
    task = {"connector": name, "task": "0"}
    return {
        attr: value(samples, f"kafka_connect_connector_task_offset_commit_{attr}", **task)
        for attr in ("avg_time_ms", "max_time_ms", "success_percentage", "failure_percentage")
    }


@pytest.mark.integration
def test_each_log_transaction_is_an_offset_commit_on_the_embedded_log(tmp_path: Path) -> None:
    w = Worker(tmp_path)
    try:
        config = {"connector.class": "TickSource", "topic": "t"}
        assert w.http.post("/connectors", json={"name": "tick", "config": config}).status_code == 201
        runner = w.runner("tick")
        assert runner.transactional
        wait_until(lambda: runner.commits.attempts >= 5, 30, "five transactions")
        _, s = scrape(w.http)
        v = commit_values(s, "tick")
        assert v["success_percentage"] == 1.0 and v["failure_percentage"] == 0.0
        assert v["avg_time_ms"] is not None and 0 <= v["avg_time_ms"] <= v["max_time_ms"] < 60_000
        # The same figures through the registry `metrics.port` serves, parsed the same way.
        registry = parse(generate_latest(worker_registry(w.herder)).decode())
        assert commit_values(registry, "tick")["success_percentage"] == 1.0
    finally:
        w.close()


@pytest.mark.integration
def test_at_least_once_flushes_are_timed_and_failed_flushes_counted(tansu, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    offsets_dir = tmp_path / "offsets"
    offsets_dir.mkdir()
    w = Worker(
        tmp_path,
        **{
            "transport": "kafka",
            "bootstrap.servers": tansu.bootstrap,
            "offset.storage.file.filename": str(offsets_dir / "offsets.json"),
            "status.storage.topic": f"status-{run}",
            "config.storage.topic": f"configs-{run}",
            "offset.flush.interval.ms": "2000",
        },
    )
    try:
        config = {"connector.class": "TickSource", "topic": f"tick-{run}"}
        assert w.http.post("/connectors", json={"name": "tick", "config": config}).status_code == 201
        runner = w.runner("tick")
        assert not runner.transactional
        # Before the first flush (2 s after the task was created): Kafka's empty window.
        _, s = scrape_until(w.http, lambda s: commit_values(s, "tick")["avg_time_ms"] is not None, "the task's figures")
        before = commit_values(s, "tick")
        assert math.isnan(before["avg_time_ms"]) and math.isnan(before["max_time_ms"])
        assert before["success_percentage"] == before["failure_percentage"] == 0.0
        # After a flush: a commit time and every attempt a success.
        _, s = scrape_until(
            w.http, lambda s: commit_values(s, "tick")["success_percentage"] == 1.0, "a successful flush"
        )
        after = commit_values(s, "tick")
        assert 0 <= after["avg_time_ms"] <= after["max_time_ms"] and after["failure_percentage"] == 0.0
        assert (offsets_dir / "offsets.json").exists()

        # The offsets file's directory becomes a plain file: the next flushes fail, and are retried.
        os.rename(offsets_dir, tmp_path / "offsets.moved")
        offsets_dir.write_text("not a directory")
        failures = runner.commits.failures
        wait_until(lambda: runner.commits.failures > failures, 30, "a failed flush")
        _, s = scrape(w.http)
        broken = commit_values(s, "tick")
        assert 0 < broken["failure_percentage"] < 1 and broken["success_percentage"] == 1 - broken["failure_percentage"]
        offsets_dir.unlink()
        os.rename(tmp_path / "offsets.moved", offsets_dir)
        attempts = runner.commits.attempts
        wait_until(lambda: runner.commits.attempts > attempts + 1, 30, "a flush after the repair")
        failures, attempts = runner.commits.failures, runner.commits.attempts
        wait_until(lambda: runner.commits.attempts > attempts, 30, "one more flush")
        assert runner.commits.failures == failures  # the directory is back: flushes succeed again
        _, s = scrape(w.http)
        healed = commit_values(s, "tick")
        assert healed["success_percentage"] > broken["success_percentage"]
        assert healed["success_percentage"] + healed["failure_percentage"] == pytest.approx(1.0)
    finally:
        w.close()

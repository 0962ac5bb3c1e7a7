"""Kafka Connect's connect-worker-rebalance-metrics: the figures (a clock given by the test) and their names.

The distributed cluster test on a real broker is tests/distributed/test_rebalance_metrics.py.
"""

from __future__ import annotations

import math
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from cdc.runtime.distributed.rebalance_metrics import RebalanceMetrics
from cdc.runtime.prometheus import worker_registry
from cdc.runtime.prometheus.connect import connect_metrics
from cdc.runtime.prometheus.rates import Rates
from cdc.runtime.prometheus.view import WorkerView
from cdc.runtime.standalone import StandaloneHerder
from tests.rest.conftest import make_worker
from tests.runtime.prometheus_scrape import names, parse, value


def test_before_the_first_rebalance_kafkas_values() -> None:
    v = RebalanceMetrics().values(now=1000)
    assert v["completed-rebalances-total"] == 0 and v["rebalancing"] == 0 and v["epoch"] == 0
    assert math.isnan(v["rebalance-avg-time-ms"]) and math.isnan(v["rebalance-max-time-ms"])
    assert v["time-since-last-rebalance-ms"] == math.inf  # Kafka: +Inf until one completes


def test_a_rebalance_runs_from_the_assignment_to_the_started_work() -> None:
    r = RebalanceMetrics()
    r.started(generation=7, now=1000)
    v = r.values(now=1200)
    assert v["rebalancing"] == 1 and v["epoch"] == 7 and v["completed-rebalances-total"] == 0
    r.succeeded(now=1300)
    v = r.values(now=1300)
    assert v["rebalancing"] == 0 and v["completed-rebalances-total"] == 1
    assert v["rebalance-avg-time-ms"] == v["rebalance-max-time-ms"] == 300
    assert v["time-since-last-rebalance-ms"] == 0
    assert r.values(now=6300)["time-since-last-rebalance-ms"] == 5000
    r.succeeded(now=7000)  # a reconcile with no rebalance under way completes nothing
    assert r.values(now=7000)["completed-rebalances-total"] == 1

    r.started(generation=8, now=10_000)
    r.succeeded(now=10_100)
    v = r.values(now=10_100)
    assert v["completed-rebalances-total"] == 2 and v["epoch"] == 8
    assert v["rebalance-avg-time-ms"] == 200 and v["rebalance-max-time-ms"] == 300
    # Kafka's Avg and Max forget after a quiet minute; the count and the time since do not.
    v = r.values(now=200_000)
    assert math.isnan(v["rebalance-avg-time-ms"]) and math.isnan(v["rebalance-max-time-ms"])
    assert v["completed-rebalances-total"] == 2 and v["time-since-last-rebalance-ms"] == 200_000 - 10_100


def test_a_worker_that_cannot_read_the_configs_stays_rebalancing() -> None:
    r = RebalanceMetrics()
    r.started(generation=3, now=0)
    r.started(generation=4, now=500)  # assigned again before it could start anything
    assert r.values(now=600)["rebalancing"] == 1
    r.succeeded(now=900)
    v = r.values(now=900)
    assert v["completed-rebalances-total"] == 1 and v["rebalance-max-time-ms"] == 400 and v["epoch"] == 4


class _Collector:
    def __init__(self, view: WorkerView) -> None:
        self.view = view

    def collect(self):
        return connect_metrics(self.view, Rates())


def _scrape(view: WorkerView):
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(view))
    return parse(generate_latest(registry).decode())


def test_names_follow_strimzis_rules_for_the_rebalance_group() -> None:
    r = RebalanceMetrics()
    r.started(generation=5, now=0)
    r.succeeded(now=250)
    view = WorkerView("w1", 0, [], [], r.values(now=1250), "http://leader:8083")
    s = _scrape(view)
    assert value(s, "kafka_connect_worker_rebalance_completed_rebalances_total") == 1  # a counter
    assert value(s, "kafka_connect_worker_rebalance_rebalancing") == 0
    assert value(s, "kafka_connect_worker_rebalance_epoch") == 5
    assert value(s, "kafka_connect_worker_rebalance_rebalance_avg_time_ms") == 250
    assert value(s, "kafka_connect_worker_rebalance_rebalance_max_time_ms") == 250
    assert value(s, "kafka_connect_worker_rebalance_time_since_last_rebalance_ms") == 1000
    assert value(s, "kafka_connect_worker_rebalance_leader_name", leader_name="http://leader:8083") == 1
    fresh = _scrape(WorkerView("w1", 0, [], [], RebalanceMetrics().values(now=0), None))
    assert value(fresh, "kafka_connect_worker_rebalance_time_since_last_rebalance_ms") == math.inf
    assert math.isnan(value(fresh, "kafka_connect_worker_rebalance_rebalance_avg_time_ms"))
    assert not any(n.startswith("kafka_connect_worker_rebalance_leader_name") for n in names(fresh))


def test_a_standalone_worker_has_no_rebalance_metrics(tmp_path: Path) -> None:
    """As Kafka's StandaloneHerder: no group, no connect-worker-rebalance-metrics."""
    herder = StandaloneHerder(make_worker(tmp_path))
    herder.start()
    try:
        s = parse(generate_latest(worker_registry(herder)).decode())
    finally:
        herder.stop()
    assert "kafka_connect_worker_connector_count" in names(s)
    assert not [n for n in names(s) if n.startswith("kafka_connect_worker_rebalance_")]

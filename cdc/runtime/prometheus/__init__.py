"""The worker's Prometheus metrics: Debezium's and Kafka Connect's names, read at scrape time.

One `CollectorRegistry` per worker (never prometheus_client's global one, so two workers in one
process, as in tests, stay apart) holding one custom collector: each scrape reads the worker
once (cdc.runtime.prometheus.view) and renders Kafka Connect's metrics (…connect) and
Debezium's (…debezium) from it. Served on the REST listener at `GET /metrics`
(cdc.rest.resources.metrics) and, with the worker key `metrics.port`, on a port of its own
(cdc.runtime.prometheus.server), for `cdc run` and for scrapers that should not hold REST
credentials.

prometheus_client is used for the exposition format and the metric families; its default
process/platform collectors are left out (the REST listener is not a process exporter).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from cdc.runtime.prometheus.connect import connect_metrics
from cdc.runtime.prometheus.debezium import debezium_metrics
from cdc.runtime.prometheus.rates import Rates
from cdc.runtime.prometheus.view import worker_view


class WorkerCollector(Collector):
    """Kafka Connect's and Debezium's metrics of the worker behind `herder`, as of each scrape."""

    def __init__(self, herder: Any) -> None:
        self.herder = herder
        self.rates = Rates()

    def collect(self) -> Iterator[Metric]:
        view = worker_view(self.herder)
        yield from connect_metrics(view, self.rates)
        yield from debezium_metrics(view)

    def describe(self) -> list[Metric]:
        return []  # names depend on what runs: registering must not scrape


def worker_registry(herder: Any) -> CollectorRegistry:
    """A registry of its own for the worker behind `herder`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WorkerCollector(herder))
    return registry

"""The compose stack's monitoring, checked without a Docker engine (issue 24): Prometheus
scrapes the port `cdc run` serves its metrics on, Grafana reads that Prometheus and loads the
dashboard, and every metric the dashboard queries is one the code exports.

The exported names are not a hand list: a worker runs Debezium's MySQL connector against a
real MariaDB through a snapshot and streamed changes and its `/metrics` is scraped (the
worker's registry, as on `cdc run`'s metrics.port), and the sink's `cdc_sink_*` come from
the collector `cdc run` adds to it (cdc/jobs/sink_metrics.py) over figures a batch recorded.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from cdc.jobs.sink_metrics import SinkCollector
from cdc_spark.apply.metrics import SinkMetrics
from tests.mysql.harness import connector_props, execute
from tests.rest.conftest import Rest
from tests.runtime.prometheus_scrape import names, parse, scrape_until
from tests.support.proc import REPO

DOCKER = REPO / "docker"
COMPOSE = DOCKER / "docker-compose.yml"
DASHBOARD = DOCKER / "grafana" / "dashboards" / "cdc.json"
# The exporters' families: a query token with one of these prefixes must name an exported metric.
FAMILIES = re.compile(r"\b(?:debezium_metrics_|kafka_connect_|cdc_)\w+")


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _load(COMPOSE)


def _bind(service: dict[str, Any], container_path: str) -> Path:
    """The host path behind `container_path` through the service's bind mounts."""
    path = PurePosixPath(container_path)
    for entry in service.get("volumes", []):
        source, target, *_ = str(entry).split(":")
        if source.startswith((".", "/")) and path.is_relative_to(target):
            return (DOCKER / source / path.relative_to(target)).resolve()
    raise AssertionError(f"no bind mount covers {container_path}")


def _queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_prometheus_scrapes_the_port_cdc_run_serves(compose: dict[str, Any]) -> None:
    services = compose["services"]
    prometheus = services["prometheus"]
    config = _load(_bind(prometheus, "/etc/prometheus/prometheus.yml"))
    targets = [
        (job.get("metrics_path", "/metrics"), target)
        for job in config["scrape_configs"]
        for static in job["static_configs"]
        for target in static["targets"]
    ]
    assert targets, "Prometheus scrapes nothing"
    for path, target in targets:
        host, port = target.rsplit(":", 1)
        assert host in services, f"scrape target {target}: no compose service {host}"
        command = services[host]["command"]
        assert command[:2] == ["cdc", "run"], f"scrape target {target}: {host} does not run `cdc run`"
        job = _load(_bind(services[host], command[2]))
        transport = job["transport"]
        assert transport.get("metrics.port") == int(port), f"{target}: the job serves metrics on {transport}"
        assert transport.get("metrics.host") in ("0.0.0.0", "::"), "in a container, loopback is not reachable"
        assert path == "/metrics"


def test_grafana_reads_that_prometheus_and_loads_the_dashboard(compose: dict[str, Any]) -> None:
    services = compose["services"]
    grafana = services["grafana"]
    sources = _load(_bind(grafana, "/etc/grafana/provisioning/datasources/prometheus.yml"))["datasources"]
    prometheus = next(s for s in sources if s["type"] == "prometheus")
    host, port = re.fullmatch(r"http://([\w-]+):(\d+)", prometheus["url"]).groups()  # type: ignore[union-attr]
    assert host in services and f"{port}:{port}" in services[host]["ports"]
    providers = _load(_bind(grafana, "/etc/grafana/provisioning/dashboards/cdc.yml"))["providers"]
    folder = _bind(grafana, providers[0]["options"]["path"])
    assert folder == DASHBOARD.parent.resolve() and DASHBOARD.is_file()
    dashboard = json.loads(DASHBOARD.read_text())
    used = {t["datasource"]["uid"] for p in dashboard["panels"] for t in p.get("targets", [])}
    assert used == {prometheus["uid"]}, "every query must go to the provisioned Prometheus"
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert _bind(grafana, home) == DASHBOARD.resolve()


def test_every_panel_queries_exported_metrics() -> None:
    """The check below must not pass vacuously: each query names at least one exported family."""
    for expr in _queries():
        assert FAMILIES.search(expr), f"{expr!r} names no cdc, Debezium or Kafka Connect metric"


def _sink_names() -> set[str]:
    figures = SinkMetrics()
    figures.applied("orders", 3, pa.table({"__source_ts_ms": [1, 2, 3]}))
    figures.rejected(["orders"])
    figures.batch_done()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SinkCollector(figures, "delta"))
    return names(parse(generate_latest(registry).decode()))


def test_the_dashboard_names_only_metrics_the_code_exports(mariadb_db, tmp_path: Path) -> None:
    wanted = {name for expr in _queries() for name in FAMILIES.findall(expr)}
    sink = _sink_names()
    execute(mariadb_db, "CREATE TABLE a (id INT PRIMARY KEY, v INT)", "INSERT INTO a VALUES (1, 1), (2, 2)")
    rest = Rest(tmp_path)
    try:
        config = connector_props(mariadb_db, **{"topic.prefix": "dash"})
        assert rest.http.post("/connectors", json={"name": "shop", "config": config}).status_code == 201
        rng = random.Random()

        missing: list[set[str]] = []

        def exported(samples: Any) -> bool:
            if "debezium_metrics_Connected" in names(samples):  # streaming: give the lag something to measure
                execute(mariadb_db, f"INSERT INTO a VALUES ({rng.randrange(3, 2**31)}, 0)")
            missing[:] = [wanted - names(samples) - sink]
            return not missing[0]

        try:
            scrape_until(rest.http, exported, "the dashboard's metrics in a worker's /metrics", timeout=90)
        except AssertionError:
            raise AssertionError(f"the dashboard queries metrics no code exports: {sorted(missing[0])}") from None
    finally:
        rest.close()

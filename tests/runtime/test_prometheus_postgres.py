"""Prometheus metrics of Debezium's PostgreSQL connector against a real PostgreSQL, scraped on metrics.port.

The worker serves its registry on a port of its own (`metrics.port=0` picks one), as `cdc run`
jobs and scrapers without REST credentials use it; names and labels are Debezium's exporter
rules' (plugin="postgres", name=<topic.prefix>, context=snapshot|streaming).
"""

from __future__ import annotations

import random
from pathlib import Path

import httpx

from cdc.runtime.prometheus.server import start_metrics_server
from tests.postgres.harness import connector_props
from tests.rest.conftest import Rest
from tests.runtime.prometheus_scrape import scrape_until, value

PREFIX = "prompg"


def test_streaming_metrics_move_with_the_wal(postgres_db, tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rnd = random.Random(seed)
    rows = rnd.randint(1, 30)
    with postgres_db.connect(autocommit=True) as sql:
        sql.execute("CREATE TABLE public.items (id INT PRIMARY KEY, v TEXT)")
        sql.execute("INSERT INTO public.items SELECT g, 'x' FROM generate_series(1, %s) g", (rows,))
    rest = Rest(tmp_path, **{"metrics.port": "0"})
    metrics = start_metrics_server(rest.worker.config, rest.herder)
    assert metrics is not None and metrics.host == "127.0.0.1" and metrics.port > 0
    http = httpx.Client(base_url=f"http://127.0.0.1:{metrics.port}", timeout=30)
    try:
        config = connector_props(postgres_db, **{"topic.prefix": PREFIX, "table.include.list": "public.items"})
        assert rest.http.post("/connectors", json={"name": "pg", "config": config}).status_code == 201
        dbz = {"plugin": "postgres", "name": PREFIX}
        stream, snap = {**dbz, "context": "streaming"}, {**dbz, "context": "snapshot"}
        _, s = scrape_until(
            http,
            lambda s: (
                value(s, "debezium_metrics_SnapshotCompleted", **snap) == 1
                and value(s, "debezium_metrics_Connected", **stream) == 1
            ),
            "a completed snapshot and a connected stream",
        )
        assert value(s, "debezium_metrics_RowsScanned", **snap, table="public.items") == rows, seed
        seen0 = value(s, "debezium_metrics_TotalNumberOfEventsSeen", **stream)
        tx0 = value(s, "debezium_metrics_NumberOfCommittedTransactions", **stream)
        transactions, inserted = rnd.randint(1, 4), 0
        with postgres_db.connect() as sql:
            for t in range(transactions):
                n = rnd.randint(1, 5)
                with sql.transaction():
                    for i in range(n):
                        sql.execute("INSERT INTO public.items VALUES (%s, 'y')", (10_000 + t * 10 + i,))
                inserted += n
        _, s = scrape_until(
            http,
            lambda s: (
                (value(s, "debezium_metrics_TotalNumberOfEventsSeen", **stream) or 0) >= seen0 + inserted
                and value(s, "cdc_source_bytes_behind", **stream) is not None
            ),
            "the inserts in the streaming metrics",
        )
        assert value(s, "debezium_metrics_TotalNumberOfEventsSeen", **stream) == seen0 + inserted, seed
        assert value(s, "debezium_metrics_NumberOfCommittedTransactions", **stream) == tx0 + transactions, seed
        assert value(s, "debezium_metrics_MilliSecondsBehindSource", **stream) >= 0
        assert value(s, "cdc_source_bytes_behind", **stream) >= 0
        assert value(s, "cdc_source_retained_wal_bytes", **stream) >= 0
        # From the task's second WAL reading on (4 s apart): +Inf under max_slot_wal_keep_size=-1, the default.
        _, s = scrape_until(
            http,
            lambda s: value(s, "cdc_source_seconds_until_position_lost", **dbz) is not None,
            "the slot's retention",
        )
        assert value(s, "cdc_source_seconds_until_position_lost", **dbz) > 0
        assert value(s, "kafka_connect_connector_task_status", connector="pg", task="0", status="running") == 1
        assert (
            value(s, "kafka_connect_source_task_source_record_poll_total", connector="pg", task="0") >= rows + inserted
        )
        # Only /metrics answers (issue 33: not every path, as prometheus_client's server did); no REST
        # auth is asked for on this port, but the REST API's Host rule applies.
        assert http.get("/").status_code == 404
        assert http.get("/metrics", headers={"Host": "evil.example"}).status_code == 421
    finally:
        http.close()
        metrics.stop()
        rest.close()

"""GET /metrics of a worker running Debezium's MySQL connector against a real MariaDB.

The exposition is parsed with prometheus_client's text parser; the names and labels are those
Debezium's and Strimzi's JMX-exporter rules give (debezium_metrics_*{plugin,name,context},
kafka_connect_*), and the values must move as rows are snapshotted and streamed. The connector
logs in as a user whose password is random: it must appear nowhere in the exposition.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mysql.harness import connector_props, execute
from tests.rest.conftest import Rest
from tests.rig.mariadb import CDC_GRANTS
from tests.runtime.prometheus_scrape import names, scrape, scrape_until, value

PREFIX = "prom1"
DBZ = {"plugin": "mysql", "name": PREFIX}


@pytest.fixture
def secret_user(mariadb_db) -> Iterator[tuple[str, str]]:
    user, password = f"u{secrets.token_hex(4)}", secrets.token_urlsafe(18)
    execute(
        mariadb_db, f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'", f"GRANT {CDC_GRANTS} ON *.* TO '{user}'@'%'"
    )
    yield user, password
    execute(mariadb_db, f"DROP USER IF EXISTS '{user}'@'%'")


def test_debezium_and_connect_metrics_move_with_the_binlog(mariadb_db, secret_user, tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rnd = random.Random(seed)
    db = mariadb_db.database
    counts = {"a": rnd.randint(1, 40), "b": rnd.randint(1, 40)}
    execute(mariadb_db, "CREATE TABLE a (id INT PRIMARY KEY, v INT)", "CREATE TABLE b (id INT PRIMARY KEY, v INT)")
    for table, n in counts.items():
        execute(mariadb_db, f"INSERT INTO {table} VALUES " + ",".join(f"({i}, {i})" for i in range(n)))
    user, password = secret_user
    rest = Rest(tmp_path)
    try:
        config = connector_props(
            mariadb_db, **{"topic.prefix": PREFIX, "database.user": user, "database.password": password}
        )
        assert rest.http.post("/connectors", json={"name": "shop", "config": config}).status_code == 201, seed

        # -- snapshot -----------------------------------------------------------------------------
        text, s = scrape_until(
            rest.http,
            lambda s: value(s, "debezium_metrics_SnapshotCompleted", **DBZ, context="snapshot") == 1,
            "a completed snapshot",
        )
        snap = {**DBZ, "context": "snapshot"}
        assert value(s, "debezium_metrics_SnapshotRunning", **snap) == 0
        assert value(s, "debezium_metrics_TotalTableCount", **snap) == 2
        assert value(s, "debezium_metrics_RemainingTableCount", **snap) == 0
        for table, n in counts.items():
            assert value(s, "debezium_metrics_RowsScanned", **snap, table=f"{db}.{table}") == n, seed
        assert value(s, "debezium_metrics_TotalNumberOfEventsSeen", **snap) == sum(counts.values())
        assert value(s, "debezium_metrics_SnapshotDurationInSeconds", **snap) is not None
        assert value(s, "debezium_metrics_QueueTotalCapacity", **snap) == 8192  # max.queue.size default

        # -- streaming ----------------------------------------------------------------------------
        stream = {**DBZ, "context": "streaming"}
        text, s = scrape_until(
            rest.http, lambda s: value(s, "debezium_metrics_Connected", **stream) == 1, "the binlog reader connected"
        )
        seen0 = value(s, "debezium_metrics_TotalNumberOfEventsSeen", **stream)
        tx0 = value(s, "debezium_metrics_NumberOfCommittedTransactions", **stream)
        polled0 = value(s, "kafka_connect_source_task_source_record_poll_total", connector="shop", task="0")
        assert seen0 is not None and tx0 is not None and polled0 is not None
        transactions = rnd.randint(1, 4)
        inserted = 0
        with mariadb_db.connect(autocommit=False) as conn, conn.cursor() as cur:
            for t in range(transactions):
                rows = rnd.randint(1, 6)
                cur.executemany("INSERT INTO a VALUES (%s, %s)", [(1000 + t * 10 + i, i) for i in range(rows)])
                conn.commit()
                inserted += rows
        text, s = scrape_until(
            rest.http,
            lambda s: (value(s, "debezium_metrics_TotalNumberOfEventsSeen", **stream) or 0) >= seen0 + inserted,
            "the inserts in the streaming metrics",
        )
        assert value(s, "debezium_metrics_TotalNumberOfEventsSeen", **stream) == seen0 + inserted, seed
        assert value(s, "debezium_metrics_NumberOfCommittedTransactions", **stream) == tx0 + transactions, seed
        behind = value(s, "debezium_metrics_MilliSecondsBehindSource", **stream)
        assert behind is not None and behind >= 0
        assert 0 <= value(s, "debezium_metrics_MilliSecondsSinceLastEvent", **stream) < 60_000
        assert value(s, "debezium_metrics_BinlogPosition", **stream) > 0
        text, s = scrape_until(
            rest.http, lambda s: value(s, "cdc_source_bytes_behind", **stream) is not None, "the source's unread bytes"
        )
        assert value(s, "cdc_source_bytes_behind", **stream) >= 0

        # -- Kafka Connect --------------------------------------------------------------------------
        task = {"connector": "shop", "task": "0"}
        assert value(s, "kafka_connect_connector_task_status", **task, status="running") == 1
        assert value(s, "kafka_connect_connector_status", connector="shop", status="running") == 1
        assert value(s, "kafka_connect_connector_connector_type", connector="shop", connector_type="source") == 1
        assert (
            value(s, "kafka_connect_worker_connector_count") == 1 and value(s, "kafka_connect_worker_task_count") == 1
        )
        assert value(s, "kafka_connect_worker_connector_running_task_count", connector="shop") == 1
        polled = value(s, "kafka_connect_source_task_source_record_poll_total", **task)
        written = value(s, "kafka_connect_source_task_source_record_write_total", **task)
        assert polled >= polled0 + inserted and written >= sum(counts.values()) + inserted
        assert value(s, "kafka_connect_task_error_total_record_failures", **task) == 0
        assert {
            "kafka_connect_source_task_source_record_poll_rate",
            "kafka_connect_source_task_poll_batch_avg_time_ms",
            "kafka_connect_source_task_source_record_active_count",
        } <= names(s)

        # -- no secret, through any name or label ---------------------------------------------------
        assert password not in text and user not in text
        rest.http.put("/connectors/shop/pause")
        text, s = scrape_until(
            rest.http,
            lambda s: value(s, "kafka_connect_connector_task_status", **task, status="paused") == 1,
            "the paused task",
        )
        assert value(s, "kafka_connect_worker_connector_paused_task_count", connector="shop") == 1
        assert password not in scrape(rest.http)[0]
    finally:
        rest.close()

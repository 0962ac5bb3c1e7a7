"""Debezium's schema history metrics of the MySQL connector (`context=schema-history`).

Unit: the listener (cdc_debezium.history_metrics) and the history that feeds it
(cdc_mysql.history.MeteredSchemaHistory), and their Prometheus names. Integration: a worker with
its REST API runs the connector against MariaDB; GET /metrics must show the snapshot's history
records as applied changes, a DDL as one more, and after a restart the history's records as
recovered changes, counted independently by reading the history topic back.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from cdc.api import metrics as m
from cdc.runtime.prometheus.debezium import debezium_metrics
from cdc.runtime.prometheus.view import TaskView, WorkerView
from cdc_debezium.history_metrics import RECOVERING, RUNNING, STOPPED, SchemaHistoryMetrics
from cdc_mysql.history import FileSchemaHistory, MemorySchemaHistory, MeteredSchemaHistory, SchemaHistory
from tests.mysql.harness import connector_props, execute
from tests.rest.conftest import Rest
from tests.runtime.prometheus_scrape import Samples, parse, scrape, scrape_until, value
from tests.support.logs import topic_records

PREFIX = "hist1"
HISTORY = {"plugin": "mysql", "name": PREFIX, "context": "schema-history"}
MYSQL = "io.debezium.connector.mysql.MySqlConnector"


class Clock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def test_the_listener_follows_debeziums_schema_history_metrics() -> None:
    clock = Clock(1_700_000_000_123)
    h = SchemaHistoryMetrics(clock)
    v = h.values()
    assert v["Status"] == STOPPED and v["RecoveryStartTime"] == -1
    assert v["ChangesRecovered"] == v["ChangesApplied"] == 0
    assert v["LastRecoveredChange"] == v["LastAppliedChange"] == ""
    assert v["LastRecoveredChangeTs"] is None and v["LastAppliedChangeTs"] is None
    h.started()
    assert h.values()["Status"] == RUNNING
    h.recovery_started()
    assert h.values()["Status"] == RECOVERING and h.values()["RecoveryStartTime"] == 1_700_000_000
    for i in range(3):
        clock.ms += 10
        h.on_change_from_history({"ddl": f"CREATE TABLE t{i} (id INT)", "position": {"pos": i}})
    h.recovery_stopped()
    clock.ms += 1000
    h.on_change_applied({"ddl": "ALTER TABLE t0 ADD c INT"})
    v = h.values()
    assert v["Status"] == RUNNING and v["ChangesRecovered"] == 3 and v["ChangesApplied"] == 1
    assert json.loads(v["LastRecoveredChange"]) == {"ddl": "CREATE TABLE t2 (id INT)", "position": {"pos": 2}}
    assert json.loads(v["LastAppliedChange"]) == {"ddl": "ALTER TABLE t0 ADD c INT"}
    assert v["LastRecoveredChangeTs"] == 1_700_000_000_153 and v["LastAppliedChangeTs"] == 1_700_000_001_153
    h.stopped()
    assert h.values()["Status"] == STOPPED


@pytest.mark.parametrize("store", ["memory", "file"])
def test_the_metered_history_counts_what_is_written_and_recovered(store: str, tmp_path: Path) -> None:
    def open_store() -> SchemaHistory:
        return MemorySchemaHistory() if store == "memory" else FileSchemaHistory(str(tmp_path / "history.jsonl"))

    inner = open_store()
    first = MeteredSchemaHistory(inner, SchemaHistoryMetrics())
    assert first.metrics.status == RUNNING
    records = [{"ddl": f"CREATE TABLE t{i} (id INT)"} for i in range(4)]
    for r in records:
        first.record(r)
    assert first.metrics.changes_applied == 4 and first.metrics.changes_recovered == 0
    assert first.records() == records and first.metrics.changes_recovered == 0  # a plain read is no recovery
    first.close()
    assert first.metrics.status == STOPPED

    # A restarted task: the same store (the file; for memory, the same object) read back as a recovery.
    again = MeteredSchemaHistory(inner if store == "memory" else open_store(), SchemaHistoryMetrics())
    assert again.recover() == records
    v = again.metrics.values()
    assert v["Status"] == RUNNING and v["ChangesRecovered"] == 4 and v["ChangesApplied"] == 0
    assert json.loads(v["LastRecoveredChange"]) == records[-1] and v["RecoveryStartTime"] > 0


def test_a_history_that_cannot_be_read_ends_its_recovery() -> None:
    class Broken(MemorySchemaHistory):
        def records(self) -> list[dict]:
            raise OSError("gone")

    h = MeteredSchemaHistory(Broken(), SchemaHistoryMetrics())
    with pytest.raises(OSError):
        h.recover()
    assert h.metrics.status == RUNNING and h.metrics.changes_recovered == 0


def _debezium(history: dict, now_ms: int) -> Samples:
    """debezium_metrics of a MySQL task that published `history`, through prometheus_client's exposition."""
    metrics = {m.SCHEMA_HISTORY: history}
    task = TaskView("shop", 0, "source", "running", MYSQL, PREFIX, None, metrics)  # type: ignore[arg-type]
    view = WorkerView("w", now_ms, [], [task])

    class Collector:
        def collect(self):
            return debezium_metrics(view)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())  # type: ignore[arg-type]
    return parse(generate_latest(registry).decode())


def test_prometheus_names_are_debeziums_exporter_rules() -> None:
    h = SchemaHistoryMetrics(Clock(1_700_000_000_000))
    h.started()
    s = _debezium(h.values(), 1_700_000_005_000)
    assert value(s, "debezium_metrics_Status", **HISTORY) == RUNNING
    assert value(s, "debezium_metrics_RecoveryStartTime", **HISTORY) == -1
    assert value(s, "debezium_metrics_ChangesRecovered", **HISTORY) == 0
    assert value(s, "debezium_metrics_ChangesApplied", **HISTORY) == 0
    assert value(s, "debezium_metrics_MilliSecondsSinceLastRecoveredChange", **HISTORY) == -1
    assert value(s, "debezium_metrics_MilliSecondsSinceLastAppliedChange", **HISTORY) == -1
    h.on_change_applied({"ddl": "CREATE TABLE t (id INT)"})
    s = _debezium(h.values(), 1_700_000_005_000)
    assert value(s, "debezium_metrics_ChangesApplied", **HISTORY) == 1
    assert value(s, "debezium_metrics_MilliSecondsSinceLastAppliedChange", **HISTORY) == 5000  # as of the scrape
    # Strings are dropped, as by the JMX exporter: the change itself is in the task's metrics only.
    assert not [k for k in s if "LastAppliedChange" in k[0] and "MilliSeconds" not in k[0]]


# -- against MariaDB -----------------------------------------------------------------------------


def _history_values(rest: Rest) -> dict:
    r = rest.http.get("/connectors/shop/tasks/0/metrics")
    assert r.status_code == 200, r.text
    return r.json()["metrics"].get(m.SCHEMA_HISTORY) or {}


@pytest.mark.integration
def test_schema_history_metrics_follow_the_connector(mariadb_db, tmp_path: Path) -> None:
    execute(mariadb_db, "CREATE TABLE a (id INT PRIMARY KEY)", "CREATE TABLE b (id INT PRIMARY KEY, v INT)")
    rest = Rest(tmp_path)
    topic = f"schema-changes.{PREFIX}"
    try:
        config = connector_props(mariadb_db, **{"topic.prefix": PREFIX})
        assert rest.http.post("/connectors", json={"name": "shop", "config": config}).status_code == 201

        # -- the first run: the snapshot writes one history record per table --------------------------
        _, s = scrape_until(
            rest.http,
            lambda s: (
                value(s, "debezium_metrics_SnapshotCompleted", plugin="mysql", name=PREFIX, context="snapshot") == 1
                and value(s, "debezium_metrics_ChangesApplied", **HISTORY) == 2
            ),
            "the snapshot's history records",
        )
        assert len(topic_records(rest.worker.log, topic)) == 2
        assert value(s, "debezium_metrics_Status", **HISTORY) == RUNNING
        assert value(s, "debezium_metrics_ChangesRecovered", **HISTORY) == 0  # nothing to recover on a first run
        assert value(s, "debezium_metrics_RecoveryStartTime", **HISTORY) == -1
        assert value(s, "debezium_metrics_MilliSecondsSinceLastRecoveredChange", **HISTORY) == -1
        assert 0 <= value(s, "debezium_metrics_MilliSecondsSinceLastAppliedChange", **HISTORY) < 120_000

        # -- a DDL while streaming is one more applied change ------------------------------------------
        execute(mariadb_db, "ALTER TABLE a ADD COLUMN c INT")
        _, s = scrape_until(
            rest.http, lambda s: value(s, "debezium_metrics_ChangesApplied", **HISTORY) == 3, "the DDL in the history"
        )
        assert "ALTER TABLE a ADD COLUMN c INT" in json.loads(_history_values(rest)["LastAppliedChange"])["ddl"]
        history = topic_records(rest.worker.log, topic)
        assert len(history) == 3

        # -- a restart recovers the whole history ------------------------------------------------------
        before_restart = int(time.time())
        r = rest.http.post("/connectors/shop/restart", params={"includeTasks": "true"})
        assert r.status_code in (202, 204), r.text
        _, s = scrape_until(
            rest.http,
            lambda s: (
                value(s, "debezium_metrics_ChangesRecovered", **HISTORY) == len(history)
                and value(s, "debezium_metrics_Status", **HISTORY) == RUNNING
            ),
            "the restarted task's recovery",
        )
        assert value(s, "debezium_metrics_ChangesApplied", **HISTORY) == 0  # a new task: nothing written yet
        assert before_restart <= value(s, "debezium_metrics_RecoveryStartTime", **HISTORY) <= time.time()
        assert 0 <= value(s, "debezium_metrics_MilliSecondsSinceLastRecoveredChange", **HISTORY) < 120_000
        values = _history_values(rest)
        assert json.loads(values["LastRecoveredChange"]) == json.loads(history[-1].value)

        # -- and applies what comes next ---------------------------------------------------------------
        execute(mariadb_db, "CREATE TABLE c (id INT PRIMARY KEY)")
        _, s = scrape_until(
            rest.http, lambda s: value(s, "debezium_metrics_ChangesApplied", **HISTORY) == 1, "the new table's DDL"
        )
        assert value(s, "debezium_metrics_ChangesRecovered", **HISTORY) == len(history)
        assert len(topic_records(rest.worker.log, topic)) == len(history) + 1
        _, s = scrape(rest.http)
        assert value(s, "debezium_metrics_Status", **HISTORY) == RUNNING
    finally:
        rest.close()

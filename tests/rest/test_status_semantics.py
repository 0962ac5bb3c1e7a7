"""Connector state and task states are separate, exactly as in Kafka Connect.

Reproduces both divergences users report (strimzi-kafka-operator#12542, kafka-ui#1890) and
shows the restart each needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc.runtime.task_restarts import TaskRestartBackoff
from tests.rest.conftest import Rest, controlled, wait_until
from tests.rest.connectors import ControlledSource


def states(rest: Rest, name: str) -> tuple[str, list[str]]:
    s = rest.state(name)
    return s["connector"]["state"], [t["state"] for t in s["tasks"]]


def test_connector_failed_while_task_runs_after_a_bad_config_update(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("cf"))
    wait_until(lambda: states(rest, "cf") == ("RUNNING", ["RUNNING"]), what="RUNNING")
    task_before = rest.worker.tasks[next(iter(rest.worker.tasks))]
    # A config update whose Connector.start() fails (a wrong password, say).
    cfg = {**controlled("cf")["config"], "fail.start": "true"}
    assert rest.http.put("/connectors/cf/config", json=cfg).status_code == 200
    status = rest.state("cf")
    assert status["connector"]["state"] == "FAILED" and status["tasks"][0]["state"] == "RUNNING"
    assert "Access denied for user 'cdc'" in status["connector"]["trace"]
    assert "trace" not in status["tasks"][0]
    assert rest.worker.tasks[next(iter(rest.worker.tasks))] is task_before  # the old task kept running
    # Restarting the task does not touch the connector: it stays FAILED.
    assert rest.http.post("/connectors/cf/tasks/0/restart").status_code == 204
    wait_until(lambda: states(rest, "cf") == ("FAILED", ["RUNNING"]), what="still FAILED / RUNNING")
    # Fixing the config restarts the Connector instance.
    cfg["fail.start"] = "false"
    rest.http.put("/connectors/cf/config", json=cfg)
    wait_until(lambda: states(rest, "cf") == ("RUNNING", ["RUNNING"]), what="RUNNING again")


def test_connector_failed_task_running_fixed_by_restart_only_failed(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("rf"))
    wait_until(lambda: states(rest, "rf") == ("RUNNING", ["RUNNING"]), what="RUNNING")
    # The Connector instance reports an error of its own (e.g. its monitoring thread died).
    ControlledSource.instances["rf"].context.raise_error(RuntimeError("table monitor lost its connection"))
    assert states(rest, "rf") == ("FAILED", ["RUNNING"])
    task_before = next(t for id, t in rest.worker.tasks.items() if id.connector == "rf")
    r = rest.http.post("/connectors/rf/restart", params={"includeTasks": "true", "onlyFailed": "true"})
    assert r.status_code == 202
    plan = r.json()
    assert plan["connector"]["state"] == "RESTARTING" and plan["tasks"][0]["state"] == "RUNNING"
    wait_until(lambda: states(rest, "rf") == ("RUNNING", ["RUNNING"]), what="RUNNING")
    # Only the failed instance restarted: the healthy task is the same one.
    assert next(t for id, t in rest.worker.tasks.items() if id.connector == "rf") is task_before


def test_task_failed_while_connector_runs(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("tf", **{"task.failures": "1"}))
    wait_until(lambda: states(rest, "tf") == ("RUNNING", ["FAILED"]), what="RUNNING / FAILED")
    task = rest.state("tf")["tasks"][0]
    assert "RuntimeError: task tf-0 lost its source connection" in task["trace"]
    assert task["worker_id"] == "w1"
    # The pre-KIP-745 restart restarts the Connector instance only: the task stays FAILED.
    assert rest.http.post("/connectors/tf/restart").status_code == 204
    wait_until(lambda: states(rest, "tf") == ("RUNNING", ["FAILED"]), what="task still FAILED")
    r = rest.http.post("/connectors/tf/restart", params={"includeTasks": "true", "onlyFailed": "true"})
    assert r.status_code == 202
    plan = r.json()
    assert plan["connector"]["state"] == "RUNNING" and plan["tasks"][0]["state"] == "RESTARTING"
    wait_until(lambda: states(rest, "tf") == ("RUNNING", ["RUNNING"]), what="task RUNNING")


@pytest.mark.integration
def test_failed_tasks_restart_automatically_with_backoff_when_enabled(tmp_path: Path) -> None:
    rest = Rest(
        tmp_path,
        **{
            "task.restart.on.failure.enable": "true",
            "task.restart.backoff.initial.ms": "50",
            "task.restart.backoff.max.ms": "200",
        },
    )
    try:
        rest.http.post("/connectors", json=controlled("auto", **{"task.failures": "3"}))
        wait_until(lambda: states(rest, "auto") == ("RUNNING", ["RUNNING"]) and _attempts(rest) == 3, what="3 restarts")
    finally:
        rest.close()


def _attempts(rest: Rest) -> int:
    return max((rest.herder.restarts.attempts(id) for id in rest.worker.tasks), default=0)


def test_backoff_doubles_up_to_the_max_and_starts_over_after_a_healthy_spell() -> None:
    now = [0.0]
    b = TaskRestartBackoff(True, 1000, 8000, clock=lambda: now[0])
    assert [b.delay_ms(n) for n in range(1, 7)] == [1000, 2000, 4000, 8000, 8000, 8000]
    from cdc.runtime.task import ConnectorTaskId

    id = ConnectorTaskId("c", 0)
    assert b.due({id: True}) == []  # scheduled in 1 s
    now[0] = 1.0
    assert b.due({id: True}) == [id]
    assert b.due({id: True}) == []  # failed again: scheduled in 2 s
    now[0] = 2.9
    assert b.due({id: True}) == []
    now[0] = 3.0
    assert b.due({id: True}) == [id] and b.attempts(id) == 2
    now[0] = 20.0
    b.due({id: False})  # healthy for longer than the max delay
    assert b.attempts(id) == 0


def test_auto_restart_is_off_by_default(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("off", **{"task.failures": "1"}))
    wait_until(lambda: states(rest, "off") == ("RUNNING", ["FAILED"]), what="FAILED")
    assert rest.herder.restarts.due({id: True for id in rest.worker.tasks}) == []

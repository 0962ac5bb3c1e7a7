"""`GET /connectors/{name}/tasks/{id}/metrics`: the cdc extension beside Kafka's task status."""

from __future__ import annotations

from tests.rest.conftest import Rest, wait_until
from tests.runtime.metered import MeteredSource


def test_task_metrics_endpoint(rest: Rest) -> None:
    rest.worker.registry.add(MeteredSource, "1.0", "test")
    created = rest.http.post("/connectors", json={"name": "met", "config": {"connector.class": "MeteredSource"}})
    assert created.status_code == 201

    body = wait_until(
        lambda: (r := rest.http.get("/connectors/met/tasks/0/metrics").json())["metrics"] and r,
        what="published metrics",
    )
    assert body["id"] == {"connector": "met", "task": 0} and body["worker_id"] == "w1" and body["timestamp"] > 0
    assert body["metrics"]["Connected"] is True and body["metrics"]["RowsScanned"] == {"db.t": 3}
    # Kafka's status body is unchanged.
    assert rest.http.get("/connectors/met/tasks/0/status").json() == {"id": 0, "state": "RUNNING", "worker_id": "w1"}

    missing = rest.http.get("/connectors/met/tasks/7/metrics")
    assert missing.status_code == 404 and missing.json()["message"] == "No status found for task met-7"
    assert rest.http.get("/connectors/nope/tasks/0/metrics").status_code == 404

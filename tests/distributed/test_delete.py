"""Deleting a connector leaves only tombstones behind in the config and status topics, as in Kafka Connect."""

from __future__ import annotations

import contextlib

from cdc.log.kafka import KafkaLog
from cdc.storage.offsets import read_topic
from tests.distributed.cluster import Member, cluster_props
from tests.rest.conftest import wait_until
from tests.rig.kafka import KafkaBroker


def _latest(bootstrap: str, topic: str) -> dict[str, bytes | None]:
    """What compaction would keep: the last value per key (None: a tombstone)."""
    return {r.key.decode(): r.value for r in read_topic(KafkaLog(bootstrap), topic) if r.key}


def test_delete_tombstones_the_connector_and_task_statuses(tansu: KafkaBroker) -> None:
    props = cluster_props(tansu.bootstrap)
    m = Member(props)
    try:
        wait_until(lambda: m.herder.membership.is_leader, 60, "leader")
        body = {
            "name": "gone",
            "config": {"connector.class": "ControlledSource", "topic": "t-gone", "task.count": "2", "tasks.max": "2"},
        }
        assert m.http.post("/connectors", json=body).status_code == 201
        wait_until(
            lambda: [t["state"] for t in m.state("gone").get("tasks", [])] == ["RUNNING", "RUNNING"], 60, "RUNNING"
        )
        assert m.http.delete("/connectors/gone").status_code == 204
        wait_until(lambda: not m.herder.worker.tasks, 30, "its tasks stopped")

        def only_tombstones() -> bool:
            status = {
                k: v
                for k, v in _latest(tansu.bootstrap, props["status.storage.topic"]).items()
                if k == "status-connector-gone" or k.startswith("status-task-gone-")
            }
            return set(status) == {"status-connector-gone", "status-task-gone-0", "status-task-gone-1"} and all(
                v is None for v in status.values()
            )

        wait_until(only_tombstones, 15, "only tombstones for the deleted connector in the status topic")
        configs = _latest(tansu.bootstrap, props["config.storage.topic"])
        assert configs["connector-gone"] is None and configs["target-state-gone"] is None
        assert m.worker.status_store.tasks("gone") == [] and m.worker.status_store.get_connector("gone") is None
    finally:
        with contextlib.suppress(Exception):
            m.close()

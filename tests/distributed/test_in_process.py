"""Two workers in one process on Tansu: forwarding, placement, status, moves on leave."""

from __future__ import annotations

import contextlib
import json

from cdc.log.kafka import KafkaLog
from cdc.storage.offsets import read_topic
from tests.distributed.cluster import Member, cluster_props
from tests.rest.conftest import wait_until
from tests.rig.kafka import KafkaBroker


def test_two_workers_share_connectors_and_forward_writes(tansu: KafkaBroker) -> None:
    props = cluster_props(tansu.bootstrap)
    a, b = Member(props), Member(props)
    try:
        wait_until(lambda: a.herder.membership.slots and b.herder.membership.slots, 60, "both in the group")
        leader, follower = (a, b) if a.herder.membership.is_leader else (b, a)
        wait_until(lambda: follower.herder.configs.state.leader_url == leader.rest.url, 30, "leader known")
        for i in range(4):
            body = {"name": f"c{i}", "config": {"connector.class": "ControlledSource", "topic": f"t{i}"}}
            r = follower.http.post("/connectors", json=body)  # forwarded to the leader
            assert r.status_code == 201, r.text
        for i in range(4):
            wait_until(
                lambda i=i: (
                    (s := a.state(f"c{i}")).get("connector", {}).get("state") == "RUNNING"
                    and [t["state"] for t in s["tasks"]] == ["RUNNING"]
                ),
                60,
                f"c{i} RUNNING",
            )
        workers = {a.state(f"c{i}")["tasks"][0]["worker_id"] for i in range(4)}
        assert workers <= {a.worker.worker_id, b.worker.worker_id}
        assert b.http.get("/connectors").json() == ["c0", "c1", "c2", "c3"]
        # A task restart reaches the worker that runs it, whichever worker is asked.
        assert follower.http.post("/connectors/c0/tasks/0/restart").status_code == 204
        assert leader.http.post("/connectors/c1/tasks/0/restart").status_code == 204
        assert follower.http.put("/connectors/c2/pause").status_code == 202
        wait_until(lambda: a.state("c2")["tasks"][0]["state"] == "PAUSED", 30, "c2 PAUSED")
        assert follower.http.put("/connectors/c3/stop").status_code == 204
        wait_until(
            lambda: a.state("c3")["connector"]["state"] == "STOPPED" and a.state("c3")["tasks"] == [], 30, "c3 STOPPED"
        )
        # b leaves: everything it ran moves to a.
        b.close()
        for name in ("c0", "c1"):
            wait_until(
                lambda name=name: (
                    [(t["state"], t["worker_id"]) for t in a.state(name)["tasks"]] == [("RUNNING", a.worker.worker_id)]
                ),
                60,
                f"{name} running on a",
            )
        assert_kafka_connect_config_records(tansu.bootstrap, props["config.storage.topic"])
    finally:
        for m in (a, b):
            with contextlib.suppress(Exception):
                m.close()


def assert_kafka_connect_config_records(bootstrap: str, topic: str) -> None:
    """The config topic holds Kafka Connect's keys and JSON values, readable by its tools."""
    records = {r.key.decode(): r.value for r in read_topic(KafkaLog(bootstrap), topic) if r.key}
    assert json.loads(records["connector-c0"])["properties"]["connector.class"] == "ControlledSource"
    assert json.loads(records["task-c0-0"])["properties"]["topic"] == "t0"
    assert json.loads(records["commit-c0"]) == {"tasks": 1}
    assert json.loads(records["target-state-c2"]) == {"state": "PAUSED", "state.v2": "PAUSED"}
    assert json.loads(records["target-state-c3"]) == {"state": "PAUSED", "state.v2": "STOPPED"}
    assert json.loads(records["commit-c3"]) == {"tasks": 0}
    session = json.loads(records["session-key"])
    assert session["algorithm"] == "HmacSHA256" and session["leader.url"].startswith("http://127.0.0.1:")

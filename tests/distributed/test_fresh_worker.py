"""A fresh `cdc worker`, started from Kafka's own connect-distributed.properties, is usable at once.

Issue 24's acceptance, as a new user meets it: the real console script on Apache Kafka's
vendored worker file (tests/kafka_material, only `bootstrap.servers`, the three topic names and
the REST port edited), default settings otherwise, driven by the unmodified `kafka-connect-py`
client with Debezium's MySQL connector against a real MariaDB:

- `GET /connector-plugins` lists `io.debezium.connector.mysql.MySqlConnector`;
- `POST /connectors` is accepted within 10 s of the REST API coming up;
- the connector's status is readable right after the create (UNASSIGNED or already RUNNING,
  never 404), then RUNNING with its task; pause, resume, restart and delete work.

Two brokers: Tansu (the test broker), whose first JoinGroup of a new group waits half the
session timeout (5 s with the worker's default `session.timeout.ms` 10000; it was 150 s when the
session timeout was `scheduled.rebalance.max.delay.ms`), and librdkafka's mock cluster, whose
wait is Apache Kafka's `group.initial.rebalance.delay.ms` (3 s). The mock cluster is made
through ctypes (tests/distributed/mock_cluster.py), not the `kafka_mock` fixture: the worker
needs a single-partition config topic, which only rd_kafka_mock_topic_create can make there.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from kafka_connect import KafkaConnect

from tests.distributed.mock_cluster import mock_cluster
from tests.mysql.harness import connector_props
from tests.rig import MariaDbServer
from tests.rig._common import free_port

ROOT = Path(__file__).resolve().parents[2]
KAFKA_FILE = ROOT / "tests" / "kafka_material" / "connect-distributed.properties"
CDC = ROOT / ".venv" / "bin" / "cdc"
INTERNAL = {"configs": 1, "offsets": 25, "status": 5}  # connect-<kind>: Kafka Connect's partition counts
MYSQL = "io.debezium.connector.mysql.MySqlConnector"
STREAMING = "Streaming binlog from"  # cdc_mysql.streaming, once per task start


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture(params=["tansu", "mock"])
def bootstrap(request: pytest.FixtureRequest) -> Iterator[tuple[str, Callable[[str, int], None] | None]]:
    """The broker's address and, where the worker cannot create topics itself, how to make one."""
    if request.param == "tansu":
        yield request.getfixturevalue("tansu").bootstrap, None
    else:
        with mock_cluster() as cluster:
            yield cluster.bootstrap, cluster.create_topic


def kafka_worker_file(path: Path, bootstrap: str, run: str, port: int) -> Path:
    """Kafka's file with only what its comments (and the vendoring README) let a user edit."""
    text = KAFKA_FILE.read_text()
    edits = {"bootstrap.servers=localhost:9092": f"bootstrap.servers={bootstrap}"}
    edits |= {
        f"{key}=connect-{kind}": f"{key}=connect-{kind}-{run}"
        for key, kind in (
            ("offset.storage.topic", "offsets"),
            ("config.storage.topic", "configs"),
            ("status.storage.topic", "status"),
        )
    }
    edits["#listeners=HTTP://:8083"] = f"listeners=HTTP://127.0.0.1:{port}"
    for old, new in edits.items():
        assert text.count(old) == 1, f"Kafka's file no longer has {old!r}"
        text = text.replace(old, new)
    path.write_text(text)
    return path


def state(client: KafkaConnect, name: str) -> tuple[str, list[str]]:
    s = client.get_connector_status(name)
    return s["connector"]["state"], [t["state"] for t in s["tasks"]]


def test_fresh_worker_is_usable_at_once(
    bootstrap: tuple[str, Callable[[str, int], None] | None], mariadb_db: MariaDbServer, tmp_path: Path
) -> None:
    address, create_topic = bootstrap
    run, port = uuid.uuid4().hex[:8], free_port()
    worker_file = kafka_worker_file(tmp_path / "connect-distributed.properties", address, run, port)
    if create_topic is not None:  # the mock cluster has no CreateTopics
        for kind, partitions in INTERNAL.items():
            create_topic(f"connect-{kind}-{run}", partitions)
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(CDC), "worker", str(worker_file)],
            cwd=tmp_path,
            stdout=out,
            stderr=out,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    try:

        def rest_up() -> bool:
            assert proc.poll() is None, f"cdc worker exited:\n{log.read_text()}"
            try:
                return httpx.get(url + "/", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(rest_up, 60, "the REST API")
        up = time.monotonic()
        client = KafkaConnect(url=url)
        assert MYSQL in [p["class"] for p in client.list_connector_plugins()]

        name = f"inventory-{run}"
        config = connector_props(
            mariadb_db,
            **{
                "topic.prefix": f"fresh{run}",
                "schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory",
            },
        )

        def create() -> dict[str, Any] | None:
            assert proc.poll() is None, f"cdc worker exited:\n{log.read_text()}"
            try:
                return client.create_connector({"name": name, "config": config})
            except requests.HTTPError as e:  # 409 while the worker has no leader yet
                if e.response is None or e.response.status_code != 409:
                    raise
                return None

        created = wait_until(create, 30, "POST /connectors accepted")
        accepted_after = time.monotonic() - up
        print(f"\n{address}: POST /connectors accepted {accepted_after:.1f}s after the REST API came up")
        assert created["name"] == name
        assert accepted_after <= 10, f"POST /connectors took {accepted_after:.1f}s:\n{log.read_text()}"

        first, _ = state(client, name)  # at once: no 404 between the create and the first status
        print(f"status right after the create: {first}")
        assert first in ("UNASSIGNED", "RUNNING")
        wait_until(lambda: state(client, name) == ("RUNNING", ["RUNNING"]), 60, "connector and task RUNNING")

        client.pause_connector(name)
        wait_until(lambda: state(client, name) == ("PAUSED", ["PAUSED"]), 30, "PAUSED")
        client.resume_connector(name)
        wait_until(lambda: state(client, name) == ("RUNNING", ["RUNNING"]), 30, "RUNNING after resume")
        streams = wait_until(lambda: log.read_text().count(STREAMING), 60, "the task streaming")
        plan = client.restart_connector(name, include_tasks=True)
        assert plan["connector"]["state"] == "RESTARTING" and plan["tasks"][0]["state"] == "RESTARTING"
        # the status says RUNNING before and after: the restarted task's own log line tells them apart
        wait_until(lambda: log.read_text().count(STREAMING) > streams, 60, "the task streaming again")
        wait_until(lambda: state(client, name) == ("RUNNING", ["RUNNING"]), 60, "RUNNING after restart")
        client.delete_connector(name)
        assert client.list_connectors() == []
        gone = httpx.get(f"{url}/connectors/{name}/status")
        assert gone.status_code == 404
        assert "Rebalance" not in log.read_text(), "a lone worker rebalanced:\n" + log.read_text()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()

"""The unmodified PyPI client `kafka-connect-py` drives the API end to end."""

from __future__ import annotations

from kafka_connect import KafkaConnect

from tests.rest.conftest import Rest, wait_until


def test_kafka_connect_py_client(rest: Rest) -> None:
    client = KafkaConnect(url=rest.url)
    assert client.get_cluster_info()["kafka_cluster_id"] == "test-cluster"
    config = {"name": "py", "config": {"connector.class": "ControlledSource", "topic": "py.out", "tasks.max": "1"}}
    created = client.create_connector(config)
    assert created["name"] == "py" and created["type"] == "source"
    assert client.list_connectors() == ["py"]
    wait_until(lambda: client.get_connector_status("py")["connector"]["state"] == "RUNNING", what="RUNNING")
    assert client.list_connectors(expand="status")["py"]["status"]["connector"]["state"] == "RUNNING"
    assert client.get_connector("py")["tasks"] == [{"connector": "py", "task": 0}]
    assert client.get_connector_config("py")["topic"] == "py.out"
    updated = client.update_connector("py", {**config["config"], "topic": "py.two"})
    assert updated["config"]["topic"] == "py.two"
    assert client.list_connector_tasks("py")[0]["config"]["topic"] == "py.two"
    wait_until(lambda: client.get_connector_task_status("py", 0)["state"] == "RUNNING", what="task RUNNING")

    client.pause_connector("py")
    wait_until(lambda: client.get_connector_status("py")["connector"]["state"] == "PAUSED", what="PAUSED")
    client.resume_connector("py")
    wait_until(lambda: client.get_connector_status("py")["connector"]["state"] == "RUNNING", what="RUNNING")

    # The client sends includeTasks=False / onlyFailed=False (Python spelling): the 204 path.
    assert client.restart_connector("py") is None
    plan = client.restart_connector("py", include_tasks=True)
    assert plan["connector"]["state"] == "RESTARTING"
    client.restart_connector_task("py", 0)
    wait_until(lambda: client.get_connector_task_status("py", 0)["state"] == "RUNNING", what="task RUNNING")
    wait_until(lambda: "py.two" in client.list_connector_topics("py")["py"]["topics"], what="topic py.two")
    plugins = client.list_connector_plugins()
    assert any(p["class"].endswith("ControlledSource") for p in plugins)
    infos = client.validate_connector_config("ControlledSource", {"name": "v", "topic": "t"})
    assert infos["error_count"] == 0

    client.stop_connector("py")
    wait_until(lambda: client.get_connector_status("py")["connector"]["state"] == "STOPPED", what="STOPPED")
    client.delete_connector("py")
    assert client.list_connectors() == []

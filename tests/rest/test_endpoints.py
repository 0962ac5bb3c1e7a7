"""Every endpoint of the Kafka Connect REST API, with Kafka's JSON shapes and status codes."""

from __future__ import annotations

from cdc.rest.server import parse_listener
from cdc.runtime.worker_config import WorkerConfig
from tests.rest.conftest import Rest, controlled, wait_until


def running(rest: Rest, name: str, tasks: int = 1) -> dict:
    def check() -> dict | None:
        s = rest.state(name)
        ok = s.get("connector", {}).get("state") == "RUNNING" and len(s.get("tasks", [])) == tasks
        return s if ok and all(t["state"] == "RUNNING" for t in s["tasks"]) else None

    return wait_until(check, what=f"{name} RUNNING with {tasks} task(s)")


def test_root_health_and_openapi(rest: Rest) -> None:
    root = rest.http.get("/").json()
    assert set(root) == {"version", "commit", "kafka_cluster_id"} and root["kafka_cluster_id"] == "test-cluster"
    assert rest.http.get("/health").json()["status"] == "healthy"
    spec = rest.http.get("/openapi.json").json()
    assert "/connectors/{name}/offsets" in spec["paths"]
    assert set(spec["paths"]["/connectors/{name}/offsets"]) == {"get", "patch", "delete"}


def test_binds_loopback_by_default(rest: Rest) -> None:
    assert WorkerConfig({}).get("listeners") == ["http://127.0.0.1:8083"]
    assert parse_listener("http://:8083") == ("127.0.0.1", 8083)  # Kafka would bind every interface
    assert parse_listener("http://0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert rest.server.host == "127.0.0.1"


def test_connector_plugins_and_their_config(rest: Rest) -> None:
    plugins = rest.http.get("/connector-plugins").json()
    by_class = {p["class"]: p for p in plugins}
    ctl = by_class["tests.rest.connectors.ControlledSource"]
    assert ctl == {"class": "tests.rest.connectors.ControlledSource", "type": "source", "version": "1.0"}
    assert {p["type"] for p in plugins} <= {"source", "sink"}
    everything = rest.http.get("/connector-plugins", params={"connectorsOnly": "false"}).json()
    assert any(p["type"] == "transformation" for p in everything)
    keys = rest.http.get("/connector-plugins/ControlledSource/config").json()
    password = next(k for k in keys if k["name"] == "db.password")
    assert password["type"] == "PASSWORD" and password["importance"] in ("HIGH", "MEDIUM", "LOW")


def test_validate_returns_config_infos(rest: Rest) -> None:
    r = rest.http.put(
        "/connector-plugins/ControlledSource/config/validate",
        json={
            "name": "v",
            "connector.class": "ControlledSource",
            "topic": "t",
            "tasks.max": "zero",
            "db.password": "s3cret",
        },
    )
    assert r.status_code == 200
    body = r.json()
    assert body["name"] == "tests.rest.connectors.ControlledSource" and body["error_count"] == 1
    values = {c["value"]["name"]: c["value"] for c in body["configs"] if c["value"]}
    assert values["tasks.max"]["errors"] and values["db.password"]["value"] == "[hidden]"


def test_create_get_config_tasks_and_list(rest: Rest) -> None:
    r = rest.http.post(
        "/connectors", json=controlled("a", **{"db.password": "s3cret", "task.count": "2", "tasks.max": "2"})
    )
    assert r.status_code == 201 and r.headers["location"] == "/connectors/a"
    info = r.json()
    assert info["name"] == "a" and info["type"] == "source"
    assert info["tasks"] == [{"connector": "a", "task": 0}, {"connector": "a", "task": 1}]
    assert info["config"]["db.password"] == "[hidden]"
    assert rest.http.get("/connectors/a").json() == info
    config = rest.http.get("/connectors/a/config").json()
    assert config["db.password"] == "[hidden]" and config["name"] == "a"
    tasks = rest.http.get("/connectors/a/tasks").json()
    assert [t["id"] for t in tasks] == [{"connector": "a", "task": 0}, {"connector": "a", "task": 1}]
    assert tasks[0]["config"]["db.password"] == "[hidden]"
    running(rest, "a", 2)
    assert rest.http.get("/connectors").json() == ["a"]
    expanded = rest.http.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert set(expanded["a"]) == {"status", "info"}
    assert expanded["a"]["status"]["connector"]["state"] == "RUNNING"
    assert expanded["a"]["info"]["type"] == "source"
    assert rest.http.post("/connectors", json=controlled("a")).status_code == 409


def test_put_config_creates_then_updates_and_keeps_hidden_secret(rest: Rest) -> None:
    cfg = controlled("p", **{"db.password": "s3cret"})["config"]
    assert rest.http.put("/connectors/p/config", json=cfg).status_code == 201
    running(rest, "p")
    shown = rest.http.get("/connectors/p/config").json()
    r = rest.http.put("/connectors/p/config", json={**shown, "task.count": "1"})
    assert r.status_code == 200
    assert rest.herder.connectors["p"].config["db.password"] == "s3cret"
    mismatch = rest.http.put("/connectors/p/config", json={**cfg, "name": "other"})
    assert mismatch.status_code == 400 and "doesn't match connector name in the URL" in mismatch.json()["message"]


def test_patch_config_merges_and_null_deletes(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("m", extra="x"))
    r = rest.http.patch("/connectors/m/config", json={"extra": None, "task.count": "1", "tasks.max": "3"})
    assert r.status_code == 200
    config = r.json()["config"]
    assert "extra" not in config and config["tasks.max"] == "3" and config["topic"] == "m.out"
    assert rest.http.patch("/connectors/nope/config", json={"a": "b"}).status_code == 404


def test_status_and_task_status(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("s"))
    status = running(rest, "s")
    assert status == {
        "name": "s",
        "connector": {"state": "RUNNING", "worker_id": "w1"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w1"}],
        "type": "source",
    }
    assert rest.http.get("/connectors/s/tasks/0/status").json() == {"id": 0, "state": "RUNNING", "worker_id": "w1"}
    missing = rest.http.get("/connectors/s/tasks/7/status")
    assert missing.status_code == 404 and missing.json() == {
        "error_code": 404,
        "message": "No status found for task s-7",
    }


def test_pause_resume_stop_and_delete(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("l"))
    running(rest, "l")
    assert rest.http.put("/connectors/l/pause").status_code == 202
    wait_until(lambda: rest.state("l")["connector"]["state"] == "PAUSED", what="connector PAUSED")
    wait_until(lambda: rest.state("l")["tasks"][0]["state"] == "PAUSED", what="task PAUSED")
    assert rest.http.put("/connectors/l/resume").status_code == 202
    running(rest, "l")
    assert rest.http.put("/connectors/l/stop").status_code == 204
    stopped = rest.state("l")
    assert stopped["connector"]["state"] == "STOPPED" and stopped["tasks"] == []
    assert rest.http.get("/connectors/l").json()["tasks"] == []
    assert rest.http.put("/connectors/l/resume").status_code == 202
    running(rest, "l")
    assert rest.http.delete("/connectors/l").status_code == 204
    assert rest.http.get("/connectors").json() == []
    assert rest.http.get("/connectors/l/status").status_code == 404


def test_create_with_initial_state(rest: Rest) -> None:
    body = {**controlled("i"), "initial_state": "STOPPED"}
    assert rest.http.post("/connectors", json=body).status_code == 201
    assert rest.state("i")["connector"]["state"] == "STOPPED"
    paused = {**controlled("j"), "initial_state": "PAUSED"}
    rest.http.post("/connectors", json=paused)
    wait_until(lambda: rest.state("j")["tasks"] and rest.state("j")["tasks"][0]["state"] == "PAUSED", what="PAUSED")
    bad = rest.http.post("/connectors", json={**controlled("k"), "initial_state": "SLEEPING"})
    assert bad.status_code == 400 and "RUNNING, PAUSED or STOPPED" in bad.json()["message"]


def test_restart_codes_follow_kip_745(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("r"))
    running(rest, "r")
    plain = rest.http.post("/connectors/r/restart")
    assert plain.status_code == 204 and plain.content == b""
    with_tasks = rest.http.post("/connectors/r/restart", params={"includeTasks": "true"})
    assert with_tasks.status_code == 202
    plan = with_tasks.json()
    assert plan["connector"]["state"] == "RESTARTING" and plan["tasks"][0]["state"] == "RESTARTING"
    running(rest, "r")
    # Nothing failed: onlyFailed restarts nothing and says so.
    only_failed = rest.http.post("/connectors/r/restart", params={"includeTasks": "true", "onlyFailed": "true"})
    assert only_failed.status_code == 202
    assert (
        only_failed.json()["connector"]["state"] == "RUNNING" and only_failed.json()["tasks"][0]["state"] == "RUNNING"
    )
    assert rest.http.post("/connectors/r/tasks/0/restart").status_code == 204
    running(rest, "r")
    unknown_task = rest.http.post("/connectors/r/tasks/3/restart")
    assert unknown_task.status_code == 404 and unknown_task.json()["message"] == "Task r-3 not found"
    assert rest.http.post("/connectors/nope/restart").status_code == 404


def test_topics_and_reset(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("t"))
    wait_until(lambda: rest.http.get("/connectors/t/topics").json() == {"t": {"topics": ["t.out"]}}, what="topic")
    assert rest.http.put("/connectors/t/topics/reset").status_code == 202


def test_source_offsets_get_alter_reset(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("o"))
    expected = {"offsets": [{"partition": {"task": "o-0"}, "offset": {"n": 5}}]}
    wait_until(lambda: rest.http.get("/connectors/o/offsets").json() == expected, what="offset n=5")
    assert rest.http.put("/connectors/o/stop").status_code == 204
    altered = rest.http.patch(
        "/connectors/o/offsets", json={"offsets": [{"partition": {"task": "o-0"}, "offset": {"n": 2}}]}
    )
    assert altered.status_code == 200 and "altered successfully" in altered.json()["message"]
    assert rest.http.get("/connectors/o/offsets").json()["offsets"][0]["offset"] == {"n": 2}
    reset = rest.http.delete("/connectors/o/offsets")
    assert reset.status_code == 200 and "reset successfully" in reset.json()["message"]
    assert rest.http.get("/connectors/o/offsets").json() == {"offsets": []}
    # Resumed, the task starts over from nothing and writes its 5 records again.
    rest.http.put("/connectors/o/resume")
    wait_until(lambda: rest.http.get("/connectors/o/offsets").json() == expected, what="offset n=5 again")


def test_sink_offsets_are_the_consumer_groups(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("src"))
    sink = {"name": "snk", "config": {"connector.class": "CollectingSink", "topics": "src.out"}}
    rest.http.post("/connectors", json=sink)
    partition = {"kafka_topic": "src.out", "kafka_partition": 0}
    wait_until(
        lambda: (
            rest.http.get("/connectors/snk/offsets").json()
            == {"offsets": [{"partition": partition, "offset": {"kafka_offset": 5}}]}
        ),
        what="sink committed offset 5",
    )
    rest.http.put("/connectors/snk/stop")
    patch = {"offsets": [{"partition": partition, "offset": {"kafka_offset": 1}}]}
    assert rest.http.patch("/connectors/snk/offsets", json=patch).status_code == 200
    assert rest.http.get("/connectors/snk/offsets").json()["offsets"][0]["offset"] == {"kafka_offset": 1}
    assert rest.http.delete("/connectors/snk/offsets").status_code == 200
    assert rest.http.get("/connectors/snk/offsets").json()["offsets"][0]["offset"] == {"kafka_offset": 0}


def test_admin_loggers(rest: Rest) -> None:
    assert "root" in rest.http.get("/admin/loggers").json()
    r = rest.http.put("/admin/loggers/cdc.runtime", json={"level": "DEBUG"})
    assert r.status_code == 200 and "cdc.runtime" in r.json()
    level = rest.http.get("/admin/loggers/cdc.runtime").json()
    assert level["level"] == "DEBUG" and isinstance(level["last_modified"], int)
    assert rest.http.put("/admin/loggers/cdc.runtime", json={"level": "WARN"}).status_code == 200
    assert rest.http.get("/admin/loggers/cdc.runtime").json()["level"] == "WARN"
    # Kafka's LoggingResource answers an unknown level with 404 (NotFoundException), not 400.
    assert rest.http.put("/admin/loggers/cdc.runtime", json={"level": "LOUD"}).status_code == 404
    assert rest.http.get("/admin/loggers/no.such.logger").status_code == 404


def test_unknown_path_and_method_use_the_error_body(rest: Rest) -> None:
    r = rest.http.get("/no-such-thing")
    assert r.status_code == 404 and r.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    r = rest.http.delete("/connector-plugins")
    assert r.status_code == 405 and r.json()["error_code"] == 405

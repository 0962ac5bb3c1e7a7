"""Each bad request gets Kafka Connect's HTTP code and a message that says what to do."""

from __future__ import annotations

import pytest

from tests.rest.conftest import Rest, controlled, wait_until


def error(r) -> str:  # type: ignore[no-untyped-def]
    body = r.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == r.status_code
    return body["message"]


def test_malformed_json(rest: Rest) -> None:
    r = rest.http.post(
        "/connectors", content=b'{"name": "x", "config": {', headers={"content-type": "application/json"}
    )
    assert r.status_code == 400
    assert error(r).startswith("Malformed JSON in the request body")
    r = rest.http.put("/connectors/x/config", content=b"not json")
    assert r.status_code == 400 and "Malformed JSON" in error(r)


def test_body_with_the_wrong_shape(rest: Rest) -> None:
    r = rest.http.post("/connectors", json={"config": {"connector.class": "ControlledSource"}})
    assert r.status_code == 400 and "Connector name is required" in error(r)
    r = rest.http.post("/connectors", json={"name": "x", "config": {"nested": {"a": 1}}})
    assert r.status_code == 400 and "must be a string" in error(r)


def test_unknown_connector(rest: Rest) -> None:
    for method, path in [
        ("GET", "/connectors/ghost"),
        ("GET", "/connectors/ghost/config"),
        ("GET", "/connectors/ghost/status"),
        ("GET", "/connectors/ghost/tasks"),
        ("GET", "/connectors/ghost/topics"),
        ("GET", "/connectors/ghost/offsets"),
        ("PUT", "/connectors/ghost/pause"),
        ("PUT", "/connectors/ghost/resume"),
        ("PUT", "/connectors/ghost/stop"),
        ("POST", "/connectors/ghost/restart"),
        ("POST", "/connectors/ghost/tasks/0/restart"),
        ("DELETE", "/connectors/ghost"),
    ]:
        r = rest.http.request(method, path)
        assert r.status_code == 404, (method, path)
        assert error(r) == "Connector ghost not found", (method, path)


def test_invalid_config(rest: Rest) -> None:
    r = rest.http.post("/connectors", json=controlled("bad", **{"tasks.max": "zero"}))
    assert r.status_code == 400
    message = error(r)
    assert message.startswith("Connector configuration is invalid and contains the following 1 error(s):")
    assert "Invalid value zero for configuration tasks.max" in message
    assert "/connector-plugins/{connectorType}/config/validate" in message
    assert rest.http.get("/connectors").json() == []


def test_patch_offsets_while_running(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("run"))
    wait_until(lambda: rest.state("run")["connector"]["state"] == "RUNNING", what="RUNNING")
    patch = {"offsets": [{"partition": {"task": "run-0"}, "offset": {"n": 0}}]}
    r = rest.http.patch("/connectors/run/offsets", json=patch)
    assert r.status_code == 400
    assert error(r) == (
        "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
        "specified connector by issuing a 'PUT' request to the '/connectors/run/stop' endpoint"
    )
    assert rest.http.delete("/connectors/run/offsets").status_code == 400
    rest.http.put("/connectors/run/pause")
    assert rest.http.patch("/connectors/run/offsets", json=patch).status_code == 400


def test_unknown_plugin(rest: Rest) -> None:
    r = rest.http.post("/connectors", json={"name": "u", "config": {"connector.class": "com.example.NoSuchConnector"}})
    assert r.status_code == 400
    assert "com.example.NoSuchConnector" in error(r)
    r = rest.http.put("/connector-plugins/NoSuchConnector/config/validate", json={"name": "u"})
    assert r.status_code == 400 and "NoSuchConnector" in error(r)
    r = rest.http.get("/connector-plugins/NoSuchConnector/config")
    assert r.status_code == 404 and error(r).startswith("Unknown plugin NoSuchConnector.")


@pytest.mark.integration
def test_basic_auth(tmp_path) -> None:  # type: ignore[no-untyped-def]
    creds = tmp_path / "credentials.properties"
    creds.write_text("admin=s3cret\n")
    r = Rest(tmp_path, **{"rest.basic.auth.credentials.file": str(creds)})
    try:
        denied = r.http.get("/connectors")
        assert denied.status_code == 401 and denied.headers["www-authenticate"].startswith("Basic")
        assert "rest.basic.auth.credentials.file" in error(denied)
        assert r.http.get("/connectors", auth=("admin", "wrong")).status_code == 401
        assert r.http.get("/connectors", auth=("admin", "s3cret")).json() == []
    finally:
        r.close()


def test_unknown_converter_class_is_refused_at_create(rest: Rest) -> None:
    """Kafka's ConfigDef CLASS type: a converter override that names no installed class is a
    400 now (and an error in validate), not a task that fails to start later."""
    r = rest.http.post("/connectors", json=controlled("conv", **{"value.converter": "com.example.Nope"}))
    assert r.status_code == 400
    message = error(r)
    assert "value.converter" in message and "com.example.Nope" in message
    assert rest.http.get("/connectors").json() == []
    body = {"connector.class": "ControlledSource", "name": "conv", "topic": "t", "header.converter": "Nope"}
    infos = rest.http.put("/connector-plugins/ControlledSource/config/validate", json=body).json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"] if c["value"]["errors"]}
    assert infos["error_count"] == 1 and list(errors) == ["header.converter"]
    ok = controlled("conv", **{"value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    assert rest.http.post("/connectors", json=ok).status_code == 201


def test_control_characters_in_a_name_are_refused_by_validation(rest: Rest) -> None:
    """Kafka's NonEmptyStringWithoutControlChars, for names that come from files too."""
    body = {"connector.class": "ControlledSource", "name": "orders\tv2", "topic": "t"}
    infos = rest.http.put("/connector-plugins/ControlledSource/config/validate", json=body).json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"] if c["value"]["errors"]}
    assert list(errors) == ["name"] and "control sequences" in errors["name"][0] and ": 9" in errors["name"][0]
    body["name"] = "orders/v2 ünïcode"
    assert rest.http.put("/connector-plugins/ControlledSource/config/validate", json=body).json()["error_count"] == 0

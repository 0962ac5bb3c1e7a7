"""Kafka Connect REST compatibility: the cases an audit against Kafka's resources found different.

Each test names the Kafka behaviour it pins (ConnectorsResource, LoggingResource, Jersey).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from cdc.rest.http_compat import accepts_json
from cdc.runtime.herder import NotFoundError
from tests.rest.conftest import Rest, controlled, wait_until


def error(r: httpx.Response) -> str:
    body = r.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == r.status_code
    return str(body["message"])


def test_trailing_slash_is_served_not_redirected(rest: Rest) -> None:
    # Jersey matches `/connectors/` like `/connectors`; a 307 breaks curl without -L.
    r = rest.http.post("/connectors/", json=controlled("ts"))
    assert r.status_code == 201
    assert rest.http.get("/connectors/").json() == ["ts"]
    assert rest.http.get("/connectors/ts/").json()["name"] == "ts"
    assert rest.http.get("/connectors/ts/status/").json()["name"] == "ts"
    assert rest.http.get("/connector-plugins/").status_code == 200
    assert rest.http.delete("/connectors/ts/").status_code == 204
    assert rest.http.get("/connectors/").json() == []
    missing = rest.http.get("/no-such-thing/")
    assert missing.status_code == 404 and error(missing) == "HTTP 404 Not Found"


def test_head_is_get_without_a_body(rest: Rest) -> None:
    rest.http.post("/connectors", json=controlled("hd"))
    r = rest.http.head("/connectors/hd")
    assert r.status_code == 200 and r.content == b"" and r.headers["content-type"] == "application/json"
    assert rest.http.head("/connectors/ghost").status_code == 404
    assert rest.http.head("/connectors/hd/pause").status_code == 405


def test_control_characters_in_a_name_are_rejected(rest: Rest) -> None:
    # Kafka's ConnectorConfig validates `name` with NonEmptyStringWithoutControlChars. Such a name
    # used to be created, then the Location header made the server drop the connection.
    r = rest.http.post("/connectors", json=controlled("x\ny"))
    assert r.status_code == 400
    message = error(r)
    assert message.startswith("Connector configuration is invalid and contains the following 1 error(s):")
    assert "Invalid value x\ny for configuration name: String may not contain control sequences" in message
    assert message.endswith(
        "ASCII chars: 10\nYou can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`"
    )
    put = rest.http.put("/connectors/tab%09name/config", json=controlled("unused")["config"])
    assert put.status_code == 400 and "ASCII chars: 9" in error(put)
    assert rest.http.get("/connectors").json() == []


def test_names_with_url_encoded_characters(rest: Rest) -> None:
    for name, path in [("sp ace", "sp%20ace"), ("ü", "%C3%BC"), ("50%", "50%25"), ("a/b", "a%2Fb")]:
        created = rest.http.post("/connectors", json=controlled(name))
        assert created.status_code == 201, name
        # Percent-encoded, as JAX-RS's UriBuilder writes it.
        assert created.headers["location"] == f"/connectors/{path}", name
        assert rest.http.get(f"/connectors/{path}").json()["name"] == name
        assert rest.http.get(f"/connectors/{path}/config").json()["name"] == name
        wait_until(lambda p=path: rest.http.get(f"/connectors/{p}/status").json()["tasks"], what=f"{name} task")
        assert rest.http.get(f"/connectors/{path}/tasks/0/status").json()["id"] == 0
    assert sorted(rest.http.get("/connectors").json()) == ["50%", "a/b", "sp ace", "ü"]
    # A slash stays inside its segment: `a%2Fb/status` is not `a` + `b/status`.
    assert rest.http.delete("/connectors/a%2Fb").status_code == 204
    assert rest.http.get("/connectors/a%2Fb").status_code == 404
    assert "/connectors/{name}/status" in rest.http.get("/openapi.json").json()["paths"]


def test_put_config_create_sets_location(rest: Rest) -> None:
    cfg = controlled("loc")["config"]
    created = rest.http.put("/connectors/loc/config", json=cfg)
    assert created.status_code == 201 and created.headers["location"] == "/connectors/loc"
    updated = rest.http.put("/connectors/loc/config", json={**cfg, "topic": "other"})
    assert updated.status_code == 200 and "location" not in updated.headers
    assert updated.json()["config"]["topic"] == "other"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_body_that_is_not_declared_json_gets_415(rest: Rest, content_type: str) -> None:
    # Resources are @Consumes(application/json); `curl -d` without -H sends a form type.
    body = b'{"name": "ct", "config": {"connector.class": "ControlledSource", "topic": "t"}}'
    r = rest.http.post("/connectors", content=body, headers={"content-type": content_type})
    assert r.status_code == 415 and error(r).startswith("HTTP 415 Unsupported Media Type")
    assert "Content-Type: application/json" in error(r)
    put = rest.http.put("/connectors/ct/config", content=b"{}", headers={"content-type": content_type})
    assert put.status_code == 415
    assert rest.http.get("/connectors").json() == []
    # JSON with a charset, or no Content-Type at all (Jersey accepts both), is fine.
    ok = rest.http.post("/connectors", content=body, headers={"content-type": "application/json; charset=utf-8"})
    assert ok.status_code == 201
    bare = rest.http.put("/connectors/ct/config", content=b'{"connector.class": "ControlledSource", "topic": "u"}')
    assert bare.status_code == 200


def test_accept_that_rules_out_json_gets_406(rest: Rest) -> None:
    # Resources are @Produces(application/json).
    r = rest.http.get("/connectors", headers={"accept": "text/html"})
    assert r.status_code == 406 and error(r).startswith("HTTP 406 Not Acceptable")
    for accept in ["application/json", "*/*", "application/*", "text/html, */*;q=0.1", ""]:
        assert rest.http.get("/connectors", headers={"accept": accept}).status_code == 200, accept
    assert rest.http.get("/connectors", headers={"accept": "application/json;q=0"}).status_code == 406
    # The docs UI is HTML and stays reachable from a browser.
    assert rest.http.get("/docs", headers={"accept": "text/html"}).status_code == 200


def test_accepts_json_parsing() -> None:
    assert accepts_json("") and accepts_json("application/json") and accepts_json("APPLICATION/JSON; charset=utf-8")
    assert accepts_json("text/plain, application/*;q=0.5")
    assert not accepts_json("text/plain") and not accepts_json("*/*;q=0") and not accepts_json("*/*;q=oops")


def test_alter_offsets_needs_offsets_before_anything_else(rest: Rest) -> None:
    # ConnectorsResource.alterConnectorOffsets checks this before the state and even the name.
    rest.http.post("/connectors", json=controlled("off"))
    expected = "Partitions / offsets need to be provided for an alter offsets request"
    for body in [{"offsets": []}, {}, {"offsets": None}]:
        for name in ("off", "ghost"):
            r = rest.http.patch(f"/connectors/{name}/offsets", json=body)
            assert r.status_code == 400 and error(r) == expected, (name, body)
    for bad in [[1], {"offsets": "x"}, "offsets"]:
        r = rest.http.patch("/connectors/off/offsets", json=bad)
        assert r.status_code == 400 and error(r).startswith('Send {"offsets"')


def test_tasks_config_is_keyed_by_task_id(rest: Rest) -> None:
    # The deprecated (KIP-970) GET /connectors/{n}/tasks-config, with secrets hidden like /tasks.
    rest.http.post(
        "/connectors", json=controlled("tc", **{"db.password": "s3cret", "task.count": "2", "tasks.max": "2"})
    )
    body = rest.http.get("/connectors/tc/tasks-config").json()
    assert sorted(body) == ["tc-0", "tc-1"]
    assert body["tc-1"]["task.index"] == "1" and body["tc-0"]["db.password"] == "[hidden]"
    r = rest.http.get("/connectors/ghost/tasks-config")
    assert r.status_code == 404 and error(r) == "Connector ghost not found"


def test_expand_leaves_out_a_connector_that_vanished(rest: Rest, monkeypatch: pytest.MonkeyPatch) -> None:
    # Kafka catches NotFoundException per connector (deleted while listing) instead of failing the list.
    rest.http.post("/connectors", json=controlled("keep"))
    rest.http.post("/connectors", json=controlled("gone"))
    real = rest.herder.connector_status

    def status(name: str) -> dict[str, Any]:
        if name == "gone":
            raise NotFoundError("No status found for connector gone")
        return real(name)

    monkeypatch.setattr(rest.herder, "connector_status", status)
    r = rest.http.get("/connectors", params=[("expand", "status"), ("expand", "info")])
    assert r.status_code == 200 and list(r.json()) == ["keep"]
    assert set(r.json()["keep"]) == {"status", "info"}


def test_connectors_only_parses_like_a_jersey_boolean(rest: Rest) -> None:
    def kinds(params: dict[str, str]) -> set[str]:
        return {p["type"] for p in rest.http.get("/connector-plugins", params=params).json()}

    assert kinds({}) <= {"source", "sink"}
    assert kinds({"connectorsOnly": "TRUE"}) <= {"source", "sink"}
    # Boolean.valueOf: anything but "true" is false, so everything is listed.
    assert "transformation" in kinds({"connectorsOnly": "no"})
    assert "transformation" in kinds({"connectorsOnly": ""})


def test_logger_levels_follow_logging_resource(rest: Rest) -> None:
    missing = rest.http.put("/admin/loggers/cdc.audit", json={})
    assert missing.status_code == 400
    assert error(missing).startswith("Desired 'level' parameter was not specified in request.")
    invalid = rest.http.put("/admin/loggers/cdc.audit", json={"level": "LOUD"})
    assert invalid.status_code == 404 and error(invalid).startswith("invalid log level 'LOUD'.")
    # An unknown scope falls back to worker: 200 with the affected loggers.
    r = rest.http.put("/admin/loggers/cdc.audit", params={"scope": "galaxy"}, json={"level": "DEBUG"})
    assert r.status_code == 200 and r.json() == ["cdc.audit"]
    # scope=cluster answers 204 with no body.
    r = rest.http.put("/admin/loggers/cdc.audit", params={"scope": "cluster"}, json={"level": "INFO"})
    assert r.status_code == 204 and r.content == b""
    assert rest.http.get("/admin/loggers/cdc.audit").json()["level"] == "INFO"

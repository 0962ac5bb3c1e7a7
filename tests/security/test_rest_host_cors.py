"""DNS rebinding and cross-site writes (issue 17).

- A page whose name is re-pointed to 127.0.0.1 sends `Host: evil.example`: refused with 421 and
  one JSON line; the listeners' hosts, rest.advertised.host.name, localhost and rest.allowed.hosts
  are served (the old main answered any Host).
- A browser sends a cross-site "simple" POST without asking: `POST …/restart` from another
  site's page (an Origin of another site, Sec-Fetch-Site: cross-site, a text/plain or form body)
  is refused unless access.control.allow.origin allows that origin (the old main restarted).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rest.conftest import controlled, wait_until
from tests.rest.connectors import ControlledSource
from tests.security import rest_rig
from tests.security.rest_rig import Api, error
from tests.support.examples import examples

api_factory = rest_rig.api_factory


def started(api: Api, http: httpx.Client, name: str = "ctl") -> None:
    assert http.post("/connectors", json=controlled(name)).status_code == 201
    wait_until(lambda: http.get(f"/connectors/{name}/status").json()["connector"]["state"] == "RUNNING")


def restarts(name: str) -> object:
    """The live connector instance: a restart replaces it."""
    return ControlledSource.instances.get(name)


def test_foreign_host_header_is_refused(api_factory: Callable[..., Api]) -> None:
    api = api_factory()
    port = api.server.port
    with api.client() as http:
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.evil.example"):
            r = http.get("/connectors", headers={"Host": host})
            assert r.status_code == 421, host
            assert "rest.allowed.hosts" in error(r) and "DNS rebinding" in error(r)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", "localhost.", f"[::1]:{port}"):
            assert http.get("/connectors", headers={"Host": host}).status_code == 200, host
        assert http.get("/connectors", headers={"Host": "bad host!"}).status_code == 400


def test_advertised_and_extra_hosts_are_served(api_factory: Callable[..., Api]) -> None:
    api = api_factory(
        **{"rest.advertised.host.name": "connect-1.internal", "rest.allowed.hosts": "ui.example,*.corp.example"}
    )
    with api.client() as http:
        for host in ("connect-1.internal:8083", "ui.example", "a.corp.example", "b.a.corp.example"):
            assert http.get("/connectors", headers={"Host": host}).status_code == 200, host
        for host in ("corp.example", "ui.example.evil", "xcorp.example", "connect-2.internal"):
            assert http.get("/connectors", headers={"Host": host}).status_code == 421, host


def test_wildcard_listener_serves_the_machines_names(api_factory: Callable[..., Api]) -> None:
    api = api_factory(listeners="http://0.0.0.0:0")
    url = f"http://127.0.0.1:{api.server.port}"
    with httpx.Client(base_url=url, timeout=30) as http:
        assert http.get("/connectors", headers={"Host": socket.gethostname()}).status_code == 200
        assert http.get("/connectors").status_code == 200  # 127.0.0.1, the address connected to
        assert http.get("/connectors", headers={"Host": "evil.example"}).status_code == 421


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(
    label=st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True),
    tld=st.sampled_from(["example", "com", "attacker.net", "localhost.evil", "1"]),
)
def test_host_policy_refuses_names_it_was_not_given(label: str, tld: str) -> None:
    from cdc.rest.guards import HostPolicy

    policy = HostPolicy.build(["127.0.0.1"], "connect.internal", ["ui.example"])
    host = f"{label}.{tld}"
    allowed = host in {"ui.example", "connect.internal"}
    assert policy.allows(host, "127.0.0.1") is allowed
    assert policy.allows("localhost", None) and policy.allows("::1", None)


def test_cross_site_restart_is_refused(api_factory: Callable[..., Api]) -> None:
    api = api_factory()
    with api.client() as http:
        started(api, http)
        before = restarts("ctl")
        # Another site's page: fetch(url, {method: "POST", mode: "no-cors"}) sends no Content-Type.
        r = http.post("/connectors/ctl/restart", headers={"Origin": "https://evil.example"})
        assert r.status_code == 403 and "access.control.allow.origin" in error(r)
        r = http.post("/connectors/ctl/restart", headers={"Sec-Fetch-Site": "cross-site"})
        assert r.status_code == 403
        r = http.post("/connectors/ctl/restart", headers={"Origin": "null"})  # sandboxed frame, file://
        assert r.status_code == 403
        # A <form enctype=text/plain> or urlencoded form: not JSON, Jersey's 415 (even without Origin).
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            r = http.post("/connectors/ctl/restart", content=b"a=b", headers={"Content-Type": content_type})
            assert r.status_code == 415, content_type
        r = http.request("DELETE", "/connectors/ctl", headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        assert restarts("ctl") is before, "a refused request restarted the connector"
        assert http.get("/connectors").json() == ["ctl"]
        # curl, scripts and the API's own pages (same origin) still restart.
        origin = f"http://127.0.0.1:{api.server.port}"
        assert http.post("/connectors/ctl/restart", headers={"Origin": origin}).status_code == 204
        assert http.post("/connectors/ctl/restart", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 204
        assert http.post("/connectors/ctl/restart").status_code == 204
        wait_until(lambda: restarts("ctl") is not before, what="the restart")


def test_cors_allowed_origin_may_write(api_factory: Callable[..., Api]) -> None:
    ui = "https://ui.example"
    api = api_factory(**{"access.control.allow.origin": ui, "access.control.allow.methods": "GET,POST,PUT"})
    with api.client() as http:
        started(api, http)
        r = http.post("/connectors/ctl/restart", headers={"Origin": ui})
        assert r.status_code == 204 and r.headers["access-control-allow-origin"] == ui
        # Preflight, as a browser asks before a PUT.
        r = http.options("/connectors/ctl/pause", headers={"Origin": ui, "Access-Control-Request-Method": "PUT"})
        assert r.status_code == 200 and "PUT" in r.headers["access-control-allow-methods"]
        assert http.put("/connectors/ctl/pause", headers={"Origin": ui}).status_code == 202
        # DELETE is not in access.control.allow.methods; other origins get nothing.
        assert http.request("DELETE", "/connectors/ctl", headers={"Origin": ui}).status_code == 403
        r = http.options(
            "/connectors/ctl", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "PUT"}
        )
        assert "access-control-allow-origin" not in r.headers
        assert http.post("/connectors/ctl/restart", headers={"Origin": "https://evil.example"}).status_code == 403
        assert http.get("/connectors").json() == ["ctl"]


def test_cors_wildcard_patterns(api_factory: Callable[..., Api]) -> None:
    """Jetty's CrossOriginFilter syntax: `*` inside an origin matches any characters."""
    api = api_factory(**{"access.control.allow.origin": "https://*.ui.example"})
    with api.client() as http:
        started(api, http)
        assert http.post("/connectors/ctl/restart", headers={"Origin": "https://a.ui.example"}).status_code == 204
        assert http.post("/connectors/ctl/restart", headers={"Origin": "https://ui.example.evil"}).status_code == 403

"""Limits and start-up failures of the REST API (issue 17).

- A request body over `rest.request.max.bytes` (1 MiB by default) gets 413 and one JSON line;
  the old main accepted a 30 MB body.
- Deeply nested JSON gets 400 and one line; the old main answered 500 (RecursionError).
- A REST port that is taken fails `cdc standalone` at start with one line; the old main ran the
  connectors without their API.
- A listener beyond loopback without authentication is warned about at start.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.rest.server import RestBindError, RestServer
from tests.rest.conftest import controlled, make_worker
from tests.security import rest_rig
from tests.security.rest_certs import Pki
from tests.security.rest_rig import Api, CdcProcess, error, free_port
from tests.support.examples import examples

api_factory = rest_rig.api_factory
pki = rest_rig.pki


def big_connector(size: int) -> bytes:
    body = controlled("big", padding="a" * size)
    return json.dumps(body).encode()


def test_oversize_body_gets_413(api_factory: Callable[..., Api]) -> None:
    api = api_factory()
    with api.client(headers={"Content-Type": "application/json"}) as http:
        r = http.post("/connectors", content=big_connector(30_000_000))
        assert r.status_code == 413 and "rest.request.max.bytes" in error(r)

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield big_connector(2_000_000)

        r = http.post("/connectors", content=chunks())
        assert r.status_code == 413 and "rest.request.max.bytes" in error(r)
        assert http.get("/connectors").json() == []
        # Just under the limit is served.
        body = big_connector(1_048_576 - len(big_connector(0)))
        assert len(body) == 1_048_576
        assert http.post("/connectors", content=body).status_code == 201


def test_body_limit_is_a_worker_key(api_factory: Callable[..., Api]) -> None:
    api = api_factory(**{"rest.request.max.bytes": "4096"})
    with api.client() as http:
        assert http.post("/connectors", json=controlled("small")).status_code == 201
        r = http.put("/connectors/small/config", json=controlled("small", padding="x" * 5000)["config"])
        assert r.status_code == 413 and "(4096 bytes)" in error(r)


@pytest.mark.parametrize("depth", [65, 2_000, 200_000])
def test_deeply_nested_json_gets_400(api_factory: Callable[..., Api], depth: int) -> None:
    api = api_factory(**{"rest.request.max.bytes": "10000000"})
    nested = "[" * depth + "]" * depth
    with api.client(headers={"Content-Type": "application/json"}) as http:
        for method, path, body in (
            ("POST", "/connectors", f'{{"name": "n", "config": {nested}}}'),
            ("PUT", "/connectors/n/config", nested),
            ("PATCH", "/connectors/n/offsets", f'{{"offsets": [{{"partition": {nested}}}]}}'),
            ("PUT", "/connector-plugins/ControlledSource/config/validate", nested),
            ("PUT", "/admin/loggers/root", f'{{"level": {nested}}}'),
        ):
            r = http.request(method, path, content=body.encode())
            assert r.status_code == 400, (method, path, r.status_code, r.text[:200])
            assert "deeper than 64 levels" in error(r)


@settings(max_examples=examples(40), deadline=None, derandomize=True)
@given(depth=st.integers(1, 64), container=st.sampled_from(["[]", "{}"]))
def test_nesting_up_to_the_limit_is_parsed(depth: int, container: str) -> None:
    """At or under the limit the body reaches the resource (which answers as it would for any value)."""
    from cdc.rest.requests import MAX_JSON_DEPTH, depth_exceeds

    value: object = [] if container == "[]" else {}
    for _ in range(depth - 1):
        value = [value] if container == "[]" else {"k": value}
    assert depth_exceeds(value, MAX_JSON_DEPTH) is False
    assert depth_exceeds([value], depth) is True


@pytest.mark.e2e
def test_cdc_standalone_fails_on_a_taken_port(tmp_path: Path) -> None:
    """The old main logged the error and ran on without its API."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        worker = tmp_path / "worker.properties"
        worker.write_text(f"transport=embedded\nstate.dir={tmp_path}/state\nlisteners=http://127.0.0.1:{port}\n")
        connector = tmp_path / "gen.properties"
        connector.write_text("name=gen\nconnector.class=tests.runtime.connectors.GeneratorSource\ntopic=t\n")
        code, _, err = CdcProcess("standalone", str(worker), str(connector)).finish(timeout=120)
    assert code != 0
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "listeners=" in lines[0], err
    assert "Traceback" not in err and "running without the REST API" not in err


@pytest.mark.e2e
def test_cdc_worker_fails_on_a_taken_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        worker = tmp_path / "worker.properties"
        worker.write_text(
            "transport=kafka\nbootstrap.servers=127.0.0.1:1\ngroup.id=g\n"  # nothing is reached before the port
            f"state.dir={tmp_path}/state\nlisteners=http://127.0.0.1:{port}\n"
        )
        code, _, err = CdcProcess("worker", str(worker)).finish(timeout=120)
    assert code != 0
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0], err
    assert "Traceback" not in err


@pytest.mark.e2e
def test_bad_listener_is_one_line(tmp_path: Path) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text(f"transport=embedded\nstate.dir={tmp_path}/state\nlisteners=ftp://127.0.0.1:{free_port()}\n")
    code, _, err = CdcProcess("standalone", str(worker)).finish(timeout=120)
    assert code == 2 and "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert "ftp" in line and "use http:// or https:// listeners" in line


def _warnings(tmp_path: Path, caplog: pytest.LogCaptureFixture, **props: str) -> list[str]:
    worker = make_worker(tmp_path, **props)
    server = RestServer(worker.config, herder=type("H", (), {"worker": worker})())
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cdc.rest"):
        server.bind()
    server.stop()
    return [r.getMessage() for r in caplog.records if "without authentication" in r.getMessage()]


@pytest.mark.integration
def test_warning_for_an_exposed_api_without_auth(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    pki: Pki,
) -> None:
    [warning] = _warnings(tmp_path / "a", caplog, listeners="http://0.0.0.0:0")
    assert "BasicAuthSecurityRestExtension" in warning and "0.0.0.0" in warning
    assert _warnings(tmp_path / "b", caplog, listeners="http://127.0.0.1:0,http://localhost:0") == []
    creds = tmp_path / "creds"
    creds.write_text("a=b\n")
    auth = {"rest.basic.auth.credentials.file": str(creds)}
    assert _warnings(tmp_path / "c", caplog, listeners="http://0.0.0.0:0", **auth) == []
    mtls = {
        "listeners.https.ssl.keystore.location": str(pki.server_keystore_pem),
        "listeners.https.ssl.truststore.location": str(pki.ca_cert),
        "listeners.https.ssl.client.auth": "required",
    }
    assert _warnings(tmp_path / "d", caplog, listeners="https://0.0.0.0:0", **mtls) == []


def test_two_workers_cannot_share_a_port(api_factory: Callable[..., Api]) -> None:
    first = api_factory()
    with pytest.raises(RestBindError, match="cannot listen") as raised:
        Api(Path(first.worker.config.get("state.dir")).parent / "second", listeners=first.url)
    assert "\n" not in str(raised.value)
    assert httpx.get(first.url + "/connectors", timeout=10).status_code == 200

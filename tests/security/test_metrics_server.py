"""Issue 33, item 6: `metrics.port` answers `/metrics` only, and only to the worker's own names.

Before the fix prometheus_client's server answered every path with the exposition and any Host
header, so a web page on a name re-pointed to 127.0.0.1 (DNS rebinding) could read the worker's
metrics. Now the port applies the REST API's Host rule (cdc.runtime.host_policy, with
`metrics.host` as the listener and `rest.allowed.hosts` as extra names) and 404s other paths,
both as Kafka's one-line JSON error. The fuzz sends any method, path and Host: no 5xx, no
traceback on stderr, and the exposition only where it belongs.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.runtime.prometheus.server import MetricsServer, start_metrics_server
from tests.rest.conftest import controlled, wait_until
from tests.security import rest_rig
from tests.security.rest_rig import Api, error
from tests.support.examples import examples

pytestmark = pytest.mark.integration

api_factory = rest_rig.api_factory

EXPOSITION_MARK = "kafka_connect_"  # every exposition of a worker with a connector has these names


@contextmanager
def metrics_of(api: Api) -> Iterator[MetricsServer]:
    server = start_metrics_server(api.worker.config, api.herder)
    assert server is not None
    try:
        yield server
    finally:
        server.stop()


def _base(server: MetricsServer, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{server.port}"


def _with_connector(api_factory: Callable[..., Api], **props: str) -> Api:
    api = api_factory(**{"metrics.port": "0", **props})
    with api.client() as http:
        assert http.post("/connectors", json=controlled("ctl")).status_code == 201
        wait_until(lambda: http.get("/connectors/ctl/status").json()["connector"]["state"] == "RUNNING")
    return api


def test_only_the_metrics_path_is_served(api_factory: Callable[..., Api]) -> None:
    api = _with_connector(api_factory)
    with metrics_of(api) as server, httpx.Client(base_url=_base(server), timeout=30) as http:
        ok = http.get("/metrics")
        assert ok.status_code == 200 and EXPOSITION_MARK in ok.text
        assert server.url == f"http://127.0.0.1:{server.port}/metrics"
        for path in ("/", "/favicon.ico", "/metrics/", "/metricsx", "/x/metrics", "/%2e%2e/metrics", "/api"):
            r = http.get(path)
            assert r.status_code == 404, (path, r.status_code, r.text[:100])
            assert "/metrics" in error(r) and EXPOSITION_MARK not in r.text


def test_a_foreign_host_header_is_refused(api_factory: Callable[..., Api]) -> None:
    api = _with_connector(api_factory)
    with metrics_of(api) as server, httpx.Client(base_url=_base(server), timeout=30) as http:
        for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.evil.example", "10.0.0.1"):
            r = http.get("/metrics", headers={"Host": host})
            assert r.status_code == 421, (host, r.status_code)
            message = error(r)
            assert "DNS rebinding" in message and "rest.allowed.hosts" in message and "metrics.host" in message
            assert EXPOSITION_MARK not in r.text
        malformed = http.get("/metrics", headers={"Host": "a b"})
        assert malformed.status_code == 400 and "Host" in error(malformed)
        for host in ("localhost", f"localhost:{server.port}", "127.0.0.1", "[::1]"):
            r = http.get("/metrics", headers={"Host": host})
            assert r.status_code == 200 and EXPOSITION_MARK in r.text, host


def test_rest_allowed_hosts_names_are_answered(api_factory: Callable[..., Api]) -> None:
    api = _with_connector(api_factory, **{"rest.allowed.hosts": "metrics.example,*.corp.example"})
    with metrics_of(api) as server, httpx.Client(base_url=_base(server), timeout=30) as http:
        for host in ("metrics.example", "scrape.corp.example"):
            assert http.get("/metrics", headers={"Host": host}).status_code == 200, host
        assert http.get("/metrics", headers={"Host": "corp.example.evil"}).status_code == 421


def test_a_wildcard_listener_answers_the_address_it_was_reached_at(api_factory: Callable[..., Api]) -> None:
    api = _with_connector(api_factory, **{"metrics.host": "0.0.0.0"})
    with metrics_of(api) as server, httpx.Client(base_url=_base(server), timeout=30) as http:
        assert http.get("/metrics").status_code == 200  # Host: 127.0.0.1:<port>, the address connected to
        assert http.get("/metrics", headers={"Host": "evil.example"}).status_code == 421


_METHODS = st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"])
_PATHS = st.one_of(
    st.sampled_from(["/metrics", "/", "/metrics?name[]=x", "/favicon.ico", "/metrics/../metrics", "/%00", "/%FF"]),
    st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="#?%"), max_size=20).map(
        lambda s: "/" + s
    ),
)
_HOSTS = st.one_of(
    st.sampled_from([None, "localhost", "127.0.0.1", "evil.example", "[::1]", "[::1", "a:b:c", "", " "]),
    st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20),
)


def _raw_request(port: int, method: str, path: str, host: str | None) -> tuple[int, bytes]:
    """One HTTP/1.1 request as written (no client normalizing path or Host); (status, body)."""
    head = f"{method} {path} HTTP/1.1\r\n" + (f"Host: {host}\r\n" if host is not None else "")
    head += "Connection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head.encode("latin-1"))
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    status_line, _, rest = response.partition(b"\r\n")
    _, _, body = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), body


def test_fuzzed_requests_get_no_server_error_and_no_traceback(
    api_factory: Callable[..., Api], capfd: pytest.CaptureFixture[str]
) -> None:
    api = _with_connector(api_factory)
    problems: list[str] = []
    served = 0
    with metrics_of(api) as server:
        capfd.readouterr()

        @settings(
            max_examples=examples(300),
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(method=_METHODS, path=_PATHS, host=_HOSTS)
        def run(method: str, path: str, host: str | None) -> None:
            nonlocal served
            status, body = _raw_request(server.port, method, path, host)
            what = f"{method} {path!r} Host={host!r} -> {status}"
            if status >= 500:
                problems.append(f"{what}: {body[:200]!r}")
            exposition = EXPOSITION_MARK.encode() in body
            own_name = host in (None, "localhost", "127.0.0.1", "[::1]") or (
                host is not None and host.split(":")[0] in ("localhost", "127.0.0.1")
            )
            if exposition and not (path.split("?")[0] == "/metrics" and own_name):
                problems.append(f"{what}: the exposition was served")
            if exposition:
                served += 1
            if 400 <= status < 500 and status != 405 and method != "HEAD":
                try:
                    parsed = json.loads(body)
                except ValueError:
                    problems.append(f"{what}: not a JSON error {body[:100]!r}")
                else:
                    if parsed.get("error_code") != status or "\n" in parsed.get("message", "\n"):
                        problems.append(f"{what}: {parsed}")

        run()
        out, err = capfd.readouterr()
    assert not problems, "\n".join(problems[:10])
    assert served > 0
    assert "Traceback" not in out + err, (out + err)[-2000:]

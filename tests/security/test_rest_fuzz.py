"""Fuzzing the REST API (issue 17): no request gets a 500.

1. schemathesis against the app's own OpenAPI document (/openapi.json), every operation, with
   schema-conforming (positive) and schema-violating (negative) requests, once with random
   connector names and once against a running connector;
2. a hypothesis fuzzer for what the document does not describe: raw bodies that are not JSON or
   not UTF-8, odd content types, encoded path segments, every method on every path.

Both are derandomized (the same examples every run) and bounded: a few hundred requests each.
Every error is Kafka's `{"error_code", "message"}`. On the old main, nested JSON gave a
500 here.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.rest.conftest import controlled, wait_until
from tests.security.rest_rig import Api
from tests.support.examples import examples

EXAMPLES_PER_OPERATION = 12
RUNNING = "ctl"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    api = Api(Path(tmp_path_factory.mktemp("fuzz")))
    with api.client() as http:
        assert http.post("/connectors", json=controlled(RUNNING)).status_code == 201
        wait_until(lambda: http.get(f"/connectors/{RUNNING}/status").json()["connector"]["state"] == "RUNNING")
    yield api
    api.close()


def check(response: httpx.Response | Any, what: str, problems: list[str]) -> None:
    """No 5xx; every error is Kafka's JSON error body with its status."""
    status = response.status_code
    if status >= 500:
        problems.append(f"{what} -> {status}: {response.text[:300]}")
    elif status >= 400:
        try:
            body = json.loads(response.content)
        except ValueError:
            problems.append(f"{what} -> {status} without a JSON body: {response.text[:200]!r}")
            return
        # (Kafka's own messages may span lines: "…the following 1 error(s):\nInvalid value…".)
        if not (isinstance(body, dict) and body.get("error_code") == status and isinstance(body.get("message"), str)):
            problems.append(f"{what} -> {status} with body {str(body)[:200]}")


FUZZ_SETTINGS = settings(
    max_examples=examples(EXAMPLES_PER_OPERATION),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def fuzz_operation(api: Api, operation: Any, mode: GenerationMode, extra: dict[str, Any], problems: list[str]) -> int:
    """Run one operation's examples in one generation mode; the number of requests sent."""
    sent = 0

    @FUZZ_SETTINGS
    @given(case=operation.as_strategy(generation_mode=mode, **extra))
    def run(case: schemathesis.Case) -> None:
        nonlocal sent
        sent += 1
        response = case.call(base_url=api.url, timeout=60)
        check(response, f"{mode.value} {case.method} {case.formatted_path} {case.body!r:.200}", problems)

    with contextlib.suppress(Unsatisfiable):  # nothing to make invalid (GET / in negative mode)
        run()
    return sent


def test_schemathesis_finds_no_server_error(api: Api) -> None:
    schema = schemathesis.openapi.from_url(api.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25, [op.label for op in operations]
    problems: list[str] = []
    requests = 0
    for operation in operations:
        passes: list[dict[str, Any]] = [{}]
        if "{name}" in operation.path and operation.method.upper() != "DELETE":
            passes.append({"path_parameters": {"name": RUNNING}})  # the running connector, not a 404
        for extra in passes:
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                requests += fuzz_operation(api, operation, mode, extra, problems)
    assert requests >= 300, requests
    assert not problems, "\n".join(problems[:20])


# The routes as they are (bodies go where they are read), then any method on any of their paths.
ROUTES = [
    ("GET", "/"),
    ("GET", "/connectors"),
    ("POST", "/connectors"),
    ("GET", "/connectors/{n}"),
    ("DELETE", "/connectors/{n}"),
    ("GET", "/connectors/{n}/config"),
    ("PUT", "/connectors/{n}/config"),
    ("PATCH", "/connectors/{n}/config"),
    ("GET", "/connectors/{n}/status"),
    ("POST", "/connectors/{n}/restart"),
    ("GET", "/connectors/{n}/tasks"),
    ("GET", "/connectors/{n}/tasks/{t}/status"),
    ("POST", "/connectors/{n}/tasks/{t}/restart"),
    ("PUT", "/connectors/{n}/pause"),
    ("PUT", "/connectors/{n}/resume"),
    ("PUT", "/connectors/{n}/stop"),
    ("GET", "/connectors/{n}/offsets"),
    ("PATCH", "/connectors/{n}/offsets"),
    ("DELETE", "/connectors/{n}/offsets"),
    ("PUT", "/connectors/{n}/topics/reset"),
    ("PUT", "/connector-plugins/{n}/config/validate"),
    ("GET", "/connector-plugins/{n}/config"),
    ("PUT", "/admin/loggers/{n}"),
    ("POST", "/connectors/{n}/signals"),
    ("GET", "/metrics"),
]
routes = st.one_of(
    st.sampled_from(ROUTES),
    st.tuples(
        st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]),
        st.sampled_from([path for _, path in ROUTES]),
    ),
)
segment = st.one_of(
    st.sampled_from([RUNNING, "a%2Fb", "%25", "%FF", "..", "%00", "0", "-1", "99999999999999999999", "%E2%82%AC"]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12).map(
        lambda s: quote(s, safe="")
    ),
)
# The keys the routes read: connectors, offsets, loggers, signals.
BODY_KEYS = ["name", "config", "offsets", "level", "initial_state", "id", "type", "data", "channel"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
bodies = st.one_of(
    st.none(),
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.sampled_from(BODY_KEYS), json_values).map(lambda v: json.dumps(v).encode()),
    st.sampled_from([10, 64, 65, 999, 3000, 100_000]).map(lambda d: ("[" * d + "]" * d).encode()),
    st.sampled_from([64, 65, 999, 3000]).map(lambda d: ('{"name": "n", "config": ' + "[" * d + "]" * d + "}").encode()),
)


@settings(
    max_examples=examples(300), derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
@given(
    route=routes,
    name=segment,
    task=segment,
    body=bodies,
    content_type=st.sampled_from([None, "application/json", "application/json; charset=utf-8", "text/plain", "x/y"]),
    query=st.sampled_from(["", "?expand=status&expand=info", "?includeTasks=true&onlyFailed=maybe", "?scope=%FF"]),
)
def test_raw_requests_find_no_server_error(
    api: Api,
    route: tuple[str, str],
    name: str,
    task: str,
    body: bytes | None,
    content_type: str | None,
    query: str,
) -> None:
    method, template = route
    if method == "DELETE" and name == RUNNING and template == "/connectors/{n}":
        name = "other"  # keep the running connector for the other examples
    path = template.replace("{n}", name).replace("{t}", task) + query
    headers = {"Content-Type": content_type} if content_type else {}
    problems: list[str] = []
    with api.client() as http:
        response = http.request(method, path, content=body, headers=headers)
    if method != "HEAD":
        check(response, f"{method} {path} {body!r:.100} ({content_type})", problems)
    else:
        assert response.status_code < 500
    assert not problems, problems

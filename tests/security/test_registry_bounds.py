"""Issue 33 item 3: the embedded Schema Registry bounds what is inside a schema.

Before the fix a 1 MB schema with 24,000 fields took 17 s to register and a compatibility
check ran past 120 s after its client had left, with the worker ignoring SIGTERM meanwhile; a
schema nested 3,000 records deep got 500 (RecursionError). Now each bound is a worker key with
a default (cdc.log.schema_registry.RegistryLimits) and each refusal is one line that names it:

- `schema.registry.schema.max.bytes` (1 MiB): 413;
- `schema.registry.schema.max.depth` (64 levels of JSON nesting): 422, error_code 42201;
- `schema.registry.schema.max.fields` (10,000 record fields and enum symbols): 422, 42201;
- `schema.registry.compatibility.timeout.ms` (5 s): 422, 42201, and the check stops.

A check also stops when its client leaves or the worker stops, and it holds no lock while it
runs. The hostile schemas go to a real worker's REST API (in process, and `cdc standalone` for
the SIGTERM case), plus a hypothesis fuzzer of the registry's schema-taking routes.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cdc.log.embedded import EmbeddedLog
from cdc.log.schema_registry import RegistryLimits, SchemaRegistryError, SchemaRegistryStore
from cdc.runtime.worker_config import WorkerConfig
from tests.security import rest_rig
from tests.security.rest_rig import Api
from tests.support.examples import examples
from tests.support.proc import CdcProcess, wait_for, write_props

api_factory = rest_rig.api_factory

SR = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
DEFAULTS = RegistryLimits()


# -- hostile schemas ---------------------------------------------------------------------------
def wide_record(fields: int, prefix: str = "f", field_type: Any = "int") -> str:
    """One record with `fields` fields."""
    return json.dumps(
        {
            "type": "record",
            "name": "Wide",
            "fields": [{"name": f"{prefix}{i}", "type": field_type} for i in range(fields)],
        }
    )


def nested_records(depth: int) -> str:
    """Records nested `depth` deep, each an optional field of the one above (Debezium's shape),
    written as text: json.dumps itself recurses."""
    opening = "".join(f'["null",{{"type":"record","name":"R{i}","fields":[{{"name":"f","type":' for i in range(depth))
    return opening + '"int"' + "}]}]" * depth


def union_of_records(prefix: str, count: int) -> str:
    """A union of `count` empty records: two such unions make a cross-product check."""
    return json.dumps([{"type": "record", "name": f"{prefix}{i}", "fields": []} for i in range(count)])


def message(r: httpx.Response, status: int, error_code: int) -> str:
    """The one-line message of a registry error with this status and Confluent error_code."""
    assert r.status_code == status, (r.status_code, r.text[:300])
    body = r.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == error_code, body
    text = str(body["message"])
    assert "\n" not in text and len(text) < 1000, text
    return text


# -- over REST ---------------------------------------------------------------------------------
def test_a_schema_with_24000_fields_is_refused_at_once(api_factory: Callable[..., Api]) -> None:
    api = api_factory()
    schema = wide_record(24_000)
    with api.client(headers=SR) as http:
        started = time.monotonic()
        r = http.post("/subjects/wide-value/versions", json={"schema": schema})
        text = message(r, 422, 42201)
        assert time.monotonic() - started < 5
        assert "24000 record fields" in text and "schema.registry.schema.max.fields (10000)" in text, text
        assert "raise schema.registry.schema.max.fields" in text
        # Lookups and compatibility tests of it are refused the same way.
        assert "max.fields" in message(http.post("/subjects/wide-value", json={"schema": schema}), 422, 42201)
        # Just under the limit is served.
        assert http.post("/subjects/wide-value/versions", json={"schema": wide_record(9_999)}).status_code == 200
        r = http.post("/compatibility/subjects/wide-value/versions/latest", json={"schema": schema})
        assert "max.fields" in message(r, 422, 42201)
        assert http.get("/subjects/wide-value/versions").json() == [1]


@pytest.mark.parametrize("depth", [100, 3_000])
def test_a_deeply_nested_schema_gets_422_not_500(api_factory: Callable[..., Api], depth: int) -> None:
    api = api_factory()
    with api.client(headers=SR) as http:
        for path in ("/subjects/deep/versions", "/subjects/deep", "/compatibility/subjects/deep/versions"):
            r = http.post(path, json={"schema": nested_records(depth)})
            text = message(r, 422, 42201)
            assert "deeper than schema.registry.schema.max.depth (64 levels)" in text, text
        # Bare JSON nesting past Python's recursion (json.loads itself would fail) is the same refusal.
        r = http.post("/subjects/deep/versions", json={"schema": "[" * 200_000 + "]" * 200_000})
        assert "schema.registry.schema.max.depth" in message(r, 422, 42201)
        # A schema within the limit (15 optional records: 60 levels) registers.
        assert http.post("/subjects/deep/versions", json={"schema": nested_records(15)}).status_code == 200


def test_a_schema_over_max_bytes_gets_413(api_factory: Callable[..., Api]) -> None:
    api = api_factory(**{"rest.request.max.bytes": "8000000"})  # the body limit is not what refuses it
    big = json.dumps({"type": "record", "name": "Big", "doc": "x" * 1_500_000, "fields": []})
    with api.client(headers=SR) as http:
        for path in ("/subjects/big/versions", "/subjects/big", "/compatibility/subjects/big/versions"):
            text = message(http.post(path, json={"schema": big}), 413, 413)
            assert "over schema.registry.schema.max.bytes (1048576 bytes)" in text, text
        assert http.get("/subjects").json() == []


def test_a_long_compatibility_check_is_cut_off_by_its_time_limit(api_factory: Callable[..., Api]) -> None:
    """Two unions of 1,000 records: a cross product that runs for minutes unbounded."""
    api = api_factory()
    with api.client(headers=SR) as http:
        assert http.put("/config", json={"compatibility": "FULL"}).status_code == 200
        assert http.post("/subjects/u/versions", json={"schema": union_of_records("A", 1_000)}).status_code == 200
        hostile = {"schema": union_of_records("B", 1_000)}
        for path in ("/subjects/u/versions", "/compatibility/subjects/u/versions/latest"):
            started = time.monotonic()
            text = message(http.post(path, json=hostile, timeout=30), 422, 42201)
            took = time.monotonic() - started
            assert DEFAULTS.check_timeout_ms / 1000 <= took < DEFAULTS.check_timeout_ms / 1000 + 4, took
            assert "longer than schema.registry.compatibility.timeout.ms (5000 ms)" in text, text
        assert http.get("/subjects/u/versions").json() == [1]
        # The fix the message names: without the check (level NONE) it registers at once.
        assert http.put("/config/u", json={"compatibility": "NONE"}).status_code == 200
        started = time.monotonic()
        assert http.post("/subjects/u/versions", json=hostile).status_code == 200
        assert time.monotonic() - started < 3


def test_a_check_stops_when_its_client_leaves(api_factory: Callable[..., Api]) -> None:
    """The process (the worker, in process here) stops spending CPU once the client hangs up."""
    api = api_factory()
    with api.client(headers=SR) as http:
        assert http.put("/config", json={"compatibility": "FULL"}).status_code == 200
        assert http.post("/subjects/u/versions", json={"schema": union_of_records("A", 1_000)}).status_code == 200
        with pytest.raises(httpx.ReadTimeout):
            http.post("/subjects/u/versions", json={"schema": union_of_records("B", 1_000)}, timeout=1)
    time.sleep(0.5)  # the disconnect reaches the route, the check its next step
    cpu = time.process_time()
    time.sleep(1.5)
    assert time.process_time() - cpu < 0.5, "the check went on after its client left"


# -- the worker stops -------------------------------------------------------------------------
@pytest.mark.e2e
def test_cdc_standalone_stops_promptly_with_a_hostile_check_in_flight(tmp_path: Path) -> None:
    """SIGTERM during a hostile check: the worker exits within task.shutdown.graceful.timeout.ms
    (5 s by default) and a small margin; before the fix it ran the check to its end (SIGKILL)."""
    worker = write_props(
        tmp_path / "worker.properties",
        {"transport": "embedded", "state.dir": tmp_path / "state", "listeners": "http://127.0.0.1:0"},
    )
    proc = CdcProcess("standalone", str(worker), log_path=tmp_path / "worker.log")
    url: list[str] = []

    def listening() -> bool:
        found = re.search(r"REST API listening on (http://127\.0\.0\.1:\d+)", proc.output())
        if found:
            url.append(found.group(1))
        return found is not None

    try:
        wait_for(listening, 60, "the REST API", proc)
        with httpx.Client(base_url=url[0], timeout=60, headers=SR) as http:
            assert http.put("/config", json={"compatibility": "FULL"}).status_code == 200
            assert http.post("/subjects/u/versions", json={"schema": union_of_records("A", 1_000)}).status_code == 200
            answers: list[Any] = []

            def hostile() -> None:
                try:
                    answers.append(http.post("/subjects/u/versions", json={"schema": union_of_records("B", 1_000)}))
                except httpx.HTTPError as e:
                    answers.append(e)

            sender = threading.Thread(target=hostile)
            sender.start()
            time.sleep(1)  # the check is running
            started = time.monotonic()
            code = proc.terminate(timeout=60)
            took = time.monotonic() - started
            sender.join(30)
    finally:
        if proc.alive():
            proc.kill9()
    assert code == 0, proc.log_path.read_text()[-3000:]
    assert took < 5 + 3, f"the worker took {took:.1f}s to stop"
    assert answers, "the hostile request got no answer"
    assert not isinstance(answers[0], httpx.Response) or answers[0].status_code != 500, answers[0].text


# -- the store: configurable limits, the check outside the lock -------------------------------------
@pytest.fixture
def log_(tmp_path: Path) -> Iterator[EmbeddedLog]:
    log_ = EmbeddedLog(tmp_path / "state")
    yield log_
    log_.close()


def refusal(call: Callable[[], Any]) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as caught:
        call()
    assert "\n" not in caught.value.message
    return caught.value


def test_the_limits_are_worker_keys_with_the_documented_defaults(log_: EmbeddedLog) -> None:
    assert RegistryLimits.from_config(WorkerConfig({})) == DEFAULTS == RegistryLimits(1_048_576, 64, 10_000, 5_000)
    config = WorkerConfig(
        {
            "schema.registry.schema.max.bytes": "2000",
            "schema.registry.schema.max.depth": "8",
            "schema.registry.schema.max.fields": "5",
            "schema.registry.compatibility.timeout.ms": "250",
        }
    )
    limits = RegistryLimits.from_config(config)
    assert limits == RegistryLimits(2000, 8, 5, 250)
    store = SchemaRegistryStore(log_, limits)
    try:
        e = refusal(lambda: store.register("s", wide_record(6)))
        assert (e.status, e.error_code) == (422, 42201) and "schema.registry.schema.max.fields (5)" in e.message
        e = refusal(lambda: store.register("s", nested_records(3)))
        assert (e.status, e.error_code) == (422, 42201) and "schema.registry.schema.max.depth (8 levels)" in e.message
        e = refusal(lambda: store.register("s", json.dumps({"type": "string", "doc": "x" * 2000})))
        assert (e.status, e.error_code) == (413, 413) and "schema.registry.schema.max.bytes (2000 bytes)" in e.message
        assert store.register("s", wide_record(5)) == 1
        assert store.register("t", nested_records(1)) == 2
    finally:
        store.close()


def _hostile_registration(store: SchemaRegistryStore) -> tuple[threading.Thread, list[Any]]:
    """A thread (not started) registering a union of 300 records under `u` against 300 others:
    a long compatibility check; its result or SchemaRegistryError lands in the list."""
    outcome: list[Any] = []

    def hostile() -> None:
        try:
            outcome.append(store.register("u", union_of_records("B", 300)))
        except SchemaRegistryError as e:
            outcome.append(e)

    return threading.Thread(target=hostile), outcome


def test_a_check_past_its_time_limit_is_refused_and_holds_no_lock(log_: EmbeddedLog) -> None:
    store = SchemaRegistryStore(log_, RegistryLimits(check_timeout_ms=1_500))
    try:
        store.set_compatibility("FULL")
        store.register("u", union_of_records("A", 300))
        checking, outcome = _hostile_registration(store)
        started = time.monotonic()
        checking.start()
        time.sleep(0.3)
        # Meanwhile other subjects register, and the log's write lock is free.
        assert store.register("other", wide_record(3)) > 0
        assert time.monotonic() - started < 1.2
        checking.join(30)
        took = time.monotonic() - started
        e = outcome[0]
        assert isinstance(e, SchemaRegistryError) and (e.status, e.error_code) == (422, 42201), e
        assert "schema.registry.compatibility.timeout.ms (1500 ms)" in e.message
        assert 1.4 < took < 4, took
        assert store.versions("u") == [1]
        # The versions-less compatibility test is bounded the same way.
        e = refusal(lambda: store.test_compatibility("u", union_of_records("B", 300), None))
        assert "compatibility.timeout.ms" in e.message
    finally:
        store.close()


def test_closing_the_store_stops_a_check_in_flight(log_: EmbeddedLog) -> None:
    store = SchemaRegistryStore(log_, RegistryLimits(check_timeout_ms=60_000))
    store.set_compatibility("FULL")
    store.register("u", union_of_records("A", 300))
    checking, outcome = _hostile_registration(store)
    checking.start()
    time.sleep(0.5)
    started = time.monotonic()
    store.close()
    checking.join(30)
    assert time.monotonic() - started < 1
    e = outcome[0]
    assert isinstance(e, SchemaRegistryError) and e.status == 503 and "worker is stopping" in e.message


def test_a_wide_incompatible_change_is_checked_fast_and_reported_briefly(log_: EmbeddedLog) -> None:
    """avro's checker is quadratic in a record's fields (and was the 17 s); the 409 lists a few."""
    store = SchemaRegistryStore(log_)
    try:
        store.set_compatibility("FULL")
        store.register("w", wide_record(9_000, "a"))
        started = time.monotonic()
        e = refusal(lambda: store.register("w", wide_record(9_000, "b")))
        # A bound on the order of magnitude (the quadratic check took 17 s), loose enough for a
        # loaded 2-core machine: about 1 s when quiet.
        assert time.monotonic() - started < 10
        assert e.status == 409 and "… and 17980 more" in e.message and len(e.message) < 10_000, e.message[-300:]
    finally:
        store.close()


# -- fuzzing the schema routes -----------------------------------------------------------------
NAMES = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.text(max_size=12),  # empty, unicode, control characters, dots, digits first
    st.sampled_from(["", "1x", "a.b", "a..b", ".x", "x.", "null", "int", "record", "é", "a b", "\n", "\x00"]),
)
PRIMITIVES = st.sampled_from(["null", "boolean", "int", "long", "float", "double", "bytes", "string"])


def _record(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    field = st.fixed_dictionaries(
        {"name": NAMES, "type": children}, optional={"default": st.none() | st.integers() | st.text(max_size=3)}
    )
    return st.fixed_dictionaries(
        {"type": st.just("record"), "name": NAMES, "fields": st.lists(field, max_size=4)},
        optional={"namespace": NAMES, "doc": st.text(max_size=5)},
    )


AVRO = st.recursive(
    PRIMITIVES | st.builds(lambda n, s: {"type": "enum", "name": n, "symbols": s}, NAMES, st.lists(NAMES, max_size=4)),
    lambda children: st.one_of(
        _record(children),
        st.builds(lambda c: {"type": "array", "items": c}, children),
        st.builds(lambda c: {"type": "map", "values": c}, children),
        st.lists(children, max_size=4),
        st.builds(lambda n, s: {"type": "fixed", "name": n, "size": s}, NAMES, st.integers(-2, 40)),
    ),
    max_leaves=12,
)
HOSTILE = st.one_of(
    st.integers(60, 3_000).map(nested_records),
    st.integers(9_990, 30_000).map(wide_record),
    st.integers(200, 100_000).map(lambda d: "[" * d + "]" * d),
    st.integers(1, 40).map(lambda n: union_of_records("Z", n)),
)
SCHEMAS = st.one_of(AVRO.map(json.dumps), HOSTILE, st.text(max_size=30))
ROUTES = st.sampled_from(
    [
        "/subjects/{}/versions",
        "/subjects/{}",
        "/compatibility/subjects/{}/versions/latest",
        "/compatibility/subjects/{}/versions",
    ]
)
FUZZ = settings(
    max_examples=examples(150), derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    api = Api(Path(tmp_path_factory.mktemp("registry-fuzz")))
    with api.client(headers=SR) as http:
        assert http.post("/subjects/known/versions", json={"schema": wide_record(3)}).status_code == 200
    yield api
    api.close()


def test_fuzzed_schemas_never_get_500_and_are_answered_in_bounded_time(api: Api) -> None:
    problems: list[str] = []
    with api.client(headers=SR) as http:

        @FUZZ
        @given(
            route=ROUTES, subject=st.sampled_from(["known", "fuzz"]) | NAMES, schema=SCHEMAS, normalize=st.booleans()
        )
        @example(route="/subjects/{}/versions", subject="fuzz", schema=nested_records(3_000), normalize=False)
        @example(route="/subjects/{}/versions", subject="fuzz", schema=wide_record(24_000), normalize=True)
        @example(
            route="/compatibility/subjects/{}/versions", subject="known", schema=nested_records(500), normalize=False
        )
        @example(  # a line break in a subject came back in the message (the ci profile found it)
            route="/compatibility/subjects/{}/versions", subject="\n", schema=union_of_records("Z", 2), normalize=False
        )
        def run(route: str, subject: str, schema: str, normalize: bool) -> None:
            path = route.format(quote(subject, safe="") or "%20")
            started = time.monotonic()
            r = http.post(path, json={"schema": schema}, params={"normalize": str(normalize).lower()})
            took = time.monotonic() - started
            what = f"POST {path[:60]} schema={schema[:80]!r}"
            if r.status_code not in (200, 404, 409, 413, 422):
                problems.append(f"{what} -> {r.status_code}: {r.text[:300]}")
            elif r.status_code != 200:
                body = r.json()
                text = body.get("message") if isinstance(body, dict) else None
                if not isinstance(text, str) or "\n" in text or len(text) > 2_000 or len(r.content) > 4_000:
                    problems.append(f"{what} -> {r.status_code} with an unbounded or multi-line error {r.text[:300]}")
            if took > 10:
                problems.append(f"{what} took {took:.1f}s")

        run()
    assert not problems, "\n".join(problems[:10])

"""Confluent's Schema Registry API on a running worker (transport=embedded), driven by clients
nobody here wrote: confluent-kafka's own SchemaRegistryClient and its AvroSerializer /
AvroDeserializer, plus raw HTTP for the status codes, media types and the worker's guards."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from cdc.log.kafka import KafkaLog
from cdc.log.schema_registry import open_schema_registry
from cdc.rest.app import create_app
from cdc.rest.resources.schema_registry import schema_registry_router
from tests.rest.conftest import Rest, make_worker
from tests.security.rest_rig import free_port
from tests.support.examples import examples
from tests.support.proc import CdcProcess, wait_for, write_props

SR = "application/vnd.schemaregistry.v1+json"
FUZZ_SETTINGS = settings(
    max_examples=examples(8), derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def record(fields: list[dict[str, Any]], name: str = "Order") -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "shop", "fields": fields})


ID = {"name": "id", "type": "int"}
NOTE = {"name": "note", "type": ["null", "string"], "default": None}


@pytest.fixture
def rest(tmp_path: Path) -> Iterator[Rest]:
    r = Rest(tmp_path)
    yield r
    r.close()


@pytest.fixture
def client(rest: Rest) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": rest.url})


def test_confluent_client_registers_looks_up_and_lists(rest: Rest, client: SchemaRegistryClient) -> None:
    v1 = Schema(record([ID]), "AVRO")
    schema_id = client.register_schema("orders-value", v1)
    assert client.register_schema("orders-value", v1) == schema_id
    # a fresh client (no cache): the same id again, and the same id under another subject
    fresh = SchemaRegistryClient({"url": rest.url})
    assert fresh.register_schema("orders-value", v1) == schema_id
    assert fresh.register_schema("refunds-value", v1) == schema_id
    assert json.loads(fresh.get_schema(schema_id).schema_str) == json.loads(v1.schema_str)
    assert fresh.get_subjects() == ["orders-value", "refunds-value"]
    assert fresh.get_versions("orders-value") == [1]
    found = fresh.lookup_schema("orders-value", v1)
    assert (found.schema_id, found.version, found.subject) == (schema_id, 1, "orders-value")
    v2 = Schema(record([ID, NOTE]), "AVRO")
    second = fresh.register_schema("orders-value", v2)
    latest = fresh.get_latest_version("orders-value")
    assert (latest.schema_id, latest.version) == (second, 2)
    assert json.loads(latest.schema.schema_str) == json.loads(v2.schema_str)
    assert fresh.get_version("orders-value", 1).schema_id == schema_id
    assert sorted(fresh.get_subjects_by_schema_id(schema_id)) == ["orders-value", "refunds-value"]
    assert {(v.subject, v.version) for v in fresh.get_schema_versions(schema_id)} == {
        ("orders-value", 1),
        ("refunds-value", 1),
    }
    assert fresh.get_schema_types() == ["AVRO"]
    # the same store the worker's converters use
    store = rest.worker.schema_registry()
    assert store is not None and store.versions("orders-value") == [1, 2]


def test_compatibility_config_and_refusals(client: SchemaRegistryClient) -> None:
    assert client.get_compatibility() == "BACKWARD"
    client.register_schema("orders-value", Schema(record([ID]), "AVRO"))
    evolved = Schema(record([ID, NOTE]), "AVRO")
    assert client.test_compatibility("orders-value", evolved) is True
    client.register_schema("orders-value", evolved)
    required = Schema(record([ID, NOTE, {"name": "warehouse", "type": "string"}]), "AVRO")
    assert client.test_compatibility("orders-value", required) is False
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("orders-value", required)
    assert e.value.http_status_code == 409 and e.value.error_code == 409
    assert '"orders-value"' in e.value.error_message and "'warehouse'" in e.value.error_message
    retyped = Schema(record([{"name": "id", "type": "string"}, NOTE]), "AVRO")
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("orders-value", retyped)
    assert e.value.http_status_code == 409 and "'id'" in e.value.error_message
    with pytest.raises(SchemaRegistryError) as e:
        client.get_compatibility("orders-value")
    assert e.value.error_code == 40408
    assert client.set_compatibility("orders-value", "NONE") == {"compatibility": "NONE"}
    assert client.get_compatibility("orders-value") == "NONE"
    assert client.register_schema("orders-value", retyped) > 0
    assert client.get_versions("orders-value") == [1, 2, 3]
    client.set_compatibility(level="FULL")
    assert client.get_compatibility() == "FULL"


def test_confluent_serializer_and_deserializer_round_trip(client: SchemaRegistryClient) -> None:
    schema = record([ID, NOTE, {"name": "amount", "type": "double"}])
    serializer = AvroSerializer(client, schema)
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": client._rest_client.base_urls[0]}))
    rng = random.Random(7)
    ctx = SerializationContext("orders", MessageField.VALUE)
    for _ in range(20):
        value = {"id": rng.randint(-(2**31), 2**31 - 1), "note": rng.choice([None, "x", "ü"]), "amount": rng.random()}
        data = serializer(value, ctx)
        assert data is not None and data[0] == 0
        assert deserializer(data, ctx) == value
    assert client.get_subjects() == ["orders-value"]


def test_rest_status_codes_bodies_and_media_types(rest: Rest) -> None:
    http = rest.http
    headers = {"Content-Type": SR, "Accept": SR}
    body = {"schema": record([ID])}
    r = http.post("/subjects/a%2Fb-value/versions", json=body, headers=headers)
    assert r.status_code == 200 and r.headers["content-type"].startswith(SR) and r.json() == {"id": 1}
    assert http.get("/subjects").json() == ["a/b-value"]
    got = http.get("/subjects/a%2Fb-value/versions/latest", headers={"Accept": SR})
    assert got.status_code == 200 and got.json()["version"] == 1 and got.json()["subject"] == "a/b-value"
    bare = http.get("/subjects/a%2Fb-value/versions/1/schema")
    assert json.loads(bare.text) == json.loads(body["schema"])
    assert json.loads(http.get("/schemas/ids/1/schema").text) == json.loads(body["schema"])
    assert http.get("/schemas/ids/1").json() == {
        "schema": json.dumps(json.loads(body["schema"]), separators=(",", ":"))
    }
    assert http.post("/subjects/a%2Fb-value", json=body, headers=headers).json()["id"] == 1

    def error(response: httpx.Response) -> tuple[int, int]:
        return response.status_code, response.json()["error_code"]

    assert error(http.get("/subjects/nope/versions")) == (404, 40401)
    assert error(http.get("/subjects/a%2Fb-value/versions/9")) == (404, 40402)
    assert error(http.get("/schemas/ids/42")) == (404, 40403)
    assert error(http.get("/schemas/ids/x")) == (404, 40403)
    assert error(http.post("/subjects/s/versions", json={"schema": "{"}, headers=headers)) == (422, 42201)
    assert error(http.post("/subjects/s/versions", json={"nothing": 1}, headers=headers)) == (422, 42201)
    assert error(http.get("/subjects/a%2Fb-value/versions/zero")) == (422, 42202)
    assert error(http.put("/config", json={"compatibility": "SIDEWAYS"}, headers=headers)) == (422, 42203)
    verbose = http.post(
        "/compatibility/subjects/a%2Fb-value/versions/latest?verbose=true",
        json={"schema": record([ID, {"name": "x", "type": "long"}])},
        headers=headers,
    )
    assert verbose.json()["is_compatible"] is False and any("'x'" in m for m in verbose.json()["messages"])
    assert http.get("/mode").json() == {"mode": "READWRITE"}
    assert http.get("/config?defaultToGlobal=true").json() == {"compatibilityLevel": "BACKWARD"}
    # deletes: soft, then permanent
    assert http.delete("/subjects/a%2Fb-value/versions/1").json() == 1
    assert error(http.get("/subjects/a%2Fb-value/versions")) == (404, 40401)
    assert http.get("/subjects/a%2Fb-value/versions?deleted=true").json() == [1]
    assert http.delete("/subjects/a%2Fb-value/versions/1?permanent=true").json() == 1
    assert http.get("/schemas/ids/1").status_code == 200  # ids stay readable: records may name them
    # Connect's own paths keep refusing Confluent's media type
    assert http.post("/connectors", content=b"{}", headers={"Content-Type": SR}).status_code == 415


@pytest.mark.integration
def test_registry_paths_sit_behind_the_workers_basic_auth(tmp_path: Path) -> None:
    creds = tmp_path / "credentials.properties"
    creds.write_text("alice=wonderland\n")
    r = Rest(tmp_path, **{"rest.basic.auth.credentials.file": str(creds)})
    try:
        assert r.http.get("/subjects").status_code == 401
        assert r.http.post("/subjects/s/versions", json={"schema": record([ID])}).status_code == 401
        assert r.http.get("/schemas/ids/1").status_code == 401
        with pytest.raises(SchemaRegistryError) as e:
            SchemaRegistryClient({"url": r.url}).get_subjects()
        assert e.value.http_status_code == 401
        authed = SchemaRegistryClient({"url": r.url, "basic.auth.user.info": "alice:wonderland"})
        assert authed.register_schema("s", Schema(record([ID]), "AVRO")) == 1
        assert authed.get_subjects() == ["s"]
        # a foreign Host (DNS rebinding) is refused on these paths too
        assert (
            r.http.get("/subjects", headers={"Host": "evil.example"}, auth=("alice", "wonderland")).status_code == 421
        )
    finally:
        r.close()


def test_a_kafka_worker_serves_no_registry(tmp_path: Path) -> None:
    """The registry is mounted only over the embedded log: with transport=kafka users point
    schema.registry.url at their own registry. (No broker needed: nothing connects.)"""
    kafka = KafkaLog("127.0.0.1:9")
    assert open_schema_registry(kafka) is None
    worker = make_worker(tmp_path)
    embedded, worker.log = worker.log, kafka
    try:
        assert worker.schema_registry() is None
        app = create_app(type("H", (), {"worker": worker})())
        paths = set(app.openapi()["paths"])
        assert "/connectors" in paths and not any(p.startswith(("/subjects", "/schemas", "/config")) for p in paths)
    finally:
        embedded.close()


def test_fuzzed_registry_requests_get_confluent_errors_never_a_server_error(rest: Rest) -> None:
    """schemathesis over the registry routes' own OpenAPI document (they are left out of the
    worker's /openapi.json, see install_schema_registry), positive and negative, derandomized:
    no 5xx, and every error is Confluent's `{"error_code": <status>xx, "message"}`."""
    store = rest.worker.schema_registry()
    assert store is not None
    store.register("existing-value", record([ID]))
    doc = FastAPI()
    doc.include_router(schema_registry_router(store))
    schema = schemathesis.openapi.from_dict(doc.openapi())
    problems: list[str] = []
    sent = 0

    def fuzz(operation: Any, mode: GenerationMode) -> None:
        @settings(
            max_examples=examples(8),
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def run(case: schemathesis.Case) -> None:
            nonlocal sent
            response = case.call(base_url=rest.url, timeout=60)
            sent += 1
            what = f"{mode.value} {case.method} {case.formatted_path} {case.body!r:.200}"
            if response.status_code >= 500:
                problems.append(f"{what} -> {response.status_code}: {response.text[:300]}")
            elif response.status_code >= 400:
                body = response.json()
                code = body.get("error_code") if isinstance(body, dict) else None
                if not (isinstance(code, int) and str(code).startswith(str(response.status_code))):
                    problems.append(f"{what} -> {response.status_code} with body {str(body)[:200]}")

        with contextlib.suppress(Unsatisfiable):  # nothing to make invalid (GET /mode in negative mode)
            run()

    for result in schema.get_all_operations():
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzz(result.ok(), mode)
    assert sent >= 200, sent
    assert not problems, "\n".join(problems[:20])


@pytest.mark.e2e
def test_cdc_standalone_serves_the_registry_and_keeps_it_across_restarts(tmp_path: Path) -> None:
    """The real CLI, as a user starts it: `cdc standalone` on the embedded transport serves the
    registry; after a restart the same ids name the same schemas (they live in cdc.db)."""
    port = free_port()
    props = write_props(
        tmp_path / "worker.properties",
        {"transport": "embedded", "state.dir": tmp_path / "state", "listeners": f"http://127.0.0.1:{port}"},
    )
    url = f"http://127.0.0.1:{port}"
    rng = random.Random(41)
    schemas = [record([ID, {"name": f"c{i}", "type": rng.choice(["int", "string", "double"])}]) for i in range(5)]

    def serving(proc: CdcProcess) -> bool:
        try:
            return httpx.get(url + "/subjects", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    proc = CdcProcess("standalone", str(props), log_path=tmp_path / "first.log")
    try:
        wait_for(lambda: serving(proc), 60, "the registry API", proc)
        client = SchemaRegistryClient({"url": url})
        client.set_compatibility(level="NONE")
        ids = {s: client.register_schema(f"t{i % 2}-value", Schema(s, "AVRO")) for i, s in enumerate(schemas)}
    finally:
        assert proc.terminate() == 0, proc.output()[-3000:]
    proc = CdcProcess("standalone", str(props), log_path=tmp_path / "second.log")
    try:
        wait_for(lambda: serving(proc), 60, "the registry API after a restart", proc)
        again = SchemaRegistryClient({"url": url})
        for text, schema_id in ids.items():
            assert json.loads(again.get_schema(schema_id).schema_str) == json.loads(text)
        assert again.get_subjects() == ["t0-value", "t1-value"]
        assert again.get_versions("t0-value") == [1, 2, 3] and again.get_compatibility() == "NONE"
    finally:
        assert proc.terminate() == 0, proc.output()[-3000:]

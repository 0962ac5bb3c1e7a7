"""EmbeddedSchemaRegistryClient (confluent-kafka's SchemaRegistryClient API in process) and the
worker's wiring of it into converters that take a registry (`use_registry`): a stub converter,
so the wiring is checked on its own, and Confluent's AvroConverter end to end (a source task's
records decoded by confluent-kafka's own AvroDeserializer through the worker's REST API)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc.api.data import SchemaAndValue
from cdc.api.storage import Converter
from cdc.log.base import TopicLog, TopicPartition, UnknownTopicError
from cdc.log.embedded import EmbeddedLog
from cdc.log.schema_registry import SchemaRegistryStore
from cdc.log.schema_registry_client import EmbeddedSchemaRegistryClient
from cdc.runtime.worker import Worker
from tests.rest.conftest import Rest, make_worker, wait_until


def record(fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": "R", "fields": fields})


ID = {"name": "id", "type": "int"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[EmbeddedSchemaRegistryClient]:
    log_ = EmbeddedLog(tmp_path / "state", synchronous="NORMAL")
    store = SchemaRegistryStore(log_)
    yield EmbeddedSchemaRegistryClient(store)
    store.close()
    log_.close()


def test_client_methods_return_confluent_types(client: EmbeddedSchemaRegistryClient) -> None:
    v1 = Schema(record([ID]), "AVRO")
    schema_id = client.register_schema("t-value", v1)
    assert isinstance(schema_id, int) and client.register_schema("t-value", v1) == schema_id
    got = client.get_schema(schema_id)
    assert isinstance(got, Schema) and json.loads(got.schema_str) == json.loads(v1.schema_str)
    assert got.schema_type == "AVRO"
    latest = client.get_latest_version("t-value")
    assert isinstance(latest, RegisteredSchema)
    assert (latest.schema_id, latest.subject, latest.version) == (schema_id, "t-value", 1)
    found = client.lookup_schema("t-value", v1)
    assert isinstance(found, RegisteredSchema) and (found.schema_id, found.version) == (schema_id, 1)
    v2 = Schema(record([ID, {"name": "n", "type": ["null", "long"], "default": None}]), "AVRO")
    assert client.test_compatibility("t-value", v2)
    second = client.register_schema_full_response("t-value", v2)
    assert (second.version, second.subject) == (2, "t-value")
    assert client.get_subjects() == ["t-value"] and client.get_versions("t-value") == [1, 2]
    assert client.get_versions("t-value", offset=1) == [2] and client.get_subjects(subject_prefix="x") == []
    assert client.get_version("t-value", 1).schema_id == schema_id
    assert client.set_compatibility("t-value", "NONE") == {"compatibility": "NONE"}
    assert client.get_compatibility("t-value") == "NONE"


def test_client_errors_are_confluent_kafkas(client: EmbeddedSchemaRegistryClient) -> None:
    with pytest.raises(SchemaRegistryError) as e:
        client.get_schema(404)
    assert (e.value.http_status_code, e.value.error_code) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as e:
        client.get_latest_version("missing")
    assert e.value.error_code == 40401
    with pytest.raises(SchemaRegistryError) as e:
        client.get_versions("missing")
    assert e.value.error_code == 40401
    client.register_schema("s", Schema(record([ID]), "AVRO"))
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("s", Schema(record([{"name": "id", "type": "string"}]), "AVRO"))
    assert e.value.http_status_code == 409 and '"s"' in e.value.error_message and "'id'" in e.value.error_message
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("s", Schema("{oops", "AVRO"))
    assert e.value.error_code == 42201
    # a delete through this client forgets its cached registration: registering again adds a version
    client.delete_subject("s")
    client.register_schema("s", Schema(record([ID]), "AVRO"))
    assert client.get_versions("s") == [2]


class RegistryStub(Converter):
    """A converter that takes a registry as the AvroConverter does (`use_registry`): writes the
    Confluent wire prefix (magic 0, the schema id) before the value as JSON."""

    def __init__(self) -> None:
        self.registry: Any = None
        self.configured_with_registry: bool | None = None

    def use_registry(self, registry: Any) -> None:
        self.registry = registry

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        self.configs = dict(configs)
        self.configured_with_registry = self.registry is not None

    def from_connect_data(self, topic: str, schema: Any, value: Any, headers: Any = None) -> bytes | None:
        if value is None:
            return None
        schema_id = self.registry.register_schema(f"{topic}-value", Schema(record([ID]), "AVRO"))
        return b"\0" + schema_id.to_bytes(4, "big") + json.dumps({"id": value.get("id")}).encode()

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        raise NotImplementedError


def written(log_: TopicLog, tp: TopicPartition) -> int:
    try:
        return log_.end_offsets([tp])[tp]
    except UnknownTopicError:
        return 0


def _worker(tmp_path: Path, **extra: str) -> Worker:
    worker = make_worker(tmp_path, **extra)
    worker.registry.add(RegistryStub, "1.0", "test")
    return worker


def test_the_worker_hands_its_registry_to_converters_that_take_one(tmp_path: Path) -> None:
    worker = _worker(tmp_path, **{"value.converter": "RegistryStub"})
    try:
        converter = worker._converter({}, "value.converter")
        assert isinstance(converter, RegistryStub) and converter.configured_with_registry
        assert isinstance(converter.registry, EmbeddedSchemaRegistryClient)
        assert converter.registry.store is worker.schema_registry()
        # a converter with its own schema.registry.url keeps it: no in-process registry
        own = worker._converter(
            {"value.converter": "RegistryStub", "value.converter.schema.registry.url": "http://sr:8081"},
            "value.converter",
        )
        assert isinstance(own, RegistryStub) and own.registry is None
        assert own.configs["schema.registry.url"] == "http://sr:8081"
        # converters without use_registry are left alone
        plain = worker._converter({"value.converter": "org.apache.kafka.connect.json.JsonConverter"}, "value.converter")
        assert not hasattr(plain, "registry")
    finally:
        worker.stop()


@pytest.mark.integration
def test_a_source_task_writes_through_the_stub_into_the_logs_registry(tmp_path: Path) -> None:
    rest = Rest(tmp_path)
    rest.worker.registry.add(RegistryStub, "1.0", "test")
    try:
        config = {
            "connector.class": "GeneratorSource",
            "topic": "gen",
            "count": "30",
            "value.converter": "RegistryStub",
        }
        assert rest.http.put("/connectors/g/config", json=config).status_code in (200, 201)
        log_ = rest.worker.log
        wait_until(lambda: written(log_, TopicPartition("gen", 0)) >= 30, 30, "records")
        reader = log_.reader()
        reader.assign({TopicPartition("gen", 0): 0})
        values = [r.value for r in reader.poll(100, 2.0)]
        reader.close()
        ids = {int.from_bytes(v[1:5], "big") for v in values if v}
        assert len(ids) == 1
        # any Confluent client reads the id the task wrote from the worker's REST API
        remote = SchemaRegistryClient({"url": rest.url})
        assert json.loads(remote.get_schema(ids.pop()).schema_str) == json.loads(record([ID]))
        assert remote.get_subjects() == ["gen-value"]
    finally:
        rest.close()


@pytest.mark.integration
def test_avro_converter_records_decode_with_confluents_deserializer(tmp_path: Path) -> None:
    """The other side's real converter (cdc.converters.avro), wired by the worker, read back by
    confluent-kafka's AvroDeserializer through the worker's registry API."""
    from cdc.converters.avro.converter import AvroConverter

    rest = Rest(tmp_path)
    rest.worker.registry.add(AvroConverter, "1.0", "test")
    try:
        config = {
            "connector.class": "GeneratorSource",
            "topic": "avro",
            "count": "25",
            "value.converter": "AvroConverter",
            "key.converter": "AvroConverter",
        }
        assert rest.http.put("/connectors/a/config", json=config).status_code in (200, 201)
        log_ = rest.worker.log
        tp = TopicPartition("avro", 0)
        wait_until(lambda: written(log_, tp) >= 25, 30, "records")
        reader = log_.reader()
        reader.assign({tp: 0})
        records = reader.poll(100, 2.0)
        reader.close()
        deserializer = AvroDeserializer(SchemaRegistryClient({"url": rest.url}))
        decoded = [deserializer(r.value, SerializationContext("avro", MessageField.VALUE)) for r in records if r.value]
        assert [(d["id"], d["name"]) for d in decoded] == [(n, f"n{n}") for n in range(25)]
        keys = [deserializer(r.key, SerializationContext("avro", MessageField.KEY)) for r in records]
        assert [k["id"] for k in keys] == list(range(25))
        assert sorted(SchemaRegistryClient({"url": rest.url}).get_subjects()) == ["avro-key", "avro-value"]
    finally:
        rest.close()


@pytest.mark.e2e
def test_a_task_in_its_own_process_registers_in_the_same_file(tmp_path: Path) -> None:
    """task.isolation=process: the task's process opens the registry of the same cdc.db, and the
    parent worker's REST API serves what it registered."""
    rest = Rest(tmp_path, **{"task.isolation": "process"})
    try:
        config = {
            "connector.class": "tests.runtime.connectors.GeneratorSource",  # children import plugins by name
            "topic": "iso",
            "count": "15",
            "value.converter": "io.confluent.connect.avro.AvroConverter",
        }
        assert rest.http.put("/connectors/iso/config", json=config).status_code in (200, 201)
        log_ = rest.worker.log
        tp = TopicPartition("iso", 0)
        wait_until(lambda: written(log_, tp) >= 15, 60, "records from the task process")
        reader = log_.reader()
        reader.assign({tp: 0})
        records = reader.poll(100, 2.0)
        reader.close()
        deserializer = AvroDeserializer(SchemaRegistryClient({"url": rest.url}))
        ctx = SerializationContext("iso", MessageField.VALUE)
        assert [deserializer(r.value, ctx)["id"] for r in records] == list(range(15))
    finally:
        rest.close()

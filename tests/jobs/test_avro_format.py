"""`format: avro` in a job (issue 20): the converters it sets, the registry it needs, the registry
check of `cdc validate`, and `cdc topics read` of Avro records (the real CLI, a real embedded log
and its own registry)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from cdc.api.data import Schema, SchemaBuilder, Struct
from cdc.converters.avro import AvroConverter
from cdc.jobs.load import validate_job_text
from cdc.log.base import TopicSpec
from cdc.log.embedded import EmbeddedLog
from cdc.log.schema_registry import open_schema_registry
from cdc.log.schema_registry_client import EmbeddedSchemaRegistryClient
from tests.support.proc import run_cdc

_JOB = """name: shop
source:
  connector.class: mysql
  database.hostname: 127.0.0.1
  database.port: {db_port}
  database.user: u
  database.password: p
  database.server.id: 5
  topic.prefix: shop
transport:
{transport}
sink:
  type: delta
  path: {lake}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _job(tmp_path: Path, transport: str) -> str:
    indented = "\n".join(f"  {line}" for line in transport.strip().splitlines())
    return _JOB.format(db_port=_free_port(), transport=indented, lake=tmp_path / "lake")


def test_format_avro_sets_both_converters_and_the_sink_decoding(tmp_path: Path) -> None:
    from cdc.jobs.formats import sink_source_options

    text = _job(tmp_path, f"state.dir: {tmp_path / 'state'}\nformat: avro")
    job, problems = validate_job_text(text, "job.yaml", check_connectivity=False, inspect_only=True)
    assert job is not None, problems
    props = job.worker_config()
    assert props["key.converter"] == props["value.converter"] == "io.confluent.connect.avro.AvroConverter"
    assert not any("schema.registry.url" in k for k in props)  # embedded: the worker's own registry
    assert sink_source_options(job.transport, job.source) == {"decode": "debezium-avro"}
    json_job, _ = validate_job_text(_job(tmp_path, f"state.dir: {tmp_path}"), "j.yaml", False, inspect_only=True)
    assert json_job is not None and "value.converter" not in json_job.worker_config()
    url = "http://registry:8081"
    kafka = f"type: kafka\nbootstrap.servers: 'localhost:9'\nformat: avro\nschema.registry.url: '{url}'"
    job, problems = validate_job_text(_job(tmp_path, kafka), "job.yaml", False, inspect_only=True)
    assert job is not None, problems
    assert job.worker_config()["value.converter.schema.registry.url"] == url
    assert sink_source_options(job.transport, job.source) == {"decode": "debezium-avro", "schema.registry.url": url}


@pytest.mark.e2e
def test_avro_on_kafka_without_a_registry_is_one_line_naming_the_key(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(_job(tmp_path, "type: kafka\nbootstrap.servers: 'localhost:9'\nformat: avro"))
    res = run_cdc("validate", str(job), "--offline", timeout=120)
    assert res.returncode != 0
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "schema.registry.url" in line]
    assert len(lines) == 1 and "transport['schema.registry.url']" in lines[0] and "format avro" in lines[0], res


@pytest.mark.parametrize("where", ["transport", "source"])
def test_validate_names_an_unreachable_registry_within_bounded_time(tmp_path: Path, where: str) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    if where == "transport":
        transport = f"state.dir: {tmp_path / 'state'}\nformat: avro\nschema.registry.url: '{url}'"
        text = _job(tmp_path, transport)
    else:  # Kafka Connect's own keys in the source: the job's format is Avro all the same
        text = _job(tmp_path, f"state.dir: {tmp_path / 'state'}").replace(
            "  topic.prefix: shop\n",
            "  topic.prefix: shop\n  value.converter: io.confluent.connect.avro.AvroConverter\n"
            f"  value.converter.schema.registry.url: '{url}'\n",
        )
    started = time.monotonic()
    _, problems = validate_job_text(text, "job.yaml", check_connectivity=True)
    took = time.monotonic() - started
    found = [p.render("job.yaml") for p in problems if "Schema Registry" in p.message]
    assert len(found) == 1 and f"cannot reach the Schema Registry at {url}" in found[0], problems
    assert "\n" not in found[0] and took < 30


def _write(state: Path, topic: str) -> tuple[list[dict], bytes]:
    """Avro records through the embedded log's registry (as the worker's converters write them)."""
    log_ = EmbeddedLog(str(state))
    store = open_schema_registry(log_)
    assert store is not None
    key_schema = SchemaBuilder.struct().name(f"{topic}.Key").field("id", Schema.INT32_SCHEMA).build()
    value_schema = (
        SchemaBuilder.struct()
        .name(f"{topic}.Value")
        .field("id", Schema.INT32_SCHEMA)
        .field("name", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    keys, values = AvroConverter(), AvroConverter()
    for conv, is_key in ((keys, True), (values, False)):
        conv.use_registry(EmbeddedSchemaRegistryClient(store))
        conv.configure({}, is_key)
    log_.create_topics([TopicSpec(topic, 1)])
    producer = log_.producer()
    rows = [{"id": i, "name": f"n{i}" if i % 2 else None} for i in range(3)]
    first = b""
    for row in rows:
        k = keys.from_connect_data(topic, key_schema, Struct(key_schema).put("id", row["id"]))
        v = values.from_connect_data(
            topic, value_schema, Struct(value_schema).put("id", row["id"]).put("name", row["name"])
        )
        first = first or v or b""
        producer.send(topic, v, key=k)
    assert producer.flush(30) == 0
    producer.close()
    store.close()
    log_.close()
    return rows, first


def _send(state: Path, topic: str, value: bytes) -> None:
    log_ = EmbeddedLog(str(state))
    producer = log_.producer()
    producer.send(topic, value, key=None)
    assert producer.flush(30) == 0
    producer.close()
    log_.close()


@pytest.mark.e2e
def test_topics_read_prints_avro_as_json_and_names_what_it_cannot_read(tmp_path: Path) -> None:
    state, topic = tmp_path / "state", "shop.db.items"
    rows, first = _write(state, topic)
    worker = tmp_path / "worker.properties"
    worker.write_text(
        f"transport=embedded\nstate.dir={state}\nkey.converter=io.confluent.connect.avro.AvroConverter\n"
        "value.converter=io.confluent.connect.avro.AvroConverter\n"
    )
    res = run_cdc("topics", "read", "--worker", str(worker), topic, "--from-beginning", timeout=120)
    assert res.returncode == 0, res.stderr
    printed = [json.loads(line) for line in res.stdout.splitlines()]
    assert [p["value"] for p in printed] == rows and [p["key"] for p in printed] == [{"id": r["id"]} for r in rows]

    unknown = first[:1] + (4242).to_bytes(4, "big") + first[5:]
    _send(state, topic, unknown)
    res = run_cdc("topics", "read", "--worker", str(worker), topic, "--from-beginning", timeout=120)
    assert res.returncode != 0 and len(res.stdout.splitlines()) == 3
    error = res.stderr.strip().splitlines()[-1]
    assert f"{topic}-0@3" in error and "schema id 4242 is unknown" in error, res.stderr

    json_state = tmp_path / "other"
    _write(json_state, topic)
    _send(json_state, topic, b'{"id": 1}')
    worker.write_text(worker.read_text().replace(str(state), str(json_state)))
    res = run_cdc("topics", "read", "--worker", str(worker), topic, "--from-beginning", timeout=120)
    error = res.stderr.strip().splitlines()[-1]
    assert res.returncode != 0 and f"{topic}-0@3" in error and "not Confluent Avro" in error, res.stderr
    assert "7b 22 69 64" in error  # the first bytes, in hex

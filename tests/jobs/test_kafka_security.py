"""A job on a secured Kafka: the transport's security settings reach every client the job opens."""

from __future__ import annotations

from pathlib import Path

from cdc.jobs.run import JobRunner
from cdc.jobs.spec import JobSpec
from cdc.runtime.worker_config import WorkerConfig
from tests.jobs.test_validate import GOOD, one_error

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="app" password="pw";'
TRANSPORT = {
    "type": "kafka",
    "bootstrap.servers": "broker:9093",
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "PLAIN",
    "sasl.jaas.config": JAAS,
    "kafka": {"client.rack": "r1"},
}


def _job(**source: str) -> JobSpec:
    src = {"connector.class": "mysql", "topic.prefix": "shop", **source}
    return JobSpec("shop", src, [], TRANSPORT, {"type": "delta", "path": "lake"}, {})


def test_worker_source_and_spark_clients_get_the_settings() -> None:
    job = _job()
    worker = WorkerConfig(job.worker_config())
    common = worker.kafka_common()
    assert common["security.protocol"] == "sasl_ssl" and common["sasl.mechanisms"] == "PLAIN"
    assert common["sasl.username"] == "app" and common["sasl.password"] == "pw" and common["client.rack"] == "r1"
    source = JobRunner(job)._source()  # the Spark source's options
    assert source["kafka.sasl.username"] == "app" and source["kafka.security.protocol"] == "sasl_ssl"
    assert source["kafka.client.rack"] == "r1"


def test_debezium_kafka_schema_history_on_the_same_brokers_gets_them_too() -> None:
    history = {
        "schema.history.internal": "io.debezium.storage.kafka.history.KafkaSchemaHistory",
        "schema.history.internal.kafka.topic": "schema-changes.shop",
        "schema.history.internal.kafka.bootstrap.servers": "broker:9093",
    }
    config = _job(**history).connector_config()
    for role in ("producer", "consumer"):
        assert config[f"schema.history.internal.{role}.sasl.jaas.config"] == JAAS
        assert config[f"schema.history.internal.{role}.security.protocol"] == "SASL_SSL"
    # Settings the user gave for the history's clients are theirs; other brokers get nothing.
    own = _job(**history, **{"schema.history.internal.producer.security.protocol": "SSL"}).connector_config()
    assert own["schema.history.internal.producer.security.protocol"] == "SSL"
    assert "schema.history.internal.producer.sasl.jaas.config" not in own
    elsewhere = {**history, "schema.history.internal.kafka.bootstrap.servers": "other:9092"}
    assert not any(k.startswith("schema.history.internal.producer.") for k in _job(**elsewhere).connector_config())


def test_validate_names_a_truststore_librdkafka_cannot_read(tmp_path: Path) -> None:
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    text = GOOD.replace(
        "type: embedded",
        f"type: kafka\n  bootstrap.servers: broker:9093\n  security.protocol: SSL\n  ssl.truststore.location: {jks}",
    )
    line = one_error(tmp_path, text, "--offline")
    assert "transport['ssl.truststore.location']: librdkafka reads CA certificates" in line
    assert "ssl.truststore.type=PEM" in line


def test_the_end_offset_probe_is_on_for_kafka_unless_the_transport_turns_it_off() -> None:
    """probe.end.offsets: Tansu's short high watermark needs the probe (the default); Apache
    Kafka's is exact, and `false` spares a fetch per trigger (issue 40)."""
    assert JobRunner(_job())._source()["probeEndOffsets"] == "true"
    off = JobSpec("shop", {"connector.class": "mysql", "topic.prefix": "shop"}, [],
                  {**TRANSPORT, "probe.end.offsets": False}, {"type": "delta", "path": "lake"}, {})  # fmt: skip
    assert JobRunner(off)._source()["probeEndOffsets"] == "false"
    assert "probe.end.offsets" not in off.worker_config()  # not a client setting: librdkafka would refuse it

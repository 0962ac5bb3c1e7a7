"""A worker's Kafka client settings under Kafka Connect's names reach every client, translated."""

from __future__ import annotations

import pytest

from cdc.log.base import LogError, TopicSpec
from cdc.runtime.transport import open_log
from cdc.runtime.worker_config import WorkerConfig
from tests.log import contract


def test_worker_security_protocol_reaches_the_clients(tansu) -> None:
    # Tansu listens for PLAINTEXT only: a client that obeys security.protocol=SSL cannot talk to it.
    # (The setting used to be ignored, so a worker meant for a TLS cluster spoke plaintext.)
    config = WorkerConfig({"transport": "kafka", "bootstrap.servers": tansu.bootstrap, "security.protocol": "SSL"})
    log_ = open_log(config)
    try:
        with pytest.raises(LogError, match=r"over SSL within"):
            log_.probe(3)
    finally:
        log_.close()


def test_java_named_producer_settings_are_translated(tansu) -> None:
    # librdkafka has no max.request.size (its name is message.max.bytes) and refused to start.
    config = WorkerConfig(
        {
            "transport": "kafka",
            "bootstrap.servers": tansu.bootstrap,
            "security.protocol": "PLAINTEXT",
            "producer.max.request.size": "2000000",
            "producer.key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
        }
    )
    log_ = open_log(config)
    topic = contract.unique("java-names")
    try:
        log_.create_topics([TopicSpec(topic, 1)])
        producer = log_.producer()
        producer.send(topic, b"v" * 1_500_000, key=b"k")
        assert producer.flush(30) == 0
        producer.close()
    finally:
        log_.close()

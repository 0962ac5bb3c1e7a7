"""Build the worker's topic log and stores from `transport` and the storage keys."""

from __future__ import annotations

import base64
import hashlib
import logging
import os

from cdc.log.base import TopicLog
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import FileOffsetBackingStore, OffsetBackingStore, TopicOffsetBackingStore
from cdc.storage.status import StatusBackingStore

log = logging.getLogger(__name__)


def open_log(config: WorkerConfig) -> TopicLog:
    if config.transport == "kafka":
        from cdc.log.kafka import KafkaLog

        return KafkaLog(
            ",".join(config.get("bootstrap.servers")),
            common=config.kafka_common(),
            producer=config.client_configs("producer."),
            consumer=config.client_configs("consumer."),
            admin=config.client_configs("admin."),
        )
    from cdc.log.embedded import EmbeddedLog

    return EmbeddedLog(
        config.get("state.dir"),
        synchronous=config.get("embedded.synchronous"),
        default_partitions=config.get("num.partitions"),
    )


def open_offset_store(config: WorkerConfig, log_: TopicLog, distributed: bool = False) -> OffsetBackingStore:
    """Embedded: the offsets topic in the same SQLite file (one transaction with the records).
    Kafka: `offset.storage.file.filename` if set (Kafka standalone style), else the offsets topic.
    Distributed workers always share the offsets topic."""
    filename = None if distributed else config.get("offset.storage.file.filename")
    if config.transport == "embedded":
        if filename:
            log.warning(
                "offset.storage.file.filename is ignored with transport=embedded: offsets are kept in %s/cdc.db "
                "and commit together with the records",
                config.get("state.dir"),
            )
    elif filename:
        return FileOffsetBackingStore(filename)
    return TopicOffsetBackingStore(
        log_,
        config.get("offset.storage.topic"),
        config.get("offset.storage.partitions"),
        config.get("offset.storage.replication.factor"),
    )


def open_status_store(config: WorkerConfig, log_: TopicLog) -> StatusBackingStore:
    return StatusBackingStore(
        log_,
        config.get("status.storage.topic"),
        config.get("status.storage.partitions"),
        config.get("status.storage.replication.factor"),
    )


def cluster_id(log_: TopicLog) -> str:
    """`kafka_cluster_id` for `GET /`: the broker's cluster id, or a stable id of the embedded log."""
    admin = getattr(log_, "_admin", None)
    if admin is not None:
        try:
            return str(admin.list_topics(timeout=10).cluster_id or "")
        except Exception as e:  # the API still starts; only the id is missing
            log.warning("could not read the Kafka cluster id: %s", e)
            return ""
    # Named by a digest of its location, not the location: GET / answers any caller.
    location = os.path.realpath(str(getattr(log_, "path", "")))
    return "embedded-" + base64.urlsafe_b64encode(hashlib.sha256(location.encode()).digest()[:16]).decode().rstrip("=")

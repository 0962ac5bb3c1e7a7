"""Schema history (`schema.history.internal.*`): every DDL with the binlog position it was read at.

Decoding never depends on it (TABLE_MAP metadata carries each transaction's columns); the
history is kept for Debezium tooling and for auditing what changed when. Records use
Debezium's HistoryRecord shape: `source`, `position`, `ts_ms`, `databaseName`,
`schemaName`, `ddl`, `tableChanges`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cdc.api import ConnectException
from cdc.api.history import HistoryLog, history_log
from cdc.api.kafka_clients import librdkafka_config
from cdc_debezium.history_metrics import SchemaHistoryMetrics
from cdc_mysql import config as cfg

log = logging.getLogger(__name__)


class SchemaHistory(ABC):
    @abstractmethod
    def record(self, record: dict[str, Any]) -> None: ...

    def records(self) -> list[dict[str, Any]]:
        return []

    def exists(self) -> bool:
        return bool(self.records())

    def close(self) -> None:
        pass


class MemorySchemaHistory(SchemaHistory):
    def __init__(self) -> None:
        self._records: list[dict[str, Any]] = []

    def record(self, record: dict[str, Any]) -> None:
        self._records.append(record)

    def records(self) -> list[dict[str, Any]]:
        return list(self._records)


class FileSchemaHistory(SchemaHistory):
    """One JSON document per line, flushed and fsynced per DDL (DDL is rare)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def record(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for n, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ConnectException(
                        f"Schema history file {self.path} line {n} is not valid JSON ({e}); "
                        "restore the file or set snapshot.mode=recovery to rebuild it"
                    ) from e
        return out


class MeteredSchemaHistory(SchemaHistory):
    """A history whose use Debezium's schema-history metrics count (cdc_debezium.history_metrics), as
    Debezium's AbstractSchemaHistory tells its listener: each record written is an applied change,
    each record read back at a restart (`recover`) a recovered one."""

    def __init__(self, inner: SchemaHistory, metrics: SchemaHistoryMetrics) -> None:
        self.inner = inner
        self.metrics = metrics
        metrics.started()

    def record(self, record: dict[str, Any]) -> None:
        self.inner.record(record)
        self.metrics.on_change_applied(record)

    def records(self) -> list[dict[str, Any]]:
        return self.inner.records()

    def exists(self) -> bool:
        return self.inner.exists()

    def recover(self) -> list[dict[str, Any]]:
        """The records, read as a restart's recovery: RECOVERING meanwhile, each one counted."""
        self.metrics.recovery_started()
        try:
            records = self.inner.records()
            for record in records:
                self.metrics.on_change_from_history(record)
        finally:
            self.metrics.recovery_stopped()
        return records

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.metrics.stopped()


def _ensure_history_topic(topic: str, admin_conf: dict[str, str], timeout: float = 15.0) -> None:
    """Create the history topic as Debezium does: one partition, kept forever, never compacted
    (brokers often run with auto.create.topics.enable=false). Existing topics are left alone."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(admin_conf)
    try:
        if topic in admin.list_topics(timeout=timeout).topics:
            return
        config = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
        future = admin.create_topics([NewTopic(topic, 1, -1, config=config)], request_timeout=timeout)[topic]
        future.result(timeout)
        log.info("Created the schema history topic %s (1 partition, infinite retention)", topic)
    except (KafkaException, TimeoutError) as e:
        err = e.args[0] if e.args else "timed out"
        if getattr(err, "code", lambda: None)() == KafkaError.TOPIC_ALREADY_EXISTS:
            return
        raise ConnectException(
            f"Could not create the schema history topic {topic}: {err}; create it (1 partition, retention.ms=-1) "
            "or check schema.history.internal.kafka.bootstrap.servers"
        ) from None


class KafkaSchemaHistory(SchemaHistory):
    """Writes to a one-partition Kafka topic with the connector's own client, as Debezium does."""

    def __init__(
        self,
        topic: str,
        bootstrap: str,
        producer: Mapping[str, str] | None = None,
        consumer: Mapping[str, str] | None = None,
    ) -> None:
        """`producer`/`consumer`: Debezium's schema.history.internal.producer.* / .consumer.* client
        settings (Java or librdkafka names); the topic is checked and created with the consumer's."""
        from confluent_kafka import Producer

        self.topic = topic
        admin = librdkafka_config(consumer or producer or {}, f"{cfg.HISTORY_PREFIX}.consumer.")
        self._consumer_conf = {**admin, "bootstrap.servers": bootstrap}
        _ensure_history_topic(topic, {**admin, "bootstrap.servers": bootstrap})
        producer_conf = librdkafka_config(producer or {}, f"{cfg.HISTORY_PREFIX}.producer.")
        self._producer = Producer({**producer_conf, "bootstrap.servers": bootstrap, "enable.idempotence": True})

    def record(self, record: dict[str, Any]) -> None:
        errors: list[Any] = []
        self._producer.produce(
            self.topic,
            json.dumps(record, separators=(",", ":"), default=str).encode(),
            partition=0,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
        if self._producer.flush(30) or errors:
            raise ConnectException(
                f"Could not write the schema history record to Kafka topic {self.topic}: {errors or 'timeout'}; "
                "check schema.history.internal.kafka.bootstrap.servers"
            )

    def records(self, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """Every record of the topic's one partition, from its start to the end it has now, as
        Debezium's KafkaSchemaHistory.recoverRecords reads them at a restart (with a consumer of no
        group: nothing is committed). A read that does not reach the end within `timeout_s` raises."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

        consumer = Consumer(
            {**self._consumer_conf, "group.id": f"cdc-history-{self.topic}", "enable.auto.commit": False,
             "enable.partition.eof": True}
        )  # fmt: skip
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=timeout_s)
            if high <= low:
                return []
            consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
            out: list[dict[str, Any]] = []
            deadline = time.monotonic() + timeout_s
            at = low
            while at < high:
                if time.monotonic() > deadline:
                    raise ConnectException(
                        f"Reading the schema history topic {self.topic} stopped at offset {at} of {high} after "
                        f"{timeout_s:.0f} s; check schema.history.internal.kafka.bootstrap.servers"
                    )
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(msg.error())
                at = msg.offset() + 1
                try:
                    out.append(json.loads(msg.value()))
                except (TypeError, json.JSONDecodeError) as e:
                    raise ConnectException(
                        f"Schema history topic {self.topic} offset {msg.offset()} is not a JSON record ({e}); "
                        "set snapshot.mode=recovery to rebuild the history"
                    ) from None
            return out
        except KafkaException as e:
            raise ConnectException(f"Could not read the schema history topic {self.topic}: {e}") from e
        finally:
            consumer.close()

    def close(self) -> None:
        self._producer.flush(10)


class LogSchemaHistory(SchemaHistory):
    """The history as a topic of the worker's own log (`<state.dir>/cdc.db` on the embedded transport)."""

    def __init__(self, log_: HistoryLog) -> None:
        self.log = log_

    def record(self, record: dict[str, Any]) -> None:
        try:
            self.log.append(json.dumps(record, separators=(",", ":"), default=str).encode())
        except Exception as e:
            raise ConnectException(
                f"Could not write the schema history record to topic {self.log.topic} of the worker's log: {e}"
            ) from e

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(value) for value in self.log.read_all()]


def history_topic(c: cfg.MySqlConnectorConfig) -> str:
    """The history topic in the worker's log: schema.history.internal.kafka.topic, else schema-changes.<prefix>."""
    return c.get(cfg.HISTORY_KAFKA_TOPIC) or f"schema-changes.{c.topic_prefix}"


def open_history(c: cfg.MySqlConnectorConfig, context: Any = None) -> SchemaHistory:
    """The configured store; with no file named, the worker's own log when the runtime offers it."""
    if c.history_class == cfg.KAFKA_HISTORY:
        return KafkaSchemaHistory(
            c.get(cfg.HISTORY_KAFKA_TOPIC),
            c.get(cfg.HISTORY_KAFKA_BOOTSTRAP),
            {k: str(v) for k, v in c.originals_with_prefix(f"{cfg.HISTORY_PREFIX}.producer.").items()},
            {k: str(v) for k, v in c.originals_with_prefix(f"{cfg.HISTORY_PREFIX}.consumer.").items()},
        )
    if c.history_class == cfg.FILE_HISTORY and c.history_file:
        return FileSchemaHistory(c.history_file)
    if c.history_class in (cfg.FILE_HISTORY, cfg.EMBEDDED_HISTORY):
        topic = history_topic(c)
        log_ = history_log(context, topic) if context is not None else None
        if log_ is not None:
            log.info("Schema history kept in topic %s of the worker's log", topic)
            return LogSchemaHistory(log_)
        if c.history_file:
            return FileSchemaHistory(c.history_file)
    if c.history_class != cfg.MEMORY_HISTORY:
        log.warning(
            "No %s set and the runtime offers no log for it: the schema history is kept in memory only. "
            "Decoding does not need it (binlog_row_metadata=FULL), but set it to keep an audit trail of DDL",
            cfg.HISTORY_FILE,
        )
    return MemorySchemaHistory()

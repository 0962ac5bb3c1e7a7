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
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from cdc.api import ConnectException
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


class KafkaSchemaHistory(SchemaHistory):
    """Writes to a one-partition Kafka topic with the connector's own client, as Debezium does."""

    def __init__(self, topic: str, bootstrap: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self._producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})

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

    def close(self) -> None:
        self._producer.flush(10)


def open_history(c: cfg.MySqlConnectorConfig) -> SchemaHistory:
    if c.history_class == cfg.KAFKA_HISTORY:
        return KafkaSchemaHistory(c.get(cfg.HISTORY_KAFKA_TOPIC), c.get(cfg.HISTORY_KAFKA_BOOTSTRAP))
    if c.history_class in (cfg.FILE_HISTORY, cfg.EMBEDDED_HISTORY) and c.history_file:
        return FileSchemaHistory(c.history_file)
    if c.history_class != cfg.MEMORY_HISTORY:
        log.warning(
            "No %s set: the schema history is kept in memory only. Decoding does not need it "
            "(binlog_row_metadata=FULL), but set it to keep an audit trail of DDL",
            cfg.HISTORY_FILE,
        )
    return MemorySchemaHistory()

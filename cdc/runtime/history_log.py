"""TopicHistoryLog: `cdc.api.history.HistoryLog` over the worker's TopicLog (embedded SQLite or Kafka)."""

from __future__ import annotations

from cdc.log.base import LogError, LogRecord, TopicLog, TopicPartition, TopicSpec

# Kept forever, like Debezium's schema history topic (retention.ms=-1, never compacted).
_SPEC_CONFIG = {"cleanup.policy": "delete", "retention.ms": "-1"}


class TopicHistoryLog:
    """Appends with a short-lived producer (history records are rare) and waits for durability."""

    def __init__(self, log_: TopicLog, topic: str, replication_factor: int = -1, timeout_s: float = 30.0) -> None:
        self.log = log_
        self._topic = topic
        self.timeout_s = timeout_s
        desc = log_.ensure_topic(TopicSpec(topic, 1, replication_factor, _SPEC_CONFIG))
        if desc.partitions != 1:
            raise LogError(
                f"History topic {topic!r} has {desc.partitions} partitions; it needs exactly 1 to keep DDL in order. "
                "Delete it or name another topic"
            )

    @property
    def topic(self) -> str:
        return self._topic

    def append(self, value: bytes) -> None:
        errors: list[Exception] = []

        def on_delivery(_stored: LogRecord | None, error: Exception | None) -> None:
            if error is not None:
                errors.append(error)

        producer = self.log.producer()
        try:
            producer.send(self._topic, value, partition=0, on_delivery=on_delivery)
            remaining = producer.flush(self.timeout_s)
        finally:
            producer.close()
        if remaining or errors:
            raise LogError(f"Could not append to history topic {self._topic!r}: {errors[0] if errors else 'timed out'}")

    def read_all(self) -> list[bytes]:
        tp = TopicPartition(self._topic, 0)
        reader = self.log.reader()
        try:
            reader.assign({tp: self.log.beginning_offsets([tp])[tp]})
            return [r.value for r in reader.read_to_end([tp], self.log) if r.value is not None]
        finally:
            reader.close()

"""TopicSignalLog: `cdc.api.signals.SignalLog` over the worker's TopicLog (embedded SQLite or Kafka).

What Debezium's KafkaSignalChannel does with its own KafkaConsumer (partition 0 of
`signal.kafka.topic`, a consumer group, earliest, committed as read), done with the
worker's log clients, so a connector plugin reads signals without a log client of its own.
"""

from __future__ import annotations

import logging

from cdc.log.base import GroupConsumer, LogError, LogRecord, TopicLog, TopicPartition, TopicSpec

log = logging.getLogger(__name__)


class TopicSignalLog:
    """Reads partition 0 of the signal topic under a consumer group; commits after every poll."""

    def __init__(self, log_: TopicLog, topic: str, group_id: str, replication_factor: int = -1) -> None:
        self.log = log_
        self._topic = topic
        self._group = group_id
        log_.ensure_topic(TopicSpec(topic, 1, replication_factor))
        self._consumer: GroupConsumer = log_.group_consumer(group_id, [topic], **{"auto.offset.reset": "earliest"})

    @property
    def topic(self) -> str:
        return self._topic

    def poll(self) -> list[tuple[bytes | None, bytes | None]]:
        records: list[LogRecord] = self._consumer.poll(100, timeout=0.0)
        ours = [r for r in records if r.partition == 0]
        if records:
            ends: dict[TopicPartition, int] = {}
            for r in records:
                tp = TopicPartition(r.topic, r.partition)
                ends[tp] = max(ends.get(tp, 0), r.offset + 1)
            self._consumer.commit(ends)
        return [(r.key, r.value) for r in ours]

    def send(self, key: bytes | None, value: bytes) -> None:
        errors: list[Exception] = []

        def on_delivery(_stored: LogRecord | None, error: Exception | None) -> None:
            if error is not None:
                errors.append(error)

        producer = self.log.producer()
        try:
            producer.send(self._topic, value, key=key, partition=0, on_delivery=on_delivery)
            remaining = producer.flush(30.0)
        finally:
            producer.close()
        if remaining or errors:
            raise LogError(f"Could not write to signal topic {self._topic!r}: {errors[0] if errors else 'timed out'}")

    def close(self) -> None:
        try:
            self._consumer.close()
        except Exception as e:  # closing after the log closed: nothing left to release
            log.debug("closing the signal consumer of %s: %s", self._topic, e)

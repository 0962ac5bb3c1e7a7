"""Sink connectors and tasks (Kafka Connect's `sink` package)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from cdc.api.connector import Connector, Task
from cdc.api.metrics import TaskMetrics
from cdc.api.records import SinkRecord


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ErrantRecordReporter(Protocol):
    def report(self, record: SinkRecord, error: Exception) -> None: ...


class SinkTaskContext(Protocol):
    def configs(self) -> dict[str, str]: ...

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind or skip: the next records read for these partitions start at these offsets."""

    def timeout(self, timeout_ms: int) -> None:
        """After a RetriableException from put, wait this long before redelivering."""

    def assignment(self) -> set[TopicPartition]: ...

    def pause(self, *partitions: TopicPartition) -> None: ...

    def resume(self, *partitions: TopicPartition) -> None: ...

    def request_commit(self) -> None: ...

    def errant_record_reporter(self) -> ErrantRecordReporter | None: ...

    def metrics(self) -> TaskMetrics:
        """Where the task reports its metrics; plugins use `TaskMetrics.of(context)`, which tolerates its absence."""
        ...


class SinkTask(Task):
    """Writes records to an external system.

    The runtime commits consumed offsets only for what `pre_commit` returns, so a task
    that buffers must return the offsets of what it has durably written.
    """

    TOPICS_CONFIG = "topics"
    TOPICS_REGEX_CONFIG = "topics.regex"

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    @abstractmethod
    def put(self, records: list[SinkRecord]) -> None: ...

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything passed to `put` durable."""

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Offsets safe to commit (next offset to read); default: flush, then all of them."""
        self.flush(current_offsets)
        return dict(current_offsets)

    def open(self, partitions: list[TopicPartition]) -> None:
        pass

    def close(self, partitions: list[TopicPartition]) -> None:
        pass


class SinkConnector(Connector):
    TOPICS_CONFIG = "topics"

    def alter_offsets(self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, Any]) -> bool:
        return False

"""Sink connectors and tasks (Kafka Connect's `sink` package).

A sink task receives batches of `SinkRecord`s read from the log by the runtime's consumer
group (`connect-<connector>`) and writes them to an external system. The runtime commits the
group's offsets only for what the task says is durable (`pre_commit`), so a restart redelivers
everything after it: sinks see each record at least once and should write idempotently.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from cdc.api.connector import Connector, Task
from cdc.api.metrics import TaskMetrics
from cdc.api.records import SinkRecord


class TopicPartition(NamedTuple):
    """One partition of a topic in the log; the key of a sink task's offsets and assignment."""

    topic: str
    partition: int


class ErrantRecordReporter(Protocol):
    """Sends a record the task cannot write to the dead letter queue (KIP-610's ErrantRecordReporter)."""

    def report(self, record: SinkRecord, error: Exception) -> None:
        """Report `record` as failed with `error`; the task then carries on with the next records."""
        ...


class SinkTaskContext(Protocol):
    """What a sink task may ask of the runtime (Kafka Connect's SinkTaskContext).

    Handed to `SinkTask.initialize` before `start`. Call its methods from the task's own thread
    (inside `start`, `put`, `open`, `close`, `flush` or `pre_commit`).
    """

    def configs(self) -> dict[str, str]:
        """A copy of the task's config (the dict `start` received)."""
        ...

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind or skip: the next records read for these partitions start at these offsets.

        For sinks that store their position in the target: call it from `open` with the offsets
        read there. Applied once the batch being delivered has been put.
        """

    def timeout(self, timeout_ms: int) -> None:
        """After a RetriableException from put, wait this long before redelivering (default one second)."""

    def assignment(self) -> set[TopicPartition]:
        """The partitions currently assigned to this task."""
        ...

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop reading these partitions until `resume` (for example while the target is busy with them)."""
        ...

    def resume(self, *partitions: TopicPartition) -> None:
        """Read these paused partitions again."""
        ...

    def request_commit(self) -> None:
        """Ask for an offset commit (`pre_commit`) after the current `put`, before the interval is due."""
        ...

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """The dead letter queue reporter, or None when there is none (always None in this runtime).

        A task that cannot write a record either raises (the task fails) or handles the record
        itself; `errors.deadletterqueue.topic.name` catches only converter and SMT failures here.
        """
        ...

    def metrics(self) -> TaskMetrics:
        """Where the task reports its metrics; plugins use `TaskMetrics.of(context)`, which tolerates its absence."""
        ...


class SinkTask(Task):
    """Writes records to an external system (Kafka Connect's SinkTask).

    The runtime commits consumed offsets only for what `pre_commit` returns, so a task
    that buffers must return the offsets of what it has durably written.

    What the runtime guarantees (cdc/runtime/sink_task.py): every call (`initialize`, `start`,
    `open`, `put`, `flush`/`pre_commit`, `close`, `stop`) runs on the task's own thread, one at a
    time. The order is `start`, `open(assigned partitions)`, then `put` batches in log order per
    partition, with `pre_commit` every `offset.flush.interval.ms` (or on `request_commit`);
    on a rebalance `pre_commit` and `close` for the revoked partitions and `open` for the new
    ones; at shutdown a last `pre_commit`, `close` of every partition read from, and `stop`
    (so a sink's `stop`, unlike a source's, comes on the task's thread, after the final
    `close`). Nothing is delivered or committed while the connector is paused.

    What the task must do: write (or buffer) in `put`, make it durable by the time
    `flush`/`pre_commit` returns, and write idempotently, since records after the last
    committed offset are delivered again after a restart or failure.
    """

    TOPICS_CONFIG = "topics"
    TOPICS_REGEX_CONFIG = "topics.regex"

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        """Receive the context before `start`; overrides must keep `self.context` set."""
        self.context = context

    @abstractmethod
    def put(self, records: list[SinkRecord]) -> None:
        """Write (or buffer) a batch of records, already converted and transformed.

        The batch is never empty here (Kafka also calls put with none; do not use it as a timer)
        and holds at most `consumer.max.poll.records` records. Raise RetriableException to have the
        same batch delivered again after `context.timeout()`; any other exception fails the task.
        """

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything passed to `put` durable.

        Called by the default `pre_commit`; `current_offsets` holds, per partition, the offset
        after the last record delivered (the next one to read).
        """

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Offsets safe to commit (next offset to read); default: flush, then all of them.

        Override when writes become durable later than `put` (for example on a batch interval):
        return, per partition, the offset after the last durable record, or leave a partition out
        to commit nothing for it. Offsets of partitions no longer assigned are not committed.
        """
        self.flush(current_offsets)
        return dict(current_offsets)

    def open(self, partitions: list[TopicPartition]) -> None:
        """These partitions are now assigned to the task (at start and after a rebalance).

        Open per-partition writers here; a sink that keeps its position in the target reads it
        and calls `context.offset(...)`.
        """

    def close(self, partitions: list[TopicPartition]) -> None:
        """These partitions are no longer this task's (rebalance or shutdown), after their last `pre_commit`.

        Close their writers and drop buffered data of them; another task may now write them.
        """


class SinkConnector(Connector):
    """A connector whose tasks are `SinkTask`s (Kafka Connect's SinkConnector).

    The runtime validates that exactly one of `topics` and `topics.regex` is set and
    subscribes the tasks' consumer group to them; the connector usually copies its config to
    each task config.
    """

    TOPICS_CONFIG = "topics"

    def alter_offsets(self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, Any]) -> bool:
        """Return True if this connector accepts an external change of its consumed offsets (KIP-875).

        This runtime does not call it yet: `PATCH`/`DELETE /connectors/{name}/offsets` change the
        committed offsets of a stopped connector's group directly.
        """
        return False

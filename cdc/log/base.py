"""The topic log: one interface over Kafka and the embedded SQLite log.

Everything above this layer (offset/status stores, task runners, the Spark source, the
CLI) talks to topics only through these types, so a job moves between the embedded
default and Kafka by changing `transport`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# How long inspection commands (topics, offsets, status) wait for an unreachable transport.
INSPECTION_REACH_TIMEOUT = 10.0


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class LogRecord(NamedTuple):
    """One record as stored in a topic partition (a tuple: built once per record on hot paths)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int = 0


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = -1  # -1: the broker's default
    config: Mapping[str, str] = field(default_factory=dict)

    @property
    def compacted(self) -> bool:
        return "compact" in self.config.get("cleanup.policy", "delete")


@dataclass(frozen=True)
class TopicDescription:
    name: str
    partitions: int
    config: Mapping[str, str] = field(default_factory=dict)
    internal: bool = False


DeliveryCallback = Callable[[LogRecord | None, Exception | None], None]
"""Called once per sent record: (stored record, None) when durable, (None, error) otherwise."""


class LogError(Exception):
    """A transport failure, with a message that says what to check."""


class UnknownTopicError(LogError):
    pass


OutgoingRecord = tuple[str, bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int | None, int | None]
"""What `LogProducer.send_many` takes: (topic, value, key, headers, timestamp, partition)."""
ErrorCallback = Callable[[Exception], None]
SuccessCallback = Callable[[], None]


def outcome_callback(on_error: ErrorCallback | None, on_success: SuccessCallback | None) -> DeliveryCallback:
    """A DeliveryCallback reporting only the outcome (`send_many`'s callbacks)."""

    def on_delivery(stored: LogRecord | None, error: Exception | None) -> None:
        if error is not None:
            if on_error is not None:
                on_error(error)
        elif on_success is not None:
            on_success()

    return on_delivery


class LogProducer(ABC):
    """Appends records. Delivery callbacks fire only once a record is durable."""

    @abstractmethod
    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
        partition: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        """Queue one record; `partition` None places it by key with murmur2 (random if keyless)."""

    def send_many(
        self,
        records: Sequence[OutgoingRecord],
        on_error: ErrorCallback | None = None,
        on_success: SuccessCallback | None = None,
    ) -> None:
        """Queue a batch of (topic, value, key, headers, timestamp, partition) in order, as `send` each.

        Per record, `on_error(error)` once it failed or `on_success()` once it is durable; no
        LogRecord is built (for a record's stored offset use `send` with `on_delivery`).
        Producers override this to skip per-record work.
        """
        callback = None if on_error is None and on_success is None else outcome_callback(on_error, on_success)
        for topic, value, key, headers, timestamp, partition in records:
            self.send(topic, value, key, headers, timestamp, partition, callback)

    @abstractmethod
    def poll(self, timeout: float = 0.0) -> None:
        """Serve pending delivery callbacks."""

    @abstractmethod
    def flush(self, timeout: float | None = None) -> int:
        """Wait until everything queued is durable (or failed); returns how many remain."""

    # Transactions: records (and offsets written through this producer) become visible
    # together. The embedded log always supports them; Kafka needs `transactional.id`.
    @property
    def transactional(self) -> bool:
        return False

    def begin_transaction(self) -> None:
        raise LogError("this producer is not transactional")

    def commit_transaction(self, timeout: float | None = None) -> None:
        raise LogError("this producer is not transactional")

    def abort_transaction(self, timeout: float | None = None) -> None:
        raise LogError("this producer is not transactional")

    @abstractmethod
    def close(self) -> None: ...


class LogReader(ABC):
    """Reads assigned partitions from explicit positions (assign/seek, no group)."""

    @abstractmethod
    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        """Replace the assignment; each partition starts at the given offset."""

    @abstractmethod
    def seek(self, tp: TopicPartition, offset: int) -> None: ...

    @abstractmethod
    def position(self, tp: TopicPartition) -> int: ...

    @abstractmethod
    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        """Up to `max_records` records; waits at most `timeout` seconds when none are ready."""

    @abstractmethod
    def assignment(self) -> list[TopicPartition]: ...

    @abstractmethod
    def close(self) -> None: ...

    def read_to_end(self, tps: Iterable[TopicPartition], log: TopicLog, idle: float = 0.3) -> list[LogRecord]:
        """Everything from the current positions to the end of the given partitions.

        Stops once each position reached the reported end offset AND one more poll saw
        nothing for `idle` seconds: some brokers (Tansu 0.6) under-report end offsets, and
        stopping at the reported mark would silently miss records. Two idle polls in a row
        also end it (transaction markers hold offsets no reader ever receives).
        """
        tps = list(tps)
        ends = log.end_offsets(tps)
        out: list[LogRecord] = []
        idle_polls = 0
        while True:
            if log.exact_end_offsets and all(self.position(tp) >= ends[tp] for tp in tps):
                return out
            batch = self.poll(5000, idle)
            out.extend(batch)
            idle_polls = 0 if batch else idle_polls + 1
            # A transactional topic's last offset is a commit marker that is never delivered,
            # so a position can stay one short of the end: two idle polls also end the read.
            if idle_polls and (idle_polls >= 2 or all(self.position(tp) >= ends[tp] for tp in tps)):
                return out


class GroupConsumer(ABC):
    """Group-managed reading for sink tasks: partitions are shared among a group's members.

    Kafka uses its consumer-group protocol; the embedded log splits partitions among the
    members it is told about (one process, static membership).
    """

    @abstractmethod
    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]: ...

    @abstractmethod
    def assignment(self) -> list[TopicPartition]: ...

    @abstractmethod
    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Store the next offsets to read, synchronously."""

    @abstractmethod
    def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]: ...

    @abstractmethod
    def seek(self, tp: TopicPartition, offset: int) -> None: ...

    @abstractmethod
    def pause(self, tps: Iterable[TopicPartition]) -> None: ...

    @abstractmethod
    def resume(self, tps: Iterable[TopicPartition]) -> None: ...

    @abstractmethod
    def close(self) -> None: ...


RebalanceListener = Callable[[list[TopicPartition], list[TopicPartition]], None]
"""(assigned, revoked) after each change of a group member's assignment."""


class TopicLog(ABC):
    """A transport: topics, producers and readers over one backend."""

    name: str
    # Capabilities: callers ask these flags, never the log's type.
    # True where end offsets are authoritative; else readers also wait for an idle poll.
    exact_end_offsets: bool = False
    # True where no broker applies `retention.ms`: the log's owner runs the LogCleaner.
    owner_applies_retention: bool = False
    # True where the worker keeps connectors' schema history topics in this log itself (on
    # Kafka, as with Debezium, the connector's own history settings name topic and cluster).
    keeps_history_topics: bool = False
    # True where `read_arrow` reads a partition range straight into Arrow batches.
    arrow_ranges: bool = False

    # -- admin -------------------------------------------------------------------------------
    def probe(self, within: float) -> None:
        """Raise LogError naming the cause when the transport cannot be reached within `within`
        seconds: for inspection commands, which should answer at once rather than wait out
        request timeouts. Local transports are always reachable."""

    @abstractmethod
    def create_topics(self, specs: Sequence[TopicSpec]) -> list[str]:
        """Create the topics that do not exist yet; returns the names created."""

    @abstractmethod
    def list_topics(self) -> dict[str, TopicDescription]: ...

    def describe_topic(self, name: str) -> TopicDescription | None:
        return self.list_topics().get(name)

    @abstractmethod
    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Next offset to be written per partition (the high watermark)."""

    @abstractmethod
    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...

    @abstractmethod
    def delete_records(self, before: Mapping[TopicPartition, int]) -> None:
        """Move each partition's log start up to `before` (retention by offset)."""

    def read_arrow(self, topic: str, partition: int, start: int, end: int, *, headers: bool = False) -> Iterator[Any]:
        """Records `start <= offset < end` of one partition as Arrow record batches (columns
        `offset`, `timestamp_ms`, `key`, `value`, and `headers` in the log's encoding when asked;
        see `cdc.log.embedded_arrow`). Only where `arrow_ranges` is True; needs `cdc[arrow]`."""
        raise NotImplementedError(f"the {self.name} log has no Arrow range reader (arrow_ranges is False)")

    # -- clients -----------------------------------------------------------------------------
    @abstractmethod
    def producer(self, transactional_id: str | None = None, **overrides: str) -> LogProducer: ...

    @abstractmethod
    def reader(self, **overrides: str) -> LogReader: ...

    @abstractmethod
    def group_consumer(
        self,
        group_id: str,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        on_rebalance: RebalanceListener | None = None,
        member: tuple[int, int] = (0, 1),
        **overrides: str,
    ) -> GroupConsumer:
        """`member` = (index, count) is only used by the embedded log's static split."""

    def partitions(self, topic: str) -> list[TopicPartition]:
        d = self.describe_topic(topic)
        if d is None:
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        return [TopicPartition(topic, p) for p in range(d.partitions)]

    def ensure_topic(self, spec: TopicSpec, timeout: float = 30.0) -> TopicDescription:
        """Create `spec` if missing and wait until it is visible."""
        self.create_topics([spec])
        deadline = time.monotonic() + timeout
        while True:
            d = self.describe_topic(spec.name)
            if d is not None:
                return d
            if time.monotonic() > deadline:
                raise LogError(f"topic {spec.name!r} did not appear within {timeout:.0f}s after creation")
            time.sleep(0.1)

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> TopicLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Source connectors and tasks (Kafka Connect's `source` package).

A source task reads an external system and returns `SourceRecord`s from `poll`; each record
carries its source partition and offset, which the runtime stores once the record is durable
in the log and hands back through `OffsetStorageReader` after a restart.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from cdc.api.connector import Connector, Task
from cdc.api.history import HistoryLog
from cdc.api.metrics import TaskMetrics
from cdc.api.records import SourceRecord
from cdc.api.retention import PositionRetention
from cdc.api.storage import OffsetStorageReader


class ExactlyOnceSupport(Enum):
    """A source connector's answer to "can you run exactly-once?" (KIP-618's ExactlyOnceSupport)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(Enum):
    """Whether a source connector can define its own transaction boundaries (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


@dataclass(frozen=True)
class SourceBacklog:
    """What of the source's change log lies past a stored offset, read from the database now.

    `unread_bytes`: bytes of the log (binlog, WAL) after the offset's position; they may hold
    changes of tables the connector does not capture, so more than 0 means "not known to be
    caught up", and 0 means nothing is unread. None when the position cannot be compared (the
    server's log is another history than the offset's: a reset, a restore, a failover).
    `position`: the database's current position, as text for people. `note`: why bytes is None,
    or anything a reader should know.
    """

    unread_bytes: int | None
    position: str
    note: str | None = None


@dataclass(frozen=True)
class RecordMetadata:
    """Where an acknowledged record landed in the log (topic, partition, offset, timestamp in ms)."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None = None


class TransactionContext(Protocol):
    """Connector-defined transaction boundaries (`transaction.boundary=connector`).

    This runtime does not offer one yet (`SourceTaskContext.transaction_context()` returns None):
    on the embedded log every `poll` batch is already one transaction.
    """

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commit the open transaction after `record` (or after the current batch when None)."""
        ...

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Abort the open transaction, dropping the records of it up to `record` (or the batch)."""
        ...


class SourceTaskContext(Protocol):
    """What a source task may ask of the runtime (Kafka Connect's SourceTaskContext).

    Handed to `SourceTask.initialize` before `start`; valid for the task's whole life.
    """

    def configs(self) -> dict[str, str]:
        """A copy of the task's config (the dict `start` received)."""
        ...

    def offset_storage_reader(self) -> OffsetStorageReader:
        """The offsets stored for this connector's source partitions; read them in `start` or the first `poll`."""
        ...

    def transaction_context(self) -> TransactionContext | None:
        """The connector-defined transaction boundaries, or None (always None in this runtime)."""
        ...

    def history_log(self, topic: str) -> HistoryLog | None:
        """A one-partition topic in the worker's log (e.g. schema history); plugins call
        `cdc.api.history.history_log(context, topic)`, which tolerates its absence."""
        ...

    def metrics(self) -> TaskMetrics:
        """Where the task reports its metrics; plugins use `TaskMetrics.of(context)`, which tolerates its absence."""
        ...


class SourceTask(Task):
    """Pulls records from an external system (Kafka Connect's SourceTask).

    `poll` is called in a loop by one thread; return None or [] when nothing is ready
    (after a short wait, not a busy loop). Raise RetriableException for transient errors.

    What the runtime guarantees (cdc/runtime/source_task.py):
    - `initialize`, `start`, every `poll`, `commit` and `commit_record` run on the task's own
      thread, never concurrently with each other; only `stop` comes from another thread.
    - While the connector is paused, `poll` is not called; offsets of records already sent are
      still stored.
    - A record's `source_offset` is stored only once it and every earlier record of the same
      `source_partition` are durable in the log, so a restart resumes after the last stored
      offset and never skips a record. On the embedded log each `poll` batch and its offsets commit
      in one transaction (no loss, no duplicates); on Kafka, offsets of acknowledged records are
      stored every `offset.flush.interval.ms`, and a crash replays the records after them.
    - `stop` comes from another thread, possibly while `poll` blocks. The `poll` in progress
      may still return records: they are sent, and `commit_record` and `commit` may still be
      called while the runtime flushes them after `stop`.

    What the task must do: resume from `context.offset_storage_reader()` in `start` (or its
    first `poll`), put a JSON-serializable `source_partition` and `source_offset` dict on every
    record, and make `stop` only signal (a flag or event), leaving the cleanup to `poll`.
    """

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        """Receive the context before `start`; overrides must keep `self.context` set."""
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceRecord] | None:
        """The next records, in source order; None or [] when nothing is ready.

        Block at most about a second when idle (the runtime checks for stop and pause between
        calls). A RetriableException is logged and `poll` is called again shortly; any other
        exception fails the task (a ConnectException's message is shown as the advice, without a
        trace). The records returned are sent before the next `poll`; the task must not change
        them afterwards.
        """

    def commit(self) -> None:
        """Offsets up to the last acknowledged records are stored; e.g. confirm an LSN now.

        Called on the task's thread after each successful offset store (after every batch on the
        embedded log, every `offset.flush.interval.ms` on Kafka, and at shutdown). Use it to let
        the source forget what is safely stored (a replication slot's confirmed LSN). Exceptions
        are logged and ignored.
        """

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """`record` is durable in the log (metadata None: it was filtered out by an SMT).

        Called once per record returned by `poll`, on the task's thread, as the log acknowledges
        them; its offset may not be stored yet (wait for `commit` for that).
        Exceptions are logged and ignored.
        """


class SourceConnector(Connector):
    """A connector whose tasks are `SourceTask`s (Kafka Connect's SourceConnector).

    Besides the Connector contract, a source connector names the topics its records go to; the
    runtime creates them on first use when `topic.creation.enable` is on.
    """

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Whether this connector, with `props`, can run exactly-once (KIP-618); None: it does not say.

        This runtime does not consult it yet: on the embedded log every source runs exactly-once,
        on Kafka `exactly.once.source.support=enabled` decides.
        """
        return None

    def can_define_transaction_boundaries(self, props: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        """Whether the connector can define transactions itself (`transaction.boundary=connector`).

        The default, UNSUPPORTED, is the only value this runtime uses today.
        """
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def source_backlog(
        self, connector_config: Mapping[str, str], offset: Mapping[str, Any] | None
    ) -> SourceBacklog | None:
        """How much of the database's change log lies past `offset` (the offset this connector stored
        last; None when none is stored), asked of the database now; None when it cannot say.

        Called on a fresh instance, outside any running task, by inspection commands (`cdc status`):
        the lag of what reached the log says nothing of the changes the job never read, and this
        does. It must not change anything on the server (no slot, no lock) and should answer within
        a few seconds; a refused connection may raise, and the caller reports it.
        """
        return None

    def position_retention(
        self, connector_config: Mapping[str, str], offset: Mapping[str, Any] | None
    ) -> PositionRetention | None:
        """How long the database keeps the log position `offset` (the offset this connector stored
        last; None when none is stored) needs, asked of the database now; None when it cannot say.

        Called as `source_backlog` is (a fresh instance, outside any running task) by `cdc status`
        and `cdc validate`: a stopped job loses its position once the server purges the binlog or
        invalidates the slot, and this says how long that takes at the earliest. Read-only, within
        a few seconds; a refused connection may raise, and the caller reports it.
        """
        return None

    def alter_offsets(self, connector_config: Mapping[str, str], offsets: Mapping[Any, Any]) -> bool:
        """Return True if this connector accepts an external offset change (KIP-875).

        `offsets` maps source partitions to new offsets (None: reset). This runtime does not call
        it yet: `PATCH`/`DELETE /connectors/{name}/offsets` change the stored offsets of a stopped
        connector directly; a connector that keeps offsets elsewhere too must be changed there by hand.
        """
        return False

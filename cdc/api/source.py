"""Source connectors and tasks (Kafka Connect's `source` package)."""

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
from cdc.api.storage import OffsetStorageReader


class ExactlyOnceSupport(Enum):
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(Enum):
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


@dataclass(frozen=True)
class RecordMetadata:
    """Where an acknowledged record landed in the log."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None = None


class TransactionContext(Protocol):
    """Connector-defined transaction boundaries (`transaction.boundary=connector`)."""

    def commit_transaction(self, record: SourceRecord | None = None) -> None: ...

    def abort_transaction(self, record: SourceRecord | None = None) -> None: ...


class SourceTaskContext(Protocol):
    def configs(self) -> dict[str, str]: ...

    def offset_storage_reader(self) -> OffsetStorageReader: ...

    def transaction_context(self) -> TransactionContext | None: ...

    def history_log(self, topic: str) -> HistoryLog | None:
        """A one-partition topic in the worker's log (e.g. schema history); plugins call
        `cdc.api.history.history_log(context, topic)`, which tolerates its absence."""
        ...

    def metrics(self) -> TaskMetrics:
        """Where the task reports its metrics; plugins use `TaskMetrics.of(context)`, which tolerates its absence."""
        ...


class SourceTask(Task):
    """Pulls records from an external system.

    `poll` is called in a loop by one thread; return None or [] when nothing is ready
    (after a short wait, not a busy loop). Raise RetriableException for transient errors.
    """

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceRecord] | None: ...

    def commit(self) -> None:
        """Offsets up to the last acknowledged records are stored; e.g. confirm an LSN now."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """`record` is durable in the log (metadata None: it was filtered out by an SMT)."""


class SourceConnector(Connector):
    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        return None

    def can_define_transaction_boundaries(self, props: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(self, connector_config: Mapping[str, str], offsets: Mapping[Any, Any]) -> bool:
        """Return True if this connector accepts an external offset change (KIP-875)."""
        return False

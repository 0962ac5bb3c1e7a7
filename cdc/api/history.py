"""HistoryLog: an append-only topic in the worker's own log, for state a connector keeps beside its offsets.

Debezium's MySQL connector keeps its schema history in a one-partition topic. When the worker
runs on the embedded log, the connector can keep it there too (`<state.dir>/cdc.db`) and needs
no extra setting. The runtime provides it through `SourceTaskContext.history_log(topic)`; on
Kafka it offers none, and the connector's own history settings apply, as with Debezium.
"""

from __future__ import annotations

from typing import Any, Protocol


class HistoryLog(Protocol):
    """One single-partition topic of the worker's log; records are opaque bytes, oldest first."""

    @property
    def topic(self) -> str:
        """The topic's name, as the connector asked for it."""
        ...

    def append(self, value: bytes) -> None:
        """Durable when it returns (raises if the log refused it).

        Append before emitting the records that depend on it (for example a DDL's schema change
        before the rows in the new shape), so a restart never reads rows it cannot decode.
        """
        ...

    def read_all(self) -> list[bytes]:
        """Every record appended so far, in order; a restarted task reads it in `start` to rebuild its state."""
        ...


def history_log(context: Any, topic: str) -> HistoryLog | None:
    """The context's history log on `topic`, or None when the runtime (or a test harness) offers none."""
    accessor = getattr(context, "history_log", None)
    return accessor(topic) if callable(accessor) else None

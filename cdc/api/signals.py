"""SignalLog: a topic of the worker's log that a source connector reads signals from.

Debezium's `kafka` signal channel (io.debezium.pipeline.signal.channels.KafkaSignalChannel)
reads partition 0 of `signal.kafka.topic` with its own consumer. A connector plugin here
never opens a log client itself (it imports only `cdc.api`), so the runtime hands it a
reader over the worker's own log, embedded or Kafka, the way Kafka Connect hands tasks
their context objects: `SourceTaskContext.signal_log(topic)`. Plugins call
`cdc.api.signals.signal_log(context, topic)`, which tolerates a runtime (or a test
harness) that offers none.

For plugin authors: `poll()` returns the records written since the previous call, as
(key, value) bytes, oldest first. The read position is kept by the runtime under the
consumer group `group_id`, committed after each `poll()` returns, so a signal is acted on
once even across restarts (a crash between the poll and the action loses that signal, as
Debezium's auto-committing consumer does). `send` appends one record (tools and tests).
"""

from __future__ import annotations

from typing import Any, Protocol


class SignalLog(Protocol):
    """One signal topic of the worker's log, as the runtime hands it to a source task."""

    @property
    def topic(self) -> str:
        """The signal topic's name."""
        ...

    def poll(self) -> list[tuple[bytes | None, bytes | None]]:
        """(key, value) of each record appended since the last poll; does not block."""
        ...

    def send(self, key: bytes | None, value: bytes) -> None:
        """Appends one record to partition 0; durable when it returns."""
        ...

    def close(self) -> None:
        """Releases the reader; the runtime's committed position stays for the next task."""
        ...


def signal_log(context: Any, topic: str, group_id: str = "kafka-signal") -> SignalLog | None:
    """The context's signal log on `topic`, or None when the runtime offers none."""
    accessor = getattr(context, "signal_log", None)
    return accessor(topic, group_id) if callable(accessor) else None

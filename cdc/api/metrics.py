"""Task metrics: what a task reports about itself (snapshot progress, position, lag) to status readers.

Values are JSON-able and named like Debezium's JMX metrics (`SnapshotRunning`, `RowsScanned`,
`MilliSecondsBehindSource`, ...), so dashboards and habits carry over. The runtime publishes a
task's snapshot at most every few seconds (and at state changes) through the status topic, where
`cdc status`, the REST API (`GET /connectors/{name}/tasks/{id}/metrics`) and other processes read it.

A hot path should not touch this object per event: keep plain counters and `register` a function
that turns them into metrics; the runtime calls it only when it publishes, on the task's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Supplier = Callable[[], Mapping[str, Any]]

# Debezium's snapshot metrics (SnapshotChangeEventSourceMetricsMXBean).
SNAPSHOT_RUNNING = "SnapshotRunning"
SNAPSHOT_COMPLETED = "SnapshotCompleted"
SNAPSHOT_ABORTED = "SnapshotAborted"
TOTAL_TABLE_COUNT = "TotalTableCount"
REMAINING_TABLE_COUNT = "RemainingTableCount"
ROWS_SCANNED = "RowsScanned"  # {table id: rows emitted so far}
ROWS_ESTIMATED = "RowsEstimated"  # {table id: the database's row estimate}; ours, not Debezium's
# Debezium's streaming metrics (StreamingChangeEventSourceMetricsMXBean).
CONNECTED = "Connected"
MILLISECONDS_BEHIND_SOURCE = "MilliSecondsBehindSource"
TOTAL_NUMBER_OF_EVENTS_SEEN = "TotalNumberOfEventsSeen"
SOURCE_EVENT_POSITION = "SourceEventPosition"  # the source offset of the last event
LAST_EVENT_TS = "LastEventTs"  # source time (epoch ms) of the last event; ours
# PostgreSQL: WAL the replication slot keeps from recycling (pg_current_wal_lsn() - restart_lsn).
RETAINED_WAL_BYTES = "RetainedWalBytes"
NUMBER_OF_COMMITTED_TRANSACTIONS = "NumberOfCommittedTransactions"
# Updates dropped by skip.messages.without.change; -1 when that option is off (Debezium's StreamingMeter).
NUMBER_OF_UNCHANGED_EVENTS_SKIPPED = "NumberOfUnchangedEventsSkipped"
QUEUE_TOTAL_CAPACITY = "QueueTotalCapacity"
QUEUE_REMAINING_CAPACITY = "QueueRemainingCapacity"
SNAPSHOT_STARTED_TS = "SnapshotStartedTs"  # epoch ms; SnapshotDurationInSeconds is derived when read; ours
SNAPSHOT_ENDED_TS = "SnapshotEndedTs"  # epoch ms, None while running; ours
LAST_EVENT_PROCESSED_TS = "LastEventProcessedTs"  # when the last event was handed over (epoch ms); ours
# What the source has not read yet: the database's log position minus the reader's (binlog bytes,
# WAL bytes), sampled by the connector every few seconds; ours.
BYTES_BEHIND_SOURCE = "BytesBehindSource"
# How long the database keeps the position the stored offset needs: a PositionRetention's
# `to_json()` (cdc.api.retention), sampled by the connector; ours.
POSITION_RETENTION = "PositionRetention"
# Debezium's schema history metrics (SchemaHistoryMXBean, context=schema-history), as one map:
# Status (0 stopped, 1 recovering, 2 running), RecoveryStartTime (epoch s, -1 before a recovery),
# ChangesRecovered, ChangesApplied, LastRecoveredChange / LastAppliedChange (the history record's
# JSON, "" before the first), and ours: LastRecoveredChangeTs / LastAppliedChangeTs (epoch ms, from
# which MilliSecondsSinceLastRecoveredChange / ...AppliedChange are derived when read).
SCHEMA_HISTORY = "SchemaHistory"


class TaskMetrics:
    """A task's metrics by name. `set`/`update` for values known now, `register` for computed ones.

    The runtime keeps one per task and publishes its `snapshot`; a task gets it with
    `TaskMetrics.of(self.context)` in `start`. Tests may create one directly.
    """

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._suppliers: list[Supplier] = []

    def set(self, name: str, value: Any) -> None:
        """Set one metric (a JSON-able value) until it is set again; published with the next snapshot."""
        self._values[name] = value

    def update(self, values: Mapping[str, Any]) -> None:
        """Set several metrics at once, as `set` does for each."""
        self._values.update(values)

    def register(self, supplier: Supplier) -> None:
        """`supplier()` returns metrics to merge in at each publish (it may be called at stop too)."""
        self._suppliers.append(supplier)

    def snapshot(self) -> dict[str, Any]:
        """The current values: set ones, overlaid by each supplier's in registration order."""
        out = dict(self._values)
        for supplier in list(self._suppliers):
            out.update(supplier())
        return out

    @staticmethod
    def of(context: object) -> TaskMetrics:
        """The context's metrics, or a detached (never published) TaskMetrics when the runtime has none.

        Plugins call this rather than `context.metrics()` so they still run under older runtimes and
        hand-written test contexts.
        """
        metrics = getattr(context, "metrics", None)
        found = metrics() if callable(metrics) else None
        return found if isinstance(found, TaskMetrics) else TaskMetrics()

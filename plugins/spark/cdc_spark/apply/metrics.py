"""The sink's per-table figures: batches, rows applied, rows rejected, source-commit-to-lake lag.

Kafka Connect's sink-task metrics (`sink-record-send-total`, `put-batch-*`) count per task, and
Debezium's JDBC sink has no per-table MBean; a lake sink is watched per table, so the figures
here are kept per target table. `ChangeApplier` (engine.py) updates them once per table per
micro-batch on the driver, where foreachBatch runs; nothing is counted per row. Readers (the
Prometheus collector of `cdc run`, cdc/jobs/sink_metrics.py, and its live view) take a
`snapshot()` from another thread, so updates and reads hold one lock.

The figures live in the process (`process_metrics()`), not in the applier: Spark may rebuild
the query's foreachBatch function, and `cdc run` reads them without a handle on the query.
prometheus_client is not used here so the sink keeps no exporter dependency; cdc/jobs renders
the snapshot.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class TableFigures:
    """One target table's totals since the process started, and its lag at its last commit."""

    batches: int = 0  # micro-batches that applied rows to the table
    rows_applied: int = 0  # rows written (each key's latest event of a batch counts once)
    rows_rejected: int = 0  # events left out under errors.tolerance=all (dead-letter table/topic)
    lag_ms: int | None = None  # commit time minus the source commit time of the newest row applied
    last_commit_ms: int | None = None  # when the table's last batch was committed (epoch ms)


class SinkMetrics:
    """Per-table figures. `applied` and `rejected` during a batch, `batch_done` after it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[str, TableFigures] = {}
        self._batch: dict[str, int | None] = {}  # tables of the running batch → newest source ts (ms)
        self.batches = 0  # micro-batches applied, all tables

    def applied(self, table: str, rows: int, events: pa.Table | None = None, newest_ms: int | None = None) -> None:
        """`rows` rows applied to `table` from `events` (whose `__source_ts_ms` is each event's
        source commit time), or from events not at hand (the PostgreSQL target's partitions; the
        Delta tasks, which report their events' newest commit time, `newest_ms`)."""
        newest = _newest(events) if events is not None else newest_ms
        with self._lock:
            figures = self._tables.get(table, TableFigures())
            self._tables[table] = replace(figures, rows_applied=figures.rows_applied + int(rows))
            seen = self._batch.get(table)
            self._batch[table] = newest if seen is None else max(seen, newest or seen)

    def rejected(self, tables: Iterable[str]) -> None:
        """One event of each of `tables` (a table once per event) left out of the target."""
        with self._lock:
            for table in tables:
                figures = self._tables.get(table, TableFigures())
                self._tables[table] = replace(figures, rows_rejected=figures.rows_rejected + 1)

    def batch_done(self) -> None:
        """The micro-batch is applied: each table it wrote counts a batch and takes its lag now."""
        now_ms = int(time.time() * 1000)
        with self._lock:
            self.batches += 1
            for table, newest in self._batch.items():
                figures = self._tables.get(table, TableFigures())
                lag = max(0, now_ms - newest) if newest is not None else figures.lag_ms
                self._tables[table] = replace(figures, batches=figures.batches + 1, lag_ms=lag, last_commit_ms=now_ms)
            self._batch = {}

    def snapshot(self) -> dict[str, TableFigures]:
        """Every table's figures as of now (immutable values)."""
        with self._lock:
            return dict(self._tables)


def _newest(events: pa.Table | None) -> int | None:
    if events is None or "__source_ts_ms" not in events.column_names or events.num_rows == 0:
        return None
    newest = pc.max(events["__source_ts_ms"]).as_py()
    return int(newest) if newest is not None else None


_PROCESS = SinkMetrics()


def process_metrics() -> SinkMetrics:
    """The figures of every ChangeApplier of this process (one query in `cdc run`)."""
    return _PROCESS

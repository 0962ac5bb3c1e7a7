"""Snapshot progress per table (rows done / estimate), logged at most every few seconds.

`metrics()` gives Debezium's snapshot metrics (SnapshotRunning, TotalTableCount, RowsScanned, ...)
for the task's metrics supplier; the per-row cost stays one counter increment.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from cdc.api import metrics as m


@dataclass
class TableProgress:
    table: str
    estimate: int
    rows: int = 0
    done: bool = False
    started: float = field(default_factory=time.monotonic)

    def pace(self) -> str:
        """`12,345 rows/s, about 1m05s left` (the ETA only while the estimate is ahead of the rows)."""
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = self.rows / elapsed
        text = f"{rate:,.0f} rows/s"
        if rate > 0 and self.estimate > self.rows:
            left = int((self.estimate - self.rows) / rate)
            text += f", about {left // 60}m{left % 60:02d}s left"
        return text


@dataclass
class SnapshotProgress:
    """Shared with the task, so `status()` and the metrics can report it while the snapshot runs."""

    logger: logging.Logger
    interval_s: float = 10.0
    tables: dict[str, TableProgress] = field(default_factory=dict)
    _last_log: float = field(default_factory=time.monotonic)
    total_tables: int = 0
    running: bool = False
    completed: bool = False

    started_ms: int | None = None
    ended_ms: int | None = None

    def begin(self, total_tables: int) -> None:
        """A data snapshot of `total_tables` tables starts."""
        self.total_tables, self.running, self.completed = total_tables, True, False
        self.started_ms, self.ended_ms = int(time.time() * 1000), None

    def complete(self) -> None:
        self.running, self.completed = False, True
        self.ended_ms = int(time.time() * 1000)

    def start_table(self, table: str, estimate: int) -> None:
        self.tables[table] = TableProgress(table, max(0, estimate))
        self.logger.info("Snapshot of %s started: about %d rows", table, estimate, extra={"table": table})

    def row(self, table: str) -> None:
        p = self.tables[table]
        p.rows += 1
        if p.rows % 1024 == 0 and time.monotonic() - self._last_log >= self.interval_s:
            self._last_log = time.monotonic()
            self.logger.info(
                "Snapshot of %s: %d of about %d rows, %s", table, p.rows, p.estimate, p.pace(), extra={"table": table}
            )

    def finish_table(self, table: str) -> None:
        p = self.tables[table]
        p.done = True
        self.logger.info(
            "Snapshot of %s done: %d rows in %.1f s (%s)",
            table,
            p.rows,
            time.monotonic() - p.started,
            p.pace(),
            extra={"table": table},  # the JSON log's `table` field (cdc.runtime.logging_context)
        )

    def summary(self) -> dict[str, dict[str, int | bool]]:
        return {t: {"rows": p.rows, "estimate": p.estimate, "done": p.done} for t, p in dict(self.tables).items()}

    def metrics(self) -> dict[str, Any]:
        """Debezium's snapshot metric names; empty when this run takes no data snapshot."""
        if not (self.running or self.completed):
            return {}
        tables = dict(self.tables)  # a copy: the snapshot may run on another thread
        done = sum(1 for p in tables.values() if p.done)
        return {
            m.SNAPSHOT_RUNNING: self.running,
            m.SNAPSHOT_COMPLETED: self.completed,
            m.TOTAL_TABLE_COUNT: self.total_tables,
            m.REMAINING_TABLE_COUNT: max(0, self.total_tables - done),
            m.ROWS_SCANNED: {t: p.rows for t, p in tables.items()},
            m.ROWS_ESTIMATED: {t: p.estimate for t, p in tables.items()},
            m.SNAPSHOT_STARTED_TS: self.started_ms,
            m.SNAPSHOT_ENDED_TS: self.ended_ms,
        }

"""Snapshot progress per table (rows done / estimate), logged at most every few seconds."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field


@dataclass
class TableProgress:
    table: str
    estimate: int
    rows: int = 0
    done: bool = False


@dataclass
class SnapshotProgress:
    """Shared with the task, so `status()` can report it while the snapshot runs."""

    logger: logging.Logger
    interval_s: float = 10.0
    tables: dict[str, TableProgress] = field(default_factory=dict)
    _last_log: float = field(default_factory=time.monotonic)

    def start_table(self, table: str, estimate: int) -> None:
        self.tables[table] = TableProgress(table, estimate)
        self.logger.info("Snapshot of %s started: about %d rows", table, estimate)

    def row(self, table: str) -> None:
        p = self.tables[table]
        p.rows += 1
        if p.rows % 1024 == 0 and time.monotonic() - self._last_log >= self.interval_s:
            self._last_log = time.monotonic()
            self.logger.info("Snapshot of %s: %d of about %d rows", table, p.rows, p.estimate)

    def finish_table(self, table: str) -> None:
        p = self.tables[table]
        p.done = True
        self.logger.info("Snapshot of %s done: %d rows", table, p.rows)

    def summary(self) -> dict[str, dict[str, int | bool]]:
        return {t: {"rows": p.rows, "estimate": p.estimate, "done": p.done} for t, p in self.tables.items()}

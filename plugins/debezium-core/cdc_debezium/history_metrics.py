"""Debezium's schema history metrics (SchemaHistoryMetrics, `context=schema-history`) of a connector's history.

A connector with a schema history (MySQL's) tells this listener what happens to it, as
Debezium's AbstractSchemaHistory tells its SchemaHistoryListener:

- `started()` when the history is opened (Status RUNNING), `stopped()` when it is closed (STOPPED);
- `recovery_started()` / `recovery_stopped()` around reading the history back at a restart
  (RECOVERING in between; RecoveryStartTime is the start, in epoch seconds), with
  `on_change_from_history(record)` for each record read (ChangesRecovered, LastRecoveredChange);
- `on_change_applied(record)` for each record written (ChangesApplied, LastAppliedChange): the
  snapshot's table definitions and every streamed DDL.

`values()` is the TaskMetrics map under `cdc.api.metrics.SCHEMA_HISTORY`: Debezium's attribute
names with its values (Status as its MXBean's number: 0 stopped, 1 recovering, 2 running; -1 for
a time not yet known; "" for a change not yet seen; a change as the history record's JSON, as
Debezium's HistoryRecord.toString()), plus the epoch-ms times of the last recovered and applied
change, from which a reader derives MilliSecondsSinceLast{Recovered,Applied}Change as of its
own clock (cdc/runtime/prometheus/debezium.py), so an idle connector publishes nothing new.
The task's thread calls the listener and `values()` (and `stopped()` comes from the thread that
stops the task): plain assignments, read whole.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

STOPPED, RECOVERING, RUNNING = 0, 1, 2


def _now_ms() -> int:
    return int(time.time() * 1000)


class SchemaHistoryMetrics:
    def __init__(self, clock_ms: Callable[[], int] = _now_ms) -> None:
        self._clock = clock_ms
        self.status = STOPPED
        self.recovery_started_ms: int | None = None
        self.changes_recovered = 0
        self.changes_applied = 0
        self.last_recovered: Mapping[str, Any] | None = None
        self.last_applied: Mapping[str, Any] | None = None
        self.last_recovered_ms: int | None = None
        self.last_applied_ms: int | None = None

    def started(self) -> None:
        self.status = RUNNING

    def stopped(self) -> None:
        self.status = STOPPED

    def recovery_started(self) -> None:
        self.status = RECOVERING
        self.recovery_started_ms = self._clock()

    def recovery_stopped(self) -> None:
        self.status = RUNNING
        started = self.recovery_started_ms if self.recovery_started_ms is not None else self._clock()
        log.info(
            "Finished database schema history recovery of %d change(s) in %d ms",
            self.changes_recovered,
            self._clock() - started,
        )

    def on_change_from_history(self, record: Mapping[str, Any]) -> None:
        self.changes_recovered += 1
        self.last_recovered = record
        self.last_recovered_ms = self._clock()

    def on_change_applied(self, record: Mapping[str, Any]) -> None:
        self.changes_applied += 1
        self.last_applied = record
        self.last_applied_ms = self._clock()

    def values(self) -> dict[str, Any]:
        return {
            "Status": self.status,
            "RecoveryStartTime": self.recovery_started_ms // 1000 if self.recovery_started_ms is not None else -1,
            "ChangesRecovered": self.changes_recovered,
            "ChangesApplied": self.changes_applied,
            "LastRecoveredChange": _text(self.last_recovered),
            "LastAppliedChange": _text(self.last_applied),
            "LastRecoveredChangeTs": self.last_recovered_ms,
            "LastAppliedChangeTs": self.last_applied_ms,
        }


def _text(record: Mapping[str, Any] | None) -> str:
    """A history record as the history stores it (compact JSON); "" for none, as Debezium."""
    return "" if record is None else json.dumps(record, separators=(",", ":"), default=str)

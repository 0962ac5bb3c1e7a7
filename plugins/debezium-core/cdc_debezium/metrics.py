"""Debezium's streaming metrics from the batches `poll()` returns: one update per batch, none per event.

A connector calls `batch(records)` with each non-empty batch while streaming and registers
`values` as a TaskMetrics supplier. The lag is Debezium's MilliSecondsBehindSource: processing
time minus the source time of the last event, measured when that event was handed over.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cdc.api import SourceRecord
from cdc.api import metrics as m


class StreamingMetrics:
    def __init__(self, source_ts_ms: Callable[[SourceRecord], int | None]) -> None:
        """`source_ts_ms(record)`: when the record's change happened at the source (epoch ms), if known."""
        self._source_ts_ms = source_ts_ms
        self.events = 0
        self.last: SourceRecord | None = None
        self.last_ts_ms: int | None = None
        self.lag_ms: int | None = None

    def batch(self, records: list[SourceRecord]) -> None:
        self.events += len(records)
        last = records[-1]
        self.last = last
        ts = self._source_ts_ms(last)
        if ts is not None:
            self.last_ts_ms = ts
            self.lag_ms = max(0, int(time.time() * 1000) - ts)

    def values(self, connected: bool) -> dict[str, Any]:
        last = self.last
        return {
            m.CONNECTED: connected,
            m.TOTAL_NUMBER_OF_EVENTS_SEEN: self.events,
            m.MILLISECONDS_BEHIND_SOURCE: self.lag_ms,
            m.LAST_EVENT_TS: self.last_ts_ms,
            m.SOURCE_EVENT_POSITION: dict(last.source_offset) if last is not None and last.source_offset else None,
        }

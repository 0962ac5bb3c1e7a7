"""Debezium's streaming metrics from the batches `poll()` returns: one update per batch, no per-event metrics call.

A connector calls `batch(records)` with each non-empty batch while streaming and registers
`values` as a TaskMetrics supplier. The lag is Debezium's MilliSecondsBehindSource: processing
time minus the source time of the batch's last event that has one (a transaction's END record,
a tombstone and a heartbeat have none), measured when the batch was handed over.
NumberOfCommittedTransactions counts the transactions the batches started (a change of the
connector's `transaction_key`, e.g. the binlog position of BEGIN or PostgreSQL's txId): the
source logs only committed transactions, so each one seen is a committed one.
NumberOfUnchangedEventsSkipped is Debezium's StreamingMeter count of updates dropped by
`skip.messages.without.change`: -1 while that option is off (the metric is disabled), else the
count from 0. A connector that skips passes `unchanged_skipped`, a reader of its count.

`SourceLag` keeps what the source has not read yet (the database's log position minus the
reader's, in bytes), sampled at most every `interval_s` because it costs a database query;
`Periodic` does the same for any other figure read from the database (the position's retention).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from cdc.api import SourceRecord
from cdc.api import metrics as m

log = logging.getLogger(__name__)

TransactionKey = Callable[[SourceRecord], Hashable | None]
T = TypeVar("T")


class StreamingMetrics:
    def __init__(
        self,
        source_ts_ms: Callable[[SourceRecord], int | None],
        transaction_key: TransactionKey | None = None,
        unchanged_skipped: Callable[[], int] | None = None,
    ) -> None:
        """`source_ts_ms(record)`: when the record's change happened at the source (epoch ms), if known.
        `transaction_key(record)`: what identifies the record's transaction (None: not in one).
        `unchanged_skipped()`: updates skipped by skip.messages.without.change, -1 when it is off;
        without it the metric is -1 (the connector skips none)."""
        self._source_ts_ms = source_ts_ms
        self._unchanged_skipped = unchanged_skipped
        self._transaction_key = transaction_key
        self.events = 0
        self.transactions = 0
        self._last_tx: Hashable | None = None
        self.last: SourceRecord | None = None
        self.last_ts_ms: int | None = None
        self.lag_ms: int | None = None
        self.processed_ms: int | None = None

    def batch(self, records: list[SourceRecord]) -> None:
        self.events += len(records)
        self.last = records[-1]
        now_ms = int(time.time() * 1000)
        self.processed_ms = now_ms
        # The last record that has a source time: a batch often ends with a transaction's END
        # record or a tombstone, which have none (with provide.transaction.metadata=true, every
        # streamed transaction's batch did, and the lag was never reported).
        ts = None
        for record in reversed(records):
            ts = self._source_ts_ms(record)
            if ts is not None:
                break
        if ts is not None:
            self.last_ts_ms = ts
            self.lag_ms = max(0, now_ms - ts)
        key_of = self._transaction_key
        if key_of is not None:
            previous, started = self._last_tx, 0
            for record in records:
                key = key_of(record)
                if key is not None and key != previous:
                    started += 1
                    previous = key
            self._last_tx = previous
            self.transactions += started

    def values(self, connected: bool) -> dict[str, Any]:
        last = self.last
        return {
            m.CONNECTED: connected,
            m.TOTAL_NUMBER_OF_EVENTS_SEEN: self.events,
            m.NUMBER_OF_COMMITTED_TRANSACTIONS: self.transactions,
            m.NUMBER_OF_UNCHANGED_EVENTS_SKIPPED: self._unchanged_skipped() if self._unchanged_skipped else -1,
            m.MILLISECONDS_BEHIND_SOURCE: self.lag_ms,
            m.LAST_EVENT_TS: self.last_ts_ms,
            m.LAST_EVENT_PROCESSED_TS: self.processed_ms,
            m.SOURCE_EVENT_POSITION: dict(last.source_offset) if last is not None and last.source_offset else None,
        }


class SourceLag:
    """The source's unread log in bytes, from `measure()` at most every `interval_s` (a query each time).

    `measure()` returns None when the reader's position is unknown; an exception (the database
    restarting, a lost connection) keeps the previous value and is logged at DEBUG.
    """

    def __init__(self, measure: Callable[[], int | None], interval_s: float = 4.0) -> None:
        self._measure = measure
        self._interval = interval_s
        self._next = 0.0
        self.bytes: int | None = None

    def value(self) -> int | None:
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self._interval
            try:
                measured = self._measure()
                self.bytes = None if measured is None else max(0, int(measured))
            except Exception as e:
                log.debug("measuring how far the source's reader is behind failed: %s", e)
        return self.bytes


class Periodic(Generic[T]):
    """The last value of `measure()`, read again at most every `interval_s` (each read costs queries).

    An exception (the database restarting, a lost connection) keeps the previous value and is
    logged at DEBUG, as SourceLag does; `last` is the value without measuring (at stop)."""

    def __init__(self, measure: Callable[[], T], interval_s: float, what: str) -> None:
        self._measure = measure
        self._interval = interval_s
        self._what = what
        self._next = 0.0
        self.last: T | None = None

    def value(self) -> T | None:
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self._interval
            try:
                self.last = self._measure()
            except Exception as e:
                log.debug("reading %s failed: %s", self._what, e)
        return self.last

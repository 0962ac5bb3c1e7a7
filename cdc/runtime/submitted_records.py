"""Which source offsets are safe to store (Kafka Connect's SubmittedRecords, KIP-618).

Records are acknowledged out of order across topic partitions, but an offset may be
stored only when every earlier record of the same source partition is acknowledged, so
a restart never skips an unacknowledged record.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from cdc.api.records import SourceRecord


class SubmittedRecord:
    __slots__ = ("acked", "record")

    def __init__(self, record: SourceRecord) -> None:
        self.record = record
        self.acked = False


def _partition_key(partition: Mapping[str, Any] | None) -> str:
    return json.dumps(partition, sort_keys=True, default=str)


class SubmittedRecords:
    def __init__(self) -> None:
        self._records: dict[str, deque[SubmittedRecord]] = {}
        self._lock = threading.Lock()
        self._outstanding = 0

    def submit(self, record: SourceRecord) -> SubmittedRecord:
        sub = SubmittedRecord(record)
        with self._lock:
            self._records.setdefault(_partition_key(record.source_partition), deque()).append(sub)
            self._outstanding += 1
        return sub

    def ack(self, sub: SubmittedRecord) -> None:
        with self._lock:
            if not sub.acked:
                sub.acked = True
                self._outstanding -= 1

    @property
    def outstanding(self) -> int:
        return self._outstanding

    def committable(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
        """(source partition, latest offset) whose predecessors are all acknowledged; removes them."""
        out: list[tuple[Mapping[str, Any], Mapping[str, Any] | None]] = []
        with self._lock:
            for key in list(self._records):
                dq = self._records[key]
                last: SubmittedRecord | None = None
                while dq and dq[0].acked:
                    last = dq.popleft()
                if last is not None and last.record.source_partition is not None:
                    out.append((last.record.source_partition, last.record.source_offset))
                if not dq:
                    del self._records[key]
        return out

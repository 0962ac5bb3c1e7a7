"""Source offsets by poll batch: which offsets a batch commits, and when they may be stored.

`SubmittedBatches` is Kafka Connect's SubmittedRecords (KIP-618) counted per poll batch instead
of per record, for tasks that take no per-record callback (SourceTask.commit_record not
overridden): a batch's offsets become storable once every record of it and of every earlier
batch is acknowledged. That is stricter than per source partition, so an offset is never
stored past an unacknowledged record, and it costs one counter per record instead of a
tracked object and a JSON key.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from cdc.api.records import SourceRecord

Offsets = dict[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]]


def latest_offsets(records: list[SourceRecord]) -> Offsets:
    """The last source offset of each source partition in the batch (first-seen order).

    A connector hands the same partition dict to consecutive records; its key is computed
    once per run of the same object.
    """
    latest: Offsets = {}
    last: Mapping[str, Any] | None = None
    key = ""
    for record in records:
        partition = record.source_partition
        if partition is None:
            continue
        if partition is not last:
            key, last = repr(sorted(partition.items())), partition
        latest[key] = (partition, record.source_offset)
    return latest


class SubmittedBatch:
    __slots__ = ("offsets", "remaining")

    def __init__(self, offsets: Offsets, remaining: int) -> None:
        self.offsets = offsets
        self.remaining = remaining


class SubmittedBatches:
    """Poll batches in flight, oldest first, with how many of each batch's records are unacknowledged."""

    def __init__(self) -> None:
        self._batches: deque[SubmittedBatch] = deque()
        self._lock = threading.Lock()
        self._outstanding = 0

    def submit(self, records: list[SourceRecord], sent: int) -> SubmittedBatch:
        """`records` as polled; `sent` of them go to the log (the rest were dropped or skipped)."""
        batch = SubmittedBatch(latest_offsets(records), sent)
        with self._lock:
            self._batches.append(batch)
            self._outstanding += sent
        return batch

    def ack(self, batch: SubmittedBatch) -> None:
        """One record of `batch` is durable (or was dropped under errors.tolerance=all)."""
        with self._lock:
            batch.remaining -= 1
            self._outstanding -= 1

    @property
    def outstanding(self) -> int:
        return self._outstanding

    def committable(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
        """(source partition, latest offset) of the fully acknowledged batches at the head; removes them."""
        merged: Offsets = {}
        with self._lock:
            while self._batches and self._batches[0].remaining <= 0:
                merged.update(self._batches.popleft().offsets)
        return list(merged.values())

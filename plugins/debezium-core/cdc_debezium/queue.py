"""ChangeEventQueue: the bounded hand-off between the reader thread and `poll()`.

`max.queue.size` bounds memory: the producer blocks when the queue is full, so a backlog
of millions of binlog events never sits in memory at once. `poll()` returns up to
`max.batch.size` records, waiting at most `poll.interval.ms` for the first one.

`max.queue.size.in.bytes` (0, the default: no bound by size) bounds it by size too, as
Debezium's ChangeEventQueue does: the producer blocks while the queued records' estimated size
has reached the bound, and a record is let in whenever the queue is below it, so one record
larger than the bound still passes, alone. The size is `approximate_size`'s estimate, computed
only when the bound is set.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from cdc.api import ConnectRecord, SourceRecord, Struct

T = TypeVar("T")


class QueueClosed(Exception):
    """The consumer side stopped: the producer thread should end quietly."""


MAX_QUEUE_SIZE_IN_BYTES = "max.queue.size.in.bytes"


def approximate_size(item: Any) -> int:
    """Bytes `item` holds, estimated as Debezium's ObjectSizeCalculator does for a queued record:
    the sizes of the objects the record holds, walked, not of what it shares with other records.

    Each object counts `sys.getsizeof` (CPython's size of the object itself: header, slots, a
    str's or bytes' characters, a list's or dict's slots), walking a record's key and value
    (Structs, their field values, nested lists, dicts and Structs), its headers and its source
    offset. Not counted, because records share them: schemas, the topic name, the source
    partition, None and booleans. So a record of a few short columns comes to some hundreds of
    bytes; the figure is an estimate of the memory held, not of the serialized record, and is not
    equal to the JVM's figure for the same record (a Java String takes 2 bytes a character).
    """
    size = 0
    stack = [item]
    getsizeof = sys.getsizeof
    while stack:
        obj = stack.pop()
        if obj is None or obj is True or obj is False:
            continue
        kind = type(obj)
        if kind is Struct:
            values = obj._values
            size += getsizeof(obj) + getsizeof(values)
            stack.extend(values)
        elif kind is list or kind is tuple:
            size += getsizeof(obj)
            stack.extend(obj)
        elif kind is dict:
            size += getsizeof(obj)
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, ConnectRecord):
            size += getsizeof(obj)
            stack.append(obj.key)
            stack.append(obj.value)
            if obj.headers:
                size += getsizeof(obj.headers)
                stack.extend((h.key, h.value) for h in obj.headers)
            if isinstance(obj, SourceRecord):
                stack.append(obj.source_offset)
        else:
            size += getsizeof(obj)
    return size


class ChangeEventQueue(Generic[T]):
    def __init__(
        self,
        max_batch_size: int,
        max_queue_size: int,
        poll_interval_ms: int,
        max_queue_size_in_bytes: int = 0,
        sizer: Callable[[Any], int] = approximate_size,
    ) -> None:
        if max_queue_size <= max_batch_size:
            raise ValueError(f"max.queue.size ({max_queue_size}) must be larger than max.batch.size ({max_batch_size})")
        if isinstance(max_queue_size_in_bytes, bool) or not isinstance(max_queue_size_in_bytes, int):
            raise ValueError(
                f"{MAX_QUEUE_SIZE_IN_BYTES} must be a whole number of bytes (0: no bound), "
                f"got {max_queue_size_in_bytes!r}"
            )
        if max_queue_size_in_bytes < 0:
            raise ValueError(
                f"{MAX_QUEUE_SIZE_IN_BYTES} ({max_queue_size_in_bytes}) must be 0 (no bound by size) or more"
            )
        self.max_batch_size = max_batch_size
        self.max_queue_size = max_queue_size
        self.max_queue_size_in_bytes = max_queue_size_in_bytes
        self.poll_interval = min(poll_interval_ms, 5000) / 1000
        self._items: deque[T] = deque()
        self._sizes: deque[int] = deque()  # per queued item, only with a bound in bytes
        self._bytes = 0
        self._sizer = sizer
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._closed = False
        self.high_water = 0

    @property
    def size_in_bytes(self) -> int:
        """The queued records' estimated size (Debezium's CurrentQueueSizeInBytes); 0 without a bound."""
        return self._bytes

    def _full_in_bytes(self) -> bool:
        return 0 < self.max_queue_size_in_bytes <= self._bytes

    def enqueue(self, item: T) -> None:
        """Blocks while the queue is full; raises QueueClosed once the queue is closed."""
        size = self._sizer(item) if self.max_queue_size_in_bytes else 0
        with self._cond:
            while (len(self._items) >= self.max_queue_size or self._full_in_bytes()) and not self._closed:
                self._cond.wait(0.5)
            if self._closed:
                raise QueueClosed("change event queue closed")
            self._items.append(item)
            if self.max_queue_size_in_bytes:
                self._sizes.append(size)
                self._bytes += size
            if len(self._items) > self.high_water:
                self.high_water = len(self._items)
            if len(self._items) >= self.max_batch_size or self._full_in_bytes():
                self._cond.notify_all()

    def enqueue_many(self, items: list[T]) -> None:
        """Appends all items once there is room for them (or for a full batch, if more).

        With `max.queue.size.in.bytes`, items go in one at a time while the queue is below the
        bound in bytes (and in records), waiting for `poll()` in between, as `enqueue` each."""
        if not items:
            return
        if self.max_queue_size_in_bytes:
            self._enqueue_sized(items)
            return
        need = min(len(items), self.max_batch_size)
        with self._cond:
            while len(self._items) + need > self.max_queue_size and not self._closed:
                self._cond.wait(0.5)
            if self._closed:
                raise QueueClosed("change event queue closed")
            self._items.extend(items)
            if len(self._items) > self.high_water:
                self.high_water = len(self._items)
            if len(self._items) >= self.max_batch_size:
                self._cond.notify_all()

    def _enqueue_sized(self, items: list[T]) -> None:
        sizes = [self._sizer(item) for item in items]
        i = 0
        with self._cond:
            while i < len(items):
                while (len(self._items) >= self.max_queue_size or self._full_in_bytes()) and not self._closed:
                    self._cond.notify_all()  # what is queued is a batch for poll() now
                    self._cond.wait(0.5)
                if self._closed:
                    raise QueueClosed("change event queue closed")
                while i < len(items) and len(self._items) < self.max_queue_size and not self._full_in_bytes():
                    self._items.append(items[i])
                    self._sizes.append(sizes[i])
                    self._bytes += sizes[i]
                    i += 1
                if len(self._items) > self.high_water:
                    self.high_water = len(self._items)
                if len(self._items) >= self.max_batch_size or self._full_in_bytes():
                    self._cond.notify_all()

    def producer_failure(self, error: BaseException) -> None:
        """The reader failed: `poll()` raises the error once the records before it are drained."""
        with self._cond:
            self._error = error
            self._cond.notify_all()

    def poll(self) -> list[T]:
        """Up to `max.batch.size` items; waits `poll.interval.ms` for a full batch, returns early if closed."""
        deadline = time.monotonic() + self.poll_interval
        with self._cond:
            while (
                len(self._items) < self.max_batch_size
                and not self._full_in_bytes()  # the producer waits for this poll: no batch grows now
                and self._error is None
                and not self._closed
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            n = min(len(self._items), self.max_batch_size)
            batch = [self._items.popleft() for _ in range(n)]
            if self.max_queue_size_in_bytes:
                sizes = self._sizes
                self._bytes -= sum(sizes.popleft() for _ in range(n))
            if batch:
                self._cond.notify_all()
            elif self._error is not None:
                raise self._error
            return batch

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        return len(self._items)

"""ChangeEventQueue: the bounded hand-off between the reader thread and `poll()`.

`max.queue.size` bounds memory: the producer blocks when the queue is full, so a backlog
of millions of binlog events never sits in memory at once. `poll()` returns up to
`max.batch.size` records, waiting at most `poll.interval.ms` for the first one.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class QueueClosed(Exception):
    """The consumer side stopped: the producer thread should end quietly."""


class ChangeEventQueue(Generic[T]):
    def __init__(self, max_batch_size: int, max_queue_size: int, poll_interval_ms: int) -> None:
        if max_queue_size <= max_batch_size:
            raise ValueError(f"max.queue.size ({max_queue_size}) must be larger than max.batch.size ({max_batch_size})")
        self.max_batch_size = max_batch_size
        self.max_queue_size = max_queue_size
        self.poll_interval = min(poll_interval_ms, 5000) / 1000
        self._items: deque[T] = deque()
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._closed = False
        self.high_water = 0

    def enqueue(self, item: T) -> None:
        """Blocks while the queue is full; raises QueueClosed once the queue is closed."""
        with self._cond:
            while len(self._items) >= self.max_queue_size and not self._closed:
                self._cond.wait(0.5)
            if self._closed:
                raise QueueClosed("change event queue closed")
            self._items.append(item)
            if len(self._items) > self.high_water:
                self.high_water = len(self._items)
            if len(self._items) >= self.max_batch_size:
                self._cond.notify_all()

    def enqueue_many(self, items: list[T]) -> None:
        """Appends all items once there is room for them (or for a full batch, if more)."""
        if not items:
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

    def producer_failure(self, error: BaseException) -> None:
        """The reader failed: `poll()` raises the error once the records before it are drained."""
        with self._cond:
            self._error = error
            self._cond.notify_all()

    def poll(self) -> list[T]:
        """Up to `max.batch.size` items; waits `poll.interval.ms` for a full batch, returns early if closed."""
        deadline = time.monotonic() + self.poll_interval
        with self._cond:
            while len(self._items) < self.max_batch_size and self._error is None and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            n = min(len(self._items), self.max_batch_size)
            batch = [self._items.popleft() for _ in range(n)]
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

"""A sink micro-batch that never ends stops `cdc run` with advice instead of hanging it.

Spark does not time out a micro-batch: a driver whose heap is exhausted in a thread that
does not fail the query (the task-result-getter, say), a task waiting on a lock, or a batch
far larger than its memory leave the query running with nothing committed, and `cdc run`
would wait forever. `BatchWatch` notices a batch that has been running longer than
`spark.batchTimeoutMs` (default 30 minutes; 0: never) and raises one line naming the batch,
the likely causes and the fix. The batch is replayed from the checkpoint on the next run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cdc.api.errors import ConnectException

DEFAULT_BATCH_TIMEOUT_MS = 30 * 60 * 1000


class BatchWatch:
    """Polled with the running query; raises when one micro-batch outlives `timeout_ms`."""

    def __init__(self, timeout_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout_s = timeout_ms / 1000
        self.clock = clock
        self._last_batch: int | None = None  # the newest finished batch
        self._since: float | None = None  # when the running batch was first seen running

    def check(self, query: Any) -> None:
        if self.timeout_s <= 0:
            return
        progress = query.lastProgress
        finished = progress["batchId"] if progress else None
        active = bool(query.status.get("isTriggerActive"))
        now = self.clock()
        if finished != self._last_batch or not active:
            self._last_batch, self._since = finished, (now if active else None)
            return
        if self._since is None:
            self._since = now
            return
        if now - self._since > self.timeout_s:
            running = 0 if finished is None else finished + 1
            took = now - self._since
            spent = f"{took / 60:.0f} min" if took >= 120 else f"{took:.0f} s"
            raise ConnectException(
                f"the sink's micro-batch {running} has run for {spent} without finishing "
                f"(spark.batchTimeoutMs={int(self.timeout_s * 1000)}): Spark is stuck or out of memory (look for "
                f"OutOfMemoryError above, or in the Spark UI). Fix: raise spark.conf spark.driver.memory / "
                f"spark.executor.memory or lower spark.maxEventsPerTrigger, then run cdc run again (the batch is "
                f"replayed from the checkpoint); raise spark.batchTimeoutMs if batches this long are expected"
            )

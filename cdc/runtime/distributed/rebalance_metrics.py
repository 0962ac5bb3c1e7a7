"""Kafka Connect's `connect-worker-rebalance-metrics` of a distributed worker (DistributedHerder.HerderMetrics).

Kafka's semantics, kept here:

- a rebalance starts when the worker receives its new assignment (the group's `onAssigned`) and
  succeeds once the worker has read the config topic to its end and started the assigned
  connectors and tasks (`handleRebalanceCompleted`); until then `rebalancing` is 1. A worker
  that cannot read the config topic stays rebalancing until a later attempt succeeds;
- `completed-rebalances-total` counts the successes since the worker started;
- `epoch` is the group's generation of the latest assignment;
- `rebalance-avg-time-ms` / `rebalance-max-time-ms` are Kafka's Avg and Max over its sample window
  (cdc.runtime.sampled): NaN when no rebalance completed in the last 30 to 60 s;
- `time-since-last-rebalance-ms` is +Inf until the first rebalance completes.

A standalone worker has no group, and as in Kafka (whose StandaloneHerder registers no such
group) no rebalance metrics.
"""

from __future__ import annotations

import math
import threading

from cdc.runtime.sampled import SampledStat, now_ms


class RebalanceMetrics:
    def __init__(self) -> None:
        self.completed = 0
        self.rebalancing = False
        self.epoch = 0
        self.time = SampledStat()
        self._started_ms = 0.0
        self._last_completed_ms: float | None = None
        self._lock = threading.Lock()

    def started(self, generation: int, now: float | None = None) -> None:
        """The worker received the assignment of `generation` (Kafka's rebalanceStarted)."""
        with self._lock:
            self.epoch = generation
            self._started_ms = now_ms() if now is None else now
            self.rebalancing = True

    def succeeded(self, now: float | None = None) -> None:
        """The assigned work is started (Kafka's rebalanceSucceeded); nothing when no rebalance is under way."""
        now = now_ms() if now is None else now
        with self._lock:
            if not self.rebalancing:
                return
            self.rebalancing = False
            self.completed += 1
            self._last_completed_ms = now
            self.time.record(max(0.0, now - self._started_ms), now)

    def values(self, now: float | None = None) -> dict[str, float]:
        """Kafka's attribute names -> their values as of `now` (cdc.runtime.sampled's clock)."""
        now = now_ms() if now is None else now
        with self._lock:
            last = self._last_completed_ms
            return {
                "completed-rebalances-total": float(self.completed),
                "rebalancing": 1.0 if self.rebalancing else 0.0,
                "epoch": float(self.epoch),
                "rebalance-avg-time-ms": self.time.avg(now),
                "rebalance-max-time-ms": self.time.max(now),
                "time-since-last-rebalance-ms": math.inf if last is None else max(0.0, now - last),
            }

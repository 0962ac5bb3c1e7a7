"""Kafka's windowed rates (`*-rate`: per second over the last `metrics.sample.window.ms` x samples).

Kafka's `Rate` keeps samples of a counter inside a 30 s window by default. Here the samples
are the counter's values at each scrape: the rate is the increase over the oldest sample still
inside the window, per second. The first scrape of a counter has no earlier sample: 0.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Hashable

WINDOW_S = 30.0


class Rates:
    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: dict[Hashable, deque[tuple[float, float]]] = {}
        self._lock = threading.Lock()

    def rate(self, key: Hashable, total: float, now: float | None = None) -> float:
        """Record `total` for `key` (a counter that only grows) and return its rate per second."""
        now = time.monotonic() if now is None else now
        with self._lock:
            samples = self._samples.setdefault(key, deque())
            if samples and total < samples[-1][1]:  # a restarted task: its counter starts over
                samples.clear()
            samples.append((now, total))
            while len(samples) > 2 and now - samples[1][0] >= self.window_s:
                samples.popleft()
            first_t, first_total = samples[0]
            return (total - first_total) / (now - first_t) if now > first_t else 0.0

    def keep(self, keys: set[Hashable]) -> None:
        """Forget the counters not in `keys` (tasks that are gone)."""
        with self._lock:
            for key in [k for k in self._samples if k not in keys]:
                del self._samples[key]

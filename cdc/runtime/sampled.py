"""Kafka's sampled statistics (`org.apache.kafka.common.metrics.stats` Avg, Max, Frequencies) and their window.

A Kafka sensor keeps `metrics.num.samples` (2) samples of `metrics.sample.window.ms` (30 s):
a value goes into the current sample; when the current sample is a window old, the next one
starts (the oldest is reused); when read, a sample with no value for samples x window (60 s) is
reset. So a figure covers the values of the last 30 to 60 s, and one quiet minute forgets
everything. Kafka's rules for an empty window are kept: an average or a maximum is NaN, a
frequency 0.0. The window is Kafka's default; the worker keys that change it are not read
(cdc.runtime.unknown_keys).

`SampledStat` is one sensor's samples read as Avg, Max and, for a sensor recording 1.0 for a
success and 0.0 for a failure, as Kafka's `Frequencies.forBooleanValues` (the fraction of each,
0 to 1, which Kafka names `*-percentage`). Thread-safe: a task's thread records, a scrape reads.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

SAMPLE_WINDOW_MS = 30_000  # metrics.sample.window.ms
NUM_SAMPLES = 2  # metrics.num.samples


def now_ms() -> float:
    """The clock the samples use: monotonic, in milliseconds."""
    return time.monotonic() * 1000


@dataclass
class _Sample:
    start_ms: float
    last_event_ms: float
    count: int = 0
    total: float = 0.0
    max: float = -math.inf

    def reset(self, now: float) -> None:
        self.start_ms = self.last_event_ms = now
        self.count, self.total, self.max = 0, 0.0, -math.inf


class SampledStat:
    def __init__(self, window_ms: float = SAMPLE_WINDOW_MS, samples: int = NUM_SAMPLES) -> None:
        self.window_ms = window_ms
        self.samples = samples
        self._samples: list[_Sample] = []
        self._current = 0
        self._lock = threading.Lock()

    def record(self, value: float, now: float | None = None) -> None:
        """SampledStat.record: into the current sample, or the next one once the current is a window old."""
        now = now_ms() if now is None else now
        with self._lock:
            if not self._samples:
                self._samples.append(_Sample(now, now))
            sample = self._samples[self._current]
            if now - sample.start_ms >= self.window_ms:
                self._current = (self._current + 1) % self.samples
                if self._current >= len(self._samples):
                    sample = _Sample(now, now)
                    self._samples.append(sample)
                else:
                    sample = self._samples[self._current]
                    sample.reset(now)
            sample.count += 1
            sample.total += value
            sample.max = max(sample.max, value)
            sample.last_event_ms = now

    def _live(self, now: float | None) -> list[_Sample]:
        """purgeObsoleteSamples: the samples, those without a value for samples x window reset first."""
        now = now_ms() if now is None else now
        expire = self.samples * self.window_ms
        for sample in self._samples:
            if now - sample.last_event_ms >= expire:
                sample.reset(now)
        return self._samples

    def avg(self, now: float | None = None) -> float:
        """Kafka's Avg: the mean of the values in the window; NaN when there is none."""
        with self._lock:
            live = self._live(now)
            count = sum(s.count for s in live)
            return sum(s.total for s in live) / count if count else math.nan

    def max(self, now: float | None = None) -> float:
        """Kafka's Max: the largest value in the window; NaN when there is none."""
        with self._lock:
            live = [s for s in self._live(now) if s.count]
            return max(s.max for s in live) if live else math.nan

    def frequencies(self, now: float | None = None) -> tuple[float, float]:
        """Kafka's Frequencies.forBooleanValues: (fraction of 0.0 values, fraction of 1.0 values) in the
        window, each 0.0 when the window holds no value."""
        with self._lock:
            live = self._live(now)
            count = sum(s.count for s in live)
            if not count:
                return 0.0, 0.0
            true = sum(s.total for s in live)
            return (count - true) / count, true / count

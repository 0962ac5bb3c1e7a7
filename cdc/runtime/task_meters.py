"""Counters of a worker task's plugin calls, for Kafka Connect's source-task and sink-task metrics.

Kafka Connect's WorkerSourceTask/WorkerSinkTask record `source-record-poll-total`,
`poll-batch-{avg,max}-time-ms`, `sink-record-read-total` and `put-batch-{avg,max}-time-ms`
around the plugin's `poll()`/`put()` and the consumer's `poll()`. Here the worker wraps those
bound methods on the instances it builds (`meter_source`, `meter_sink`), so the task runners
stay as they are; the cost is two clock reads and a few integer adds per call, none per record.
Only the task's own thread writes a meter; a scrape reads plain ints.

`OffsetCommitMeter` is Kafka Connect's connector-task-metrics `offset-commit-*`: the task runners
record each offset commit themselves (WorkerSourceTask's flush or log transaction, WorkerSinkTask's
consumer commit), since a commit is not a plugin call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc.runtime.sampled import SampledStat


@dataclass
class CallTimer:
    """Calls of one method: how many, how many records they carried, and their durations."""

    calls: int = 0
    records: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0

    @property
    def avg_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0

    def wrap(self, fn: Callable[..., Any], count: Callable[[Any, tuple[Any, ...]], int]) -> Callable[..., Any]:
        """`fn` timed; `count(result, args)` says how many records the call carried."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = fn(*args, **kwargs)
            ms = (time.perf_counter() - started) * 1000
            self.calls += 1
            self.total_ms += ms
            if ms > self.max_ms:
                self.max_ms = ms
            self.records += count(result, args)
            return result

        return timed


def _returned(result: Any, args: tuple[Any, ...]) -> int:
    return len(result) if result else 0


def _given(result: Any, args: tuple[Any, ...]) -> int:
    return len(args[0]) if args and args[0] else 0


@dataclass
class SourceTaskMeter:
    """`SourceTask.poll()`: source-record-poll-total and poll-batch-*-time-ms."""

    poll: CallTimer


@dataclass
class SinkTaskMeter:
    """The consumer's poll (sink-record-read-total) and `SinkTask.put()` (put-batch-*-time-ms)."""

    read: CallTimer
    put: CallTimer


def meter_source(task: Any) -> SourceTaskMeter:
    """Wrap `task.poll` on the instance; returns its meter."""
    meter = SourceTaskMeter(CallTimer())
    task.poll = meter.poll.wrap(task.poll, _returned)
    return meter


def meter_sink(task: Any, consumer: Any) -> SinkTaskMeter:
    """Wrap `consumer.poll` and `task.put` on the instances; returns their meter."""
    meter = SinkTaskMeter(CallTimer(), CallTimer())
    consumer.poll = meter.read.wrap(consumer.poll, _returned)
    task.put = meter.put.wrap(task.put, _given)
    return meter


class OffsetCommitMeter:
    """Kafka's WorkerTask.TaskMetricsGroup.recordCommit: a successful commit's duration goes to the
    commit-time sensor (offset-commit-avg-time-ms, offset-commit-max-time-ms), every attempt to the
    completion sensor (offset-commit-success-percentage / -failure-percentage, fractions 0 to 1).
    All four over Kafka's sample window (cdc.runtime.sampled): NaN times and 0.0 fractions when no
    commit was attempted in the last 30 to 60 s. `attempts` and `failures` count since the task started."""

    def __init__(self) -> None:
        self.time = SampledStat()
        self.completion = SampledStat()
        self.attempts = 0
        self.failures = 0

    def record(self, duration_ms: float, success: bool, now: float | None = None) -> None:
        """One commit attempt; the task's thread (or its log-transaction writer) calls it."""
        if success:
            self.time.record(duration_ms, now)
        else:
            self.failures += 1
        self.completion.record(1.0 if success else 0.0, now)
        self.attempts += 1

    def values(self, now: float | None = None) -> dict[str, float]:
        """Kafka's attribute names -> their values as of `now` (cdc.runtime.sampled's clock)."""
        failure, success = self.completion.frequencies(now)
        return {
            "offset-commit-avg-time-ms": self.time.avg(now),
            "offset-commit-max-time-ms": self.time.max(now),
            "offset-commit-success-percentage": success,
            "offset-commit-failure-percentage": failure,
        }

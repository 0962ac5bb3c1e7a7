"""Optional automatic restart of FAILED tasks with exponential backoff.

Kafka Connect never restarts a failed task by itself, so users script restarts (Aiven's
`_aiven.restart.on.failure`, Strimzi's auto-restart). Here it is a worker setting, off by
default to keep Kafka Connect's behaviour: `task.restart.on.failure.enable`, with the delay
doubling from `task.restart.backoff.initial.ms` up to `task.restart.backoff.max.ms`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc.runtime.task import ConnectorTaskId


@dataclass
class _Attempts:
    count: int = 0
    due_at: float | None = None
    restarted_at: float = 0.0


@dataclass
class TaskRestartBackoff:
    enabled: bool = False
    initial_ms: int = 1000
    max_ms: int = 60000
    clock: Callable[[], float] = time.monotonic
    _tasks: dict[ConnectorTaskId, _Attempts] = field(default_factory=dict)

    @classmethod
    def from_worker_config(cls, config: Any) -> TaskRestartBackoff:
        return cls(
            config.get("task.restart.on.failure.enable"),
            config.get("task.restart.backoff.initial.ms"),
            config.get("task.restart.backoff.max.ms"),
        )

    def delay_ms(self, attempt: int) -> int:
        """Delay before restart number `attempt` (1-based): initial, 2x, 4x, ... capped at max."""
        return int(min(self.max_ms, self.initial_ms * 2 ** max(0, attempt - 1)))

    def due(self, failed: Mapping[ConnectorTaskId, bool]) -> list[ConnectorTaskId]:
        """Tasks whose restart is due now; schedules newly seen failures."""
        if not self.enabled:
            return []
        now = self.clock()
        out = []
        for id, is_failed in failed.items():
            a = self._tasks.setdefault(id, _Attempts())
            if not is_failed:
                # Healthy for longer than the longest delay: the next failure starts over.
                if a.count and a.due_at is None and now - a.restarted_at > self.max_ms / 1000:
                    a.count = 0
                continue
            if a.due_at is None:
                a.count += 1
                a.due_at = now + self.delay_ms(a.count) / 1000
            elif now >= a.due_at:
                a.due_at = None
                a.restarted_at = now
                out.append(id)
        return out

    def attempts(self, id: ConnectorTaskId) -> int:
        a = self._tasks.get(id)
        return a.count if a else 0

    def forget(self, id: ConnectorTaskId) -> None:
        self._tasks.pop(id, None)

    def forget_connector(self, connector: str) -> None:
        for id in [i for i in self._tasks if i.connector == connector]:
            del self._tasks[id]

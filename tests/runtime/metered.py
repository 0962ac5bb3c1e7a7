"""A test source that reports metrics the way a plugin should: counters on the hot path, a supplier."""

from __future__ import annotations

import threading

from cdc.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Task, TaskMetrics


class MeteredSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def task_class(self) -> type[Task]:
        return MeteredTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()


class MeteredTask(SourceTask):
    """Counts polls in a plain int (the cheap hot path) and reports through a supplier."""

    instances: list[MeteredTask] = []

    def start(self, props: dict[str, str]) -> None:
        self.name = props["name"]
        self.instances.append(self)
        self.polls = 0
        self.stopped = threading.Event()
        metrics = TaskMetrics.of(self.context)
        metrics.set("Connected", True)
        metrics.register(lambda: {"TotalNumberOfEventsSeen": self.polls, "RowsScanned": {"db.t": 3}})

    def poll(self) -> list[SourceRecord] | None:
        self.polls += 1
        self.stopped.wait(0.02)
        return None

    def stop(self) -> None:
        self.stopped.set()

"""Test connectors whose Connector instance and tasks fail on demand."""

from __future__ import annotations

import os
import threading
import time
from typing import ClassVar

from cdc.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceRecord, SourceTask, Task
from cdc.api.errors import ConnectException

CONTROLLED_DEF = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH, documentation="Where records go.")
    .define("db.password", ConfigType.PASSWORD, "", documentation="A secret that REST output must hide.")
    .define("task.count", ConfigType.INT, 1, documentation="How many tasks to ask for (capped by tasks.max).")
    .define("fail.start", ConfigType.BOOLEAN, False, documentation="Connector.start() raises, like a bad password.")
    .define("task.failures", ConfigType.INT, 0, documentation="Each task's first n polls raise.")
    .define("witness.file", ConfigType.STRING, "", documentation="Append `start|stop <task> <pid> <time>` lines.")
)


def witness(path: str, event: str, key: str) -> None:
    """A per-task record of when it ran where, written by the task itself (O_APPEND lines are atomic)."""
    if path:
        with open(path, "a") as f:
            f.write(f"{event} {key} {os.getpid()} {time.time():.6f}\n")


class ControlledSource(SourceConnector):
    """The live instance per connector name is kept so a test can call context.raise_error."""

    instances: ClassVar[dict[str, ControlledSource]] = {}

    def start(self, props: dict[str, str]) -> None:
        c = CONTROLLED_DEF.parse(props)
        if c["fail.start"]:
            raise ConnectException("Access denied for user 'cdc' (using password: YES): check db.password")
        self.props = props
        self.count = c["task.count"]
        ControlledSource.instances[props["name"]] = self

    def task_class(self) -> type[Task]:
        return ControlledTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.props, "task.index": str(i)} for i in range(min(self.count, max_tasks))]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return CONTROLLED_DEF


class ControlledTask(SourceTask):
    """Emits one record per poll; fails its first `task.failures` polls across restarts."""

    failures_left: ClassVar[dict[str, int]] = {}
    lock = threading.Lock()

    def start(self, props: dict[str, str]) -> None:
        c = CONTROLLED_DEF.parse(props)
        self.key = f"{props['name']}-{props['task.index']}"
        self.topic = c["topic"]
        with ControlledTask.lock:
            ControlledTask.failures_left.setdefault(self.key, c["task.failures"])
        self.stopped = threading.Event()
        self.witness = c["witness.file"]
        witness(self.witness, "start", self.key)
        stored = self.context.offset_storage_reader().offset({"task": self.key})
        self.n = stored["n"] if stored else 0

    def poll(self) -> list[SourceRecord] | None:
        with ControlledTask.lock:
            if ControlledTask.failures_left.get(self.key, 0) > 0:
                ControlledTask.failures_left[self.key] -= 1
                raise RuntimeError(f"task {self.key} lost its source connection")
        if self.stopped.wait(0.05) or self.n >= 5:
            return None
        self.n += 1
        return [SourceRecord({"task": self.key}, {"n": self.n}, self.topic, None, None, None, None, f"r{self.n}")]

    def stop(self) -> None:
        self.stopped.set()
        witness(self.witness, "stop", self.key)

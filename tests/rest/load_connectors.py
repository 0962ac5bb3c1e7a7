"""Test connectors for load on the embedded log: sources that write as fast as they can, and a sink
that appends every value it receives to a file (readable from any process, so it also works
with `task.isolation=process`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TextIO

from cdc.api import (
    ConfigDef,
    ConfigType,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    TopicPartition,
)

LOAD_DEF = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH, documentation="Where records go.")
    .define("count", ConfigType.INT, 500, documentation="Records per task, then the task idles.")
    .define("batch", ConfigType.INT, 20, documentation="Records per poll.")
    .define("task.count", ConfigType.INT, 1, documentation="How many tasks to ask for (capped by tasks.max).")
)


def load_value(connector: str, task: int, n: int) -> str:
    """The n-th value (from 1) of a task: what the sink must receive once per record."""
    return f"{connector}/{task}/{n}"


class LoadSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props
        self.count = LOAD_DEF.parse(props)["task.count"]

    def task_class(self) -> type[Task]:
        return LoadTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.props, "task.index": str(i)} for i in range(min(self.count, max_tasks))]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return LOAD_DEF


class LoadTask(SourceTask):
    """`count` string records in polls of `batch`, each with the offset that resumes after it."""

    def start(self, props: dict[str, str]) -> None:
        c = LOAD_DEF.parse(props)
        self.connector, self.index = props["name"], int(props["task.index"])
        self.topic, self.count, self.batch = c["topic"], c["count"], c["batch"]
        self.partition = {"task": f"{self.connector}-{self.index}"}
        stored = self.context.offset_storage_reader().offset(self.partition)
        self.n = stored["n"] if stored else 0
        self.stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self.n >= self.count:
            self.stopped.wait(0.1)
            return None
        out = []
        for n in range(self.n + 1, min(self.n + self.batch, self.count) + 1):
            value = load_value(self.connector, self.index, n)
            out.append(SourceRecord(self.partition, {"n": n}, self.topic, None, None, None, None, value))
        self.n += len(out)
        return out

    def stop(self) -> None:
        self.stopped.set()


SINK_DEF = ConfigDef().define("file", ConfigType.STRING, importance=Importance.HIGH, documentation="Append here.")


class LineFileSink(SinkConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def task_class(self) -> type[Task]:
        return LineFileSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return SINK_DEF


class LineFileSinkTask(SinkTask):
    """Each value as a line; durable before its offsets are committed (flush)."""

    def start(self, props: dict[str, str]) -> None:
        self.output: TextIO = open(SINK_DEF.parse(props)["file"], "a", encoding="utf-8")  # noqa: SIM115

    def put(self, records: list[SinkRecord]) -> None:
        for r in records:
            self.output.write(f"{r.value}\n")

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        self.output.flush()
        os.fsync(self.output.fileno())

    def stop(self) -> None:
        self.output.close()

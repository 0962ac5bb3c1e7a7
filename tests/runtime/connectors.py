"""Test-only connectors, written against cdc.api like any plugin."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from cdc.api import (
    ConfigDef,
    ConfigType,
    Importance,
    Schema,
    SchemaBuilder,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Struct,
    Task,
    TopicPartition,
)

VALUE_SCHEMA = (
    SchemaBuilder.struct()
    .name("gen.Value")
    .field("id", Schema.INT32_SCHEMA)
    .field("name", Schema.OPTIONAL_STRING_SCHEMA)
    .build()
)
KEY_SCHEMA = SchemaBuilder.struct().name("gen.Key").field("id", Schema.INT32_SCHEMA).build()

GEN_DEF = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH)
    .define("count", ConfigType.INT, 100)
    .define("bad.every", ConfigType.INT, 0, documentation="Every n-th record carries a value that fails conversion.")
)


class GeneratorSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def task_class(self) -> type[Task]:
        return GeneratorTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return GEN_DEF


class GeneratorTask(SourceTask):
    committed_records: list[SourceRecord] = []
    commits = 0

    def start(self, props: dict[str, str]) -> None:
        c = GEN_DEF.parse(props)
        self.topic, self.count, self.bad_every = c["topic"], c["count"], c["bad.every"]
        stored = self.context.offset_storage_reader().offset({"gen": self.topic})
        self.next = stored["n"] if stored else 0
        self.stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self.next >= self.count:
            self.stopped.wait(0.05)
            return None
        out = []
        for n in range(self.next, min(self.next + 10, self.count)):
            value = Struct(VALUE_SCHEMA).put("id", n).put("name", f"n{n}")
            schema = VALUE_SCHEMA
            if self.bad_every and n % self.bad_every == 0:
                # The schema says int32, the value is a string: the value converter must fail.
                schema, value = Schema.INT32_SCHEMA, f"bad-{n}"  # type: ignore[assignment]
            out.append(
                SourceRecord(
                    {"gen": self.topic},
                    {"n": n + 1},
                    self.topic,
                    None,
                    KEY_SCHEMA,
                    Struct(KEY_SCHEMA).put("id", n),
                    schema,
                    value,
                )
            )
        self.next = min(self.next + 10, self.count)
        return out

    def commit_record(self, record, metadata) -> None:
        GeneratorTask.committed_records.append(record)

    def commit(self) -> None:
        GeneratorTask.commits += 1

    def stop(self) -> None:
        self.stopped.set()


class CollectingSink(SinkConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def task_class(self) -> type[Task]:
        return CollectingTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()


class CollectingTask(SinkTask):
    received: list[SinkRecord] = []
    lock = threading.Lock()

    def start(self, props: dict[str, str]) -> None:
        pass

    def put(self, records: list[SinkRecord]) -> None:
        with CollectingTask.lock:
            CollectingTask.received.extend(records)

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        pass

    def stop(self) -> None:
        pass

"""A source that emits 0, 1, 2, ... in batches, so loss and duplicates are easy to see."""

from __future__ import annotations

import threading

from cdc.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceRecord, SourceTask, Task
from tests.rest.connectors import witness

SEQ_DEF = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH)
    .define("count", ConfigType.INT, 60)
    .define("batch", ConfigType.INT, 5)
    .define("pause.ms", ConfigType.INT, 300, documentation="Idle time before each batch (no open transaction).")
    .define("witness.file", ConfigType.STRING, "")
)


class SequenceSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def task_class(self) -> type[Task]:
        return SequenceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return SEQ_DEF


class SequenceTask(SourceTask):
    def start(self, props: dict[str, str]) -> None:
        c = SEQ_DEF.parse(props)
        self.topic, self.count, self.batch = c["topic"], c["count"], c["batch"]
        self.pause, self.witness = c["pause.ms"] / 1000, c["witness.file"]
        self.stopped = threading.Event()
        stored = self.context.offset_storage_reader().offset({"seq": self.topic})
        self.next = stored["next"] if stored else 0
        witness(self.witness, "start", f"seq@{self.next}")

    def poll(self) -> list[SourceRecord] | None:
        if self.stopped.wait(self.pause) or self.next >= self.count:
            return None
        out = []
        for n in range(self.next, min(self.next + self.batch, self.count)):
            out.append(SourceRecord({"seq": self.topic}, {"next": n + 1}, self.topic, 0, None, None, None, str(n)))
        self.next = min(self.next + self.batch, self.count)
        witness(self.witness, "polled", f"seq@{self.next}")
        return out

    def commit(self) -> None:
        witness(self.witness, "committed", f"seq@{self.next}")

    def stop(self) -> None:
        self.stopped.set()

"""A test connector whose errors quote its config values, as drivers' errors often do."""

from __future__ import annotations

from cdc.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceRecord, SourceTask, Task
from cdc.api.errors import ConnectException

QUOTING_DEF = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH, documentation="Where records go.")
    .define("host", ConfigType.STRING, "", documentation="Quoted by every failure below.")
    .define("fail.start", ConfigType.BOOLEAN, False, documentation="Connector.start() raises, quoting host.")
    .define("task.fail", ConfigType.BOOLEAN, False, documentation="The task's first poll raises, quoting host.")
    .define("history.file", ConfigType.STRING, "", documentation="A file the task appends to, like a schema history.")
)


class QuotingSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        c = QUOTING_DEF.parse(props)
        if c["fail.start"]:
            raise ConnectException(f"cannot connect to {c['host']}: check host")
        self.props = props

    def task_class(self) -> type[Task]:
        return QuotingTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return QUOTING_DEF


class QuotingTask(SourceTask):
    def start(self, props: dict[str, str]) -> None:
        self.c = QUOTING_DEF.parse(props)
        if self.c["history.file"]:
            with open(self.c["history.file"], "a") as f:
                f.write("{}\n")

    def poll(self) -> list[SourceRecord] | None:
        if self.c["task.fail"]:
            raise RuntimeError(f"lost the connection to {self.c['host']}")
        return None

    def stop(self) -> None:
        pass

"""A test connector that quotes its whole config in its errors, as drivers' errors often quote a
DSN or a login: whatever the runtime shows of those errors must still hide the secrets."""

from __future__ import annotations

import time
from typing import Any

from cdc.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceRecord, SourceTask, Task
from cdc.api.errors import ConfigException, ConnectException


def _api_secret(name: str, value: Any) -> None:
    """A validator that quotes the value it refuses, as many do."""
    if value and not str(value).startswith("sk_"):
        raise ConfigException(f"Invalid value {value} for configuration {name}: an API secret starts with sk_", name)


ECHO_DEF = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH, documentation="Where records go.")
    .define("api.secret", ConfigType.STRING, "", _api_secret, documentation="Secret by its name, declared STRING.")
    .define("fail.start", ConfigType.BOOLEAN, False, documentation="start() raises, quoting the config.")
    .define("task.fail", ConfigType.BOOLEAN, False, documentation="The task's first poll raises, quoting the config.")
)


class EchoingSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        if ECHO_DEF.parse(props)["fail.start"]:
            raise ConnectException(f"cannot log in with {dict(props)}")
        self.props = props

    def task_class(self) -> type[Task]:
        return EchoingTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ECHO_DEF


class EchoingTask(SourceTask):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def poll(self) -> list[SourceRecord] | None:
        if ECHO_DEF.parse(self.props)["task.fail"]:
            raise RuntimeError(f"lost the session opened with {self.props}")
        time.sleep(0.05)
        return None

    def stop(self) -> None:
        pass

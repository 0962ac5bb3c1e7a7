"""FileStreamSinkConnector: appends each record's value as a line to a file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

from cdc.api import (
    ConfigDef,
    ConfigType,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)
from cdc_file import __version__

FILE_CONFIG = "file"

CONFIG_DEF = ConfigDef().define(
    FILE_CONFIG, ConfigType.STRING, None, None, Importance.HIGH, "Destination filename; standard output if unset."
)


class FileStreamSinkConnector(SinkConnector):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        CONFIG_DEF.parse(props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Every task appends to the same file; one keeps lines of a partition in order.
        return [dict(self._props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return CONFIG_DEF


class FileStreamSinkTask(SinkTask):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        filename = CONFIG_DEF.parse(props)[FILE_CONFIG]
        self.output: TextIO = open(filename, "a", encoding="utf-8") if filename else None  # noqa: SIM115

    def put(self, records: list[SinkRecord]) -> None:
        for r in records:
            line = "" if r.value is None else (r.value if isinstance(r.value, str) else str(r.value))
            if self.output is None:
                print(line)
            else:
                self.output.write(line + "\n")

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        # Consumed offsets are committed only after this returns, so make the lines durable.
        if self.output is not None:
            self.output.flush()
            os.fsync(self.output.fileno())

    def stop(self) -> None:
        if self.output is not None:
            self.output.close()

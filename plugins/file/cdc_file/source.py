"""FileStreamSourceConnector: one record per line of a file, resumable by byte position."""

from __future__ import annotations

import logging
import threading
import time
from typing import BinaryIO

from cdc.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    Importance,
    NonEmptyString,
    Range,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from cdc_file import __version__

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
TOPIC_CONFIG = "topic"
BATCH_SIZE_CONFIG = "batch.size"
POLL_WAIT_CONFIG = "poll.wait.ms"

FILENAME_FIELD = "filename"
POSITION_FIELD = "position"

CONFIG_DEF = (
    ConfigDef()
    .define(
        FILE_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="Source filename.",
    )
    .define(
        TOPIC_CONFIG,
        ConfigType.LIST,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="The topic to publish data to.",
    )
    .define(
        BATCH_SIZE_CONFIG,
        ConfigType.INT,
        2000,
        Range.at_least(1),
        Importance.LOW,
        "The maximum number of records the source task can read from the file each time it is polled.",
    )
    .define(
        POLL_WAIT_CONFIG,
        ConfigType.INT,
        1000,
        Range.at_least(1),
        Importance.LOW,
        "How long poll() waits for new lines at the end of the file.",
    )
)


class FileStreamSourceConnector(SourceConnector):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        parsed = CONFIG_DEF.parse(props)
        if len(parsed[TOPIC_CONFIG]) != 1:
            raise ConfigException(
                "'topic' in FileStreamSourceConnector configuration requires exactly one topic.", TOPIC_CONFIG
            )
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # One file is one stream: a single task, whatever tasks.max says.
        return [dict(self._props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return CONFIG_DEF


class FileStreamSourceTask(SourceTask):
    def __init__(self) -> None:
        super().__init__()
        # Made here, not in start(): the runtime may call stop() before start() has returned,
        # and that stop must still end the task's polling.
        self._stop = threading.Event()

    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        parsed = CONFIG_DEF.parse(props)
        self.filename: str = parsed[FILE_CONFIG]
        self.topic: str = parsed[TOPIC_CONFIG][0]
        self.batch_size: int = parsed[BATCH_SIZE_CONFIG]
        self.poll_wait = parsed[POLL_WAIT_CONFIG] / 1000
        self.stream: BinaryIO | None = None
        self.position = 0
        self.buffer = b""

    def _partition(self) -> dict[str, str]:
        return {FILENAME_FIELD: self.filename}

    def _open(self) -> bool:
        try:
            self.stream = open(self.filename, "rb")  # noqa: SIM115 - held open across polls
        except FileNotFoundError:
            log.warning(
                "Couldn't find file %s for FileStreamSourceTask, sleeping to wait for it to be created", self.filename
            )
            return False
        stored = self.context.offset_storage_reader().offset(self._partition())
        if stored is not None:
            position = stored.get(POSITION_FIELD)
            if not isinstance(position, int):
                raise ConfigException(f"Offset position is the incorrect type: {type(position).__name__}")
            log.debug("Found previous offset, trying to skip to file offset %d", position)
            self.stream.seek(position)
            self.position = position
        return True

    def poll(self) -> list[SourceRecord] | None:
        if self._stop.is_set():
            if self.stream is not None:
                self.stream.close()
                self.stream = None
            return None
        if self.stream is None and not self._open():
            self._stop.wait(self.poll_wait)
            return None
        assert self.stream is not None
        records: list[SourceRecord] = []
        while len(records) < self.batch_size:
            chunk = self.stream.readline()
            if not chunk:
                break
            self.buffer += chunk
            if not self.buffer.endswith(b"\n"):
                continue  # a line still being written: wait for its newline
            line = self.buffer[:-1].rstrip(b"\r")
            self.position += len(self.buffer)
            self.buffer = b""
            records.append(
                SourceRecord(
                    self._partition(),
                    {POSITION_FIELD: self.position},
                    self.topic,
                    None,
                    None,
                    None,
                    Schema.STRING_SCHEMA,
                    line.decode("utf-8", errors="replace"),
                    int(time.time() * 1000),
                )
            )
        if not records:
            self._stop.wait(self.poll_wait)
            return None
        return records

    def stop(self) -> None:
        # Called from another thread while poll() may be reading: only signal here.
        self._stop.set()

"""The `file` and `kafka` signal channels (Debezium's FileSignalChannel and KafkaSignalChannel).

The `source` channel has no reader here: its signals are rows of the signal table that the
connector's own binlog/WAL stream hands over (see each connector's incremental module).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from cdc.api.signals import SignalLog, signal_log
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.record import SignalError, SignalRecord

log = logging.getLogger(__name__)


class FileSignalChannel:
    """`signal.file`: one `{"id","type","data"}` JSON document per line; the file is emptied once read."""

    name = "file"

    def __init__(self, path: str) -> None:
        self.path = path

    def read(self) -> list[SignalRecord]:
        try:
            with open(self.path, "r+", encoding="utf-8") as f:
                text = f.read()
                if not text:
                    return []
                f.seek(0)
                f.truncate()
        except FileNotFoundError:
            return []
        except OSError as e:
            log.warning("signal.file %s cannot be read or emptied (%s); its signals wait", self.path, e)
            return []
        out = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                out.append(SignalRecord.from_json(line, self.name))
            except SignalError as e:
                log.warning("%s", e)
        return out


class KafkaSignalChannel:
    """`signal.kafka.topic`: records keyed by `topic.prefix` (others are skipped, as Debezium does)."""

    name = "kafka"

    def __init__(self, log_: SignalLog, topic_prefix: str) -> None:
        self.log = log_
        self.topic_prefix = topic_prefix

    def read(self) -> list[SignalRecord]:
        out = []
        for key, value in self.log.poll():
            name = key.decode("utf-8", "replace") if key is not None else None
            if name is not None and name.startswith('"') and name.endswith('"'):
                name = name[1:-1]  # a JSON-string key from a JsonConverter-keyed producer
            if name != self.topic_prefix:
                log.debug("Signal on %s with key %r is for another connector; skipped", self.log.topic, name)
                continue
            if value is None:
                continue
            try:
                out.append(SignalRecord.from_json(value, self.name))
            except SignalError as e:
                log.warning("%s", e)
        return out

    def close(self) -> None:
        self.log.close()


def open_channels(config: SignalConfig, context: Any, topic_prefix: str) -> list[Any]:
    """The polled channels enabled by `signal.enabled.channels` (file, kafka)."""
    channels: list[Any] = []
    if "file" in config.channels:
        channels.append(FileSignalChannel(os.path.expanduser(config.file)))
    if "kafka" in config.channels:
        found = signal_log(context, config.kafka_topic)
        if found is None:
            log.warning(
                "signal.enabled.channels has kafka but this runtime offers no signal topic reader; "
                "signals on %s are not read (use the source or file channel)",
                config.kafka_topic,
            )
        else:
            channels.append(KafkaSignalChannel(found, topic_prefix))
    return channels

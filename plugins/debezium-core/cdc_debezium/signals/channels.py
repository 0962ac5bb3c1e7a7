"""The `file` and `kafka` signal channels (Debezium's FileSignalChannel and KafkaSignalChannel).

The `source` channel has no reader here: its signals are rows of the signal table that the
connector's own binlog/WAL stream hands over (see each connector's incremental module).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from typing import Any

from cdc.api.signals import SignalLog, signal_log
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.record import SignalError, SignalRecord

log = logging.getLogger(__name__)


class FileSignalChannel:
    """`signal.file`: one `{"id","type","data"}` JSON document per line; the file is emptied once read.

    Emptying is what makes the channel dangerous when `signal.file` names someone else's file (a
    REST caller pointing it at another connector's schema history emptied it, and each line went
    to the log as a bad signal). So the channel empties only a signal file: a regular file, not
    a symbolic link (opened with O_NOFOLLOW) nor one with other hard links, with at least one line
    that is a signal document. A file that is not one is left as it is, its content never logged,
    with one warning until it becomes one; lines that are not signals are reported by number only."""

    name = "file"

    def __init__(self, path: str) -> None:
        self.path = path
        self._refused: str | None = None  # why the file is left alone, warned once

    def read(self) -> list[SignalRecord]:
        try:
            fd = os.open(self.path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return []
        except OSError as e:
            reason = "it is a symbolic link" if e.errno == errno.ELOOP else f"it cannot be opened ({e.strerror})"
            return self._leave(reason)
        with os.fdopen(fd, "r+", encoding="utf-8", errors="replace") as f:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return self._leave("it is not a regular file")
            if info.st_nlink > 1:
                return self._leave(f"it has {info.st_nlink} hard links (another name for the same file)")
            text = f.read()
            if not text:
                self._refused = None
                return []
            out: list[SignalRecord] = []
            bad: list[int] = []
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    out.append(SignalRecord.from_json(line, self.name))
                except SignalError:
                    bad.append(number)
            if not out:
                return self._leave(f"no line of it is a signal document (line {bad[0]} is not)")
            f.seek(0)
            f.truncate()
        self._refused = None
        if bad:
            # Line numbers only: a line that is not a signal may hold anything, secrets included.
            log.warning(
                'signal.file %s: line(s) %s are not signal JSON documents ({"id", "type", "data"}); ignored',
                self.path,
                ", ".join(map(str, bad[:20])) + (" …" if len(bad) > 20 else ""),
            )
        return out

    def _leave(self, reason: str) -> list[SignalRecord]:
        if reason != self._refused:
            log.warning(
                "signal.file %s is not a signal file (%s): it is neither read nor emptied; point signal.file at "
                "a file of its own holding one signal JSON document per line",
                self.path,
                reason,
            )
            self._refused = reason
        return []


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

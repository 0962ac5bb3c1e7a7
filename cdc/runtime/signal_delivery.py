"""Deliver a Debezium signal to a source connector through the channel its config enables.

Shared by `cdc signal job.yaml ...` (cdc.jobs.signals) and the REST action
`POST /connectors/{name}/signals` (cdc.rest.resources.signals): a row of the signal table
(`signal.data.collection`, when the `source` channel is on), else a line of `signal.file`,
else a record on `signal.kafka.topic` in the worker's log keyed by `topic.prefix` (what
Debezium's KafkaSignalChannel reads). The signal's shape is Debezium's: `id`, `type` and a
JSON `data` (cdc_debezium/signals).

The signal table is written with the connector plugin's own driver and TLS settings: a plugin
registers a writer under the `cdc.signal_tables` entry point group, named by its connector
class (`cdc_mysql.connector.MySqlConnector`), a callable `(config, schema, table, (id, type,
data)) -> None`. The core never imports a plugin; a connector without a writer cannot take
signals through the source channel from here (the file and kafka channels still work).

What is refused before anything is written (issue 33), as one line naming the field:
- a signal that does not fit Debezium's signal table (`id VARCHAR(42)`, `type VARCHAR(32)`,
  `data VARCHAR(2048)`, the JSON text of `data`), or whose id holds a control character, whatever
  the channel: the same signal must fit whichever channel carries it, and the database's own
  "data too long" would otherwise come back as a grants problem;
- a channel the connector does not read (`signal.enabled.channels`, default `source`): written
  anyway, the signal would sit where nothing reads it;
- the file channel without an absolute `signal.file` in a worker (the REST action): the
  connector's default `file-signals.txt` and any relative name are the worker's working
  directory, which is nobody's signal file. `cdc signal` may name a relative one (the job runs
  where its user starts it), and says which absolute path it wrote.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from cdc.api.errors import ConfigException, ConnectException

SIGNAL_TYPES = ("execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log")
SNAPSHOT_TYPES = ("incremental", "blocking")
CHANNELS = ("source", "file", "kafka")  # the ones a signal can be sent through from here
WRITER_GROUP = "cdc.signal_tables"
# Debezium's signal table: id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL.
SIGNAL_COLUMN_LIMITS = {"id": 42, "type": 32, "data": 2048}

TableWriter = Callable[[Mapping[str, str], str, str, tuple[Any, ...]], None]


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    data: dict[str, Any] | None

    def data_text(self) -> str | None:
        return None if self.data is None else json.dumps(self.data)

    def document(self) -> bytes:
        return json.dumps({"id": self.id, "type": self.type, "data": self.data}).encode()

    def problem(self) -> tuple[str, str] | None:
        """(field, why) when this signal does not fit Debezium's signal table (SIGNAL_COLUMN_LIMITS)
        or its id holds a control character; None when it can be sent."""
        for field, text in (("id", self.id), ("type", self.type), ("data", self.data_text() or "")):
            limit = SIGNAL_COLUMN_LIMITS[field]
            if len(text) > limit:
                what = "the JSON text of 'data'" if field == "data" else f"'{field}'"
                return field, (
                    f"{what} is {len(text)} characters; Debezium's signal table holds at most {limit} "
                    f"({field} VARCHAR({limit})): send a shorter one"
                )
        if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF for c in self.id):
            return "id", "'id' holds a control character or a lone surrogate: use printable text"
        return None

    def check(self) -> None:
        """ConfigException naming the field when the signal cannot be sent (`problem`)."""
        problem = self.problem()
        if problem is not None:
            field, why = problem
            raise ConfigException(f"Signal {why}", field)


def execute_snapshot(
    tables: list[str], kind: str = "incremental", condition: str | None = None, signal_id: str | None = None
) -> Signal:
    """Debezium's `execute-snapshot`: `data-collections`, `type`, and the filter as `additional-conditions`."""
    if not tables:
        raise ConfigException("--tables: name at least one table (db.table or schema.table)", "tables")
    if kind.lower() not in SNAPSHOT_TYPES:
        raise ConfigException(f"--type {kind}: use incremental or blocking", "type", kind)
    data: dict[str, Any] = {"data-collections": tables, "type": kind.upper()}
    if condition:
        data["additional-conditions"] = [{"data-collection": t, "filter": condition} for t in tables]
    return Signal(signal_id or str(uuid.uuid4()), "execute-snapshot", data)


def enabled_channels(config: Mapping[str, str]) -> list[str]:
    """The connector's `signal.enabled.channels` (Debezium's default: source), lower case."""
    raw = config.get("signal.enabled.channels") or "source"
    return [c.strip().lower() for c in raw.split(",") if c.strip()]


def check_channel(config: Mapping[str, str], channel: str) -> None:
    """ConfigException naming the connector's channels unless it reads signals from `channel`."""
    if channel not in CHANNELS:
        raise ConfigException(f"channel {channel!r}: use source, file or kafka", "channel", channel)
    channels = enabled_channels(config)
    if channel not in channels:
        name = config.get("name")
        who = f"Connector {name!r}" if name else "The connector"
        raise ConfigException(
            f"{who} does not read signals from the {channel} channel: its signal.enabled.channels is "
            f"{','.join(channels)}; send the signal through one of those (or leave the channel out), or add "
            f"{channel} to signal.enabled.channels",
            "channel",
            channel,
        )


def channel_of(config: Mapping[str, str]) -> str:
    """The channel a signal for this connector config goes to: source, then file, then kafka (with
    read.only=true file or kafka first: the database is not written while another channel is on)."""
    channels = enabled_channels(config)
    read_only = str(config.get("read.only") or "").strip().lower() == "true"
    if read_only and ("file" in channels or "kafka" in channels):
        channels = [c for c in channels if c != "source"]
    if "source" in channels and config.get("signal.data.collection"):
        return "source"
    for channel in ("file", "kafka"):
        if channel in channels:
            return channel
    raise ConfigException(
        "The connector enables no signal channel: set signal.data.collection (the source channel, which "
        "incremental snapshots also need for their watermarks), or signal.enabled.channels=file or kafka",
        "signal.enabled.channels",
    )


def table_writer_for(connector_class: type) -> TableWriter | None:
    """The plugin's signal-table writer for `connector_class`, from the `cdc.signal_tables` entry points."""
    name = f"{connector_class.__module__}.{connector_class.__qualname__}"
    for ep in metadata.entry_points(group=WRITER_GROUP):
        if ep.name == name:
            writer: TableWriter = ep.load()
            return writer
    return None


def deliver(
    config: Mapping[str, str],
    signal: Signal,
    *,
    channel: str | None = None,
    table_writer: TableWriter | None,
    topic_log: Callable[[], AbstractContextManager[Any]],
    relative_file: bool = False,
) -> str:
    """Writes `signal` to the connector's channel (or `channel`, which the connector must read);
    returns where it went, for the user. Nothing is written when the signal or channel is refused.

    `topic_log` returns a context manager over the worker's TopicLog (`open_log(...)` for a tool,
    `nullcontext(worker.log)` in a worker); it is called only for the kafka channel.
    `relative_file`: whether a relative `signal.file` may be written (from the current directory);
    a worker passes False, its working directory being no connector's signal file."""
    signal.check()
    if channel is not None:
        check_channel(config, channel)
    channel = channel or channel_of(config)
    if channel == "source":
        return _to_table(config, signal, table_writer)
    if channel == "file":
        return _to_file(config, signal, relative_file)
    if channel == "kafka":
        return _to_topic(config, signal, topic_log)
    raise ConfigException(f"channel {channel}: use source, file or kafka", "channel", channel)


def _to_file(config: Mapping[str, str], signal: Signal, relative_file: bool) -> str:
    """One JSON line appended to `signal.file` (created owner-only when missing)."""
    name = config.get("signal.file")
    if not name or not name.strip():
        raise ConfigException(
            "signal.file is not set, so the connector reads file-signals.txt in its working directory: set "
            "signal.file to an absolute path (under the worker's state.dir) to send signals through the file channel",
            "signal.file",
        )
    path = Path(name).expanduser()
    if not path.is_absolute():
        if not relative_file:
            raise ConfigException(
                f"signal.file={name} is relative: the worker would write it into its working directory; set "
                "signal.file to an absolute path (under the worker's state.dir)",
                "signal.file",
                name,
            )
        path = path.absolute()
    line = signal.document() + b"\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as e:
        raise ConfigException(
            f"signal.file={path}: cannot append the signal ({e.strerror or type(e).__name__}): create its "
            "directory, or point signal.file at a writable file",
            "signal.file",
            str(path),
        ) from None
    return f"file {path}"


def _to_table(config: Mapping[str, str], signal: Signal, writer: TableWriter | None) -> str:
    table = config.get("signal.data.collection") or ""
    schema, _, name = table.rpartition(".")
    if not schema or not name:
        raise ConfigException(
            f"signal.data.collection={table!r}: name the table as <db>.<table> (MySQL) or <schema>.<table> "
            "(PostgreSQL)",
            "signal.data.collection",
            table,
        )
    if writer is None:
        raise ConfigException(
            f"connector.class={config.get('connector.class')!r} registers no signal-table writer; send the signal "
            "through signal.enabled.channels=file or kafka",
            "signal.enabled.channels",
        )
    try:
        writer(config, schema, name, (signal.id, signal.type, signal.data_text()))
    except ConfigException:
        raise
    except Exception as e:  # the driver's error (pymysql, psycopg), as one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ConnectException(
            f"Could not insert the signal into {table} ({type(e).__name__}: {first}); the source's database.user "
            "needs INSERT on the signal table (and DELETE for incremental.snapshot.watermarking.strategy="
            "insert_delete)"
        ) from None
    return f"signal table {table}"


def _to_topic(config: Mapping[str, str], signal: Signal, topic_log: Callable[[], AbstractContextManager[Any]]) -> str:
    from cdc.runtime.signal_log import TopicSignalLog

    prefix = config.get("topic.prefix") or ""
    topic = config.get("signal.kafka.topic") or f"{prefix}-signal"
    with topic_log() as log_:
        writer = TopicSignalLog(log_, topic, "cdc-signal-writer")
        try:
            writer.send(prefix.encode(), signal.document())
        finally:
            writer.close()
    return f"topic {topic} (key {prefix})"


def deliver_to_connector(herder: Any, name: str, signal: Signal, channel: str | None = None) -> tuple[str, str]:
    """The REST action's delivery: the connector's resolved config picks the channel; the kafka channel is
    the worker's own log. Returns (channel, where). Raises the herder's NotFoundError for an unknown name."""
    from contextlib import nullcontext

    signal.check()
    with herder._rest_lock():  # the running config (secrets resolved, not masked), read as the offsets calls do
        config = herder._resolve(herder._config(name))
    if channel is not None:
        check_channel(config, channel)
    chosen = channel or channel_of(config)
    writer = table_writer_for(herder.worker.connector_class(config)) if chosen == "source" else None
    where = deliver(
        config, signal, channel=chosen, table_writer=writer, topic_log=lambda: nullcontext(herder.worker.log)
    )
    return chosen, where

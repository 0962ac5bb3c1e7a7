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
"""

from __future__ import annotations

import json
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
WRITER_GROUP = "cdc.signal_tables"

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


def channel_of(config: Mapping[str, str]) -> str:
    """The channel a signal for this connector config goes to: source, then file, then kafka (with
    read.only=true file or kafka first: the database is not written while another channel is on)."""
    channels = [c.strip().lower() for c in (config.get("signal.enabled.channels") or "source").split(",")]
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
) -> str:
    """Writes `signal` to the connector's channel (or `channel`); returns where it went, for the user.

    `topic_log` returns a context manager over the worker's TopicLog (`open_log(...)` for a tool,
    `nullcontext(worker.log)` in a worker); it is called only for the kafka channel."""
    channel = channel or channel_of(config)
    if channel == "source":
        return _to_table(config, signal, table_writer)
    if channel == "file":
        path = Path(config.get("signal.file") or "file-signals.txt").expanduser()
        with path.open("a", encoding="utf-8") as f:
            f.write(signal.document().decode() + "\n")
        return f"file {path}"
    if channel == "kafka":
        return _to_topic(config, signal, topic_log)
    raise ConfigException(f"channel {channel}: use source, file or kafka", "channel", channel)


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

    with herder._rest_lock():  # the running config (secrets resolved, not masked), read as the offsets calls do
        config = herder._resolve(herder._config(name))
    chosen = channel or channel_of(config)
    writer = table_writer_for(herder.worker.connector_class(config)) if chosen == "source" else None
    where = deliver(
        config, signal, channel=chosen, table_writer=writer, topic_log=lambda: nullcontext(herder.worker.log)
    )
    return chosen, where

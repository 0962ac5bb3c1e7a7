"""Send a Debezium signal to a job's source connector through the channel the job enables.

The `cdc signal` command and REST clients use this: a row of the signal table
(`signal.data.collection`, when the `source` channel is on), else a line of `signal.file`,
else a record on `signal.kafka.topic` in the job's transport keyed by `topic.prefix` (what
Debezium's KafkaSignalChannel reads). The signal's shape is Debezium's: `id`, `type` and a JSON
`data` (cdc_debezium/signals).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc.api.errors import ConfigException, ConnectException
from cdc.jobs.spec import JobSpec, source_family

SNAPSHOT_TYPES = ("incremental", "blocking")


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


def channel_of(config: dict[str, str]) -> str:
    """The channel a signal for this connector config goes to: source, then file, then kafka."""
    channels = [c.strip().lower() for c in (config.get("signal.enabled.channels") or "source").split(",")]
    if "source" in channels and config.get("signal.data.collection"):
        return "source"
    for channel in ("file", "kafka"):
        if channel in channels:
            return channel
    raise ConfigException(
        "The job's source enables no signal channel: set signal.data.collection (the source channel, which "
        "incremental snapshots also need for their watermarks), or signal.enabled.channels=file or kafka",
        "signal.enabled.channels",
    )


def send(job: JobSpec, signal: Signal, channel: str | None = None) -> str:
    """Writes `signal` to the job's channel (or `channel`); returns where it went, for the user."""
    config = job.connector_config()
    channel = channel or channel_of(config)
    if channel == "source":
        return _to_table(job, config, signal)
    if channel == "file":
        path = Path(config.get("signal.file") or "file-signals.txt").expanduser()
        with path.open("a", encoding="utf-8") as f:
            f.write(signal.document().decode() + "\n")
        return f"file {path}"
    if channel == "kafka":
        return _to_topic(job, config, signal)
    raise ConfigException(f"--channel {channel}: use source, file or kafka", "channel", channel)


def _to_table(job: JobSpec, config: dict[str, str], signal: Signal) -> str:
    table = config.get("signal.data.collection") or ""
    schema, _, name = table.rpartition(".")
    if not schema or not name:
        raise ConfigException(
            f"signal.data.collection={table!r}: name the table as <db>.<table> (MySQL) or <schema>.<table> "
            "(PostgreSQL)",
            "signal.data.collection",
            table,
        )
    try:
        _insert(job, config, schema, name, (signal.id, signal.type, signal.data_text()))
    except ConfigException:
        raise
    except Exception as e:  # the driver's error (pymysql, psycopg), as one line
        raise ConnectException(
            f"Could not insert the signal into {table} ({type(e).__name__}: {e}); the source's database.user needs "
            "INSERT on the signal table (and DELETE for incremental.snapshot.watermarking.strategy=insert_delete)"
        ) from None
    return f"signal table {table}"


def _insert(job: JobSpec, config: dict[str, str], schema: str, name: str, values: tuple[Any, ...]) -> None:
    if source_family(config["connector.class"]) == "mysql":
        import pymysql

        from cdc.jobs.source_db import mysql_params

        quoted = ".".join("`" + p.replace("`", "``") + "`" for p in (schema, name))
        with pymysql.connect(**mysql_params(job.source, autocommit=True)) as conn, conn.cursor() as cur:
            cur.execute(f"INSERT INTO {quoted} VALUES (%s, %s, %s)", values)
    else:
        import psycopg
        from psycopg import sql

        from cdc.jobs.source_db import postgres_params

        with psycopg.connect(**postgres_params(job.source), autocommit=True) as conn:
            conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(sql.Identifier(schema, name)), values)


def _to_topic(job: JobSpec, config: dict[str, str], signal: Signal) -> str:
    from cdc.runtime.signal_log import TopicSignalLog
    from cdc.runtime.transport import open_log
    from cdc.runtime.worker_config import WorkerConfig

    prefix = config.get("topic.prefix") or ""
    topic = config.get("signal.kafka.topic") or f"{prefix}-signal"
    with open_log(WorkerConfig(job.worker_config())) as log_:
        TopicSignalLog(log_, topic, "cdc-signal-writer").send(prefix.encode(), signal.document())
    return f"topic {topic} (key {prefix})"

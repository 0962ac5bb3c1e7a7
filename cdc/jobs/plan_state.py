"""What `cdc plan` reads of a job's stored state, without taking anything and without writing.

A plan compares a job file with what its last runs left: the source offset (Kafka Connect's
`connect-offsets` format), the topics in the log, and the traces of the tables the connector
captured. Like `cdc status`, it may run beside `cdc run`, so it reads the lock (`lock_holder`),
never takes it, and opens no store that could create a topic: the offsets topic and the history
topic are read as plain topics (`read_topic`), only when they exist.

Which tables the last runs captured is not kept in one place; each trace below is evidence:

- the offset's filters: with `snapshot.new.tables=parallel` every offset carries the include and
  exclude lists it was captured under (cdc_debezium/signals/new_tables.py): exact;
- the data topics `<topic.prefix>.<db>.<table>` in the log: every table that had a row or a change;
- MySQL/MariaDB: the schema change topic `<topic.prefix>` (captured tables only) and the schema
  history's snapshot records (the tables an initial snapshot read, empty ones included);
- an interrupted snapshot's `snapshot_tables_done` / `snapshot_table`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc.jobs.spec import JobSpec, source_family
from cdc.jobs.topics import data_topic_pattern, job_topic_router, topic_prefix
from cdc.log.base import INSPECTION_REACH_TIMEOUT, TopicLog
from cdc.runtime.state_lock import job_role, lock_holder
from cdc.runtime.transport import open_log
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import parse_key, read_topic

#: MySQL's history keys (cdc_mysql/config.py), read here without importing the connector's config class.
_HISTORY_CLASS = "schema.history.internal"
_HISTORY_FILE = "schema.history.internal.file.filename"
_HISTORY_TOPIC = "schema.history.internal.kafka.topic"
_KAFKA_HISTORY = "io.debezium.storage.kafka.history.KafkaSchemaHistory"
_MEMORY_HISTORY = "io.debezium.relational.history.MemorySchemaHistory"


@dataclass
class StoredState:
    """What the job's state.dir (or Kafka) holds, as far as it could be read.

    `read` is False when the log was not opened (a fresh state.dir, or Kafka under --offline);
    `topics` is then empty and `note` says why."""

    state_dir: str
    read: bool = False
    fresh: bool = False  # an embedded state.dir without a log: nothing exists yet
    running: bool = False
    pid: int | None = None
    offset: dict[str, Any] | None = None
    topics: frozenset[str] = frozenset()
    # table -> the traces that show it captured ("log topic", "schema history", ...)
    captured: dict[str, set[str]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)  # the traces read, for the report
    note: str | None = None

    def saw(self, table: str, trace: str) -> None:
        self.captured.setdefault(table, set()).add(trace)


def read_state(job: JobSpec, offline: bool) -> StoredState:
    """The job's stored state, read-only. Under `offline` a Kafka transport is not asked."""
    config = WorkerConfig(job.worker_config())
    state = StoredState(str(config.get("state.dir")))
    holder = lock_holder(config.get("state.dir"), "transport.state.dir")
    if holder is not None and holder.role in (job_role(job.name), ""):  # "": a lock of an older cdc
        state.running, state.pid = True, holder.pid
    if config.transport == "embedded" and not (Path(config.get("state.dir")) / "cdc.db").exists():
        state.note = f"{state.state_dir} holds no log yet: the job never ran"
        state.fresh = True
        return state
    if config.transport != "embedded" and offline:
        state.note = "the Kafka transport is not asked under --offline: stored offsets and topics not read"
        return state
    with open_log(config) as log_:
        log_.probe(INSPECTION_REACH_TIMEOUT)
        topics = log_.list_topics()
        state.read = True
        state.topics = frozenset(topics)
        state.offset = _stored_offset(job, config, log_, topics)
        _read_traces(job, log_, state)
    return state


def _stored_offset(
    job: JobSpec, config: WorkerConfig, log_: TopicLog, topics: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The job's connector's offset, read from the offsets topic as a compacted topic (the last value
    per key wins, a null deletes it): `["<job>", {"server": "<topic.prefix>"}]` first, else any
    partition of the job's connector."""
    topic = config.get("offset.storage.topic")
    if topic not in topics:
        return None
    latest: dict[bytes, bytes | None] = {}
    for record in read_topic(log_, topic):
        if record.key is not None:
            latest[record.key] = record.value
    wanted = {"server": topic_prefix(job)}
    found: dict[str, Any] | None = None
    for key, value in latest.items():
        parsed = parse_key(key)
        if parsed is None or parsed[0] != job.name or value is None:
            continue
        offset = json.loads(value)
        if parsed[1] == wanted:
            return dict(offset) if isinstance(offset, dict) else None
        found = dict(offset) if isinstance(offset, dict) else found
    return found


def _read_traces(job: JobSpec, log_: TopicLog, state: StoredState) -> None:
    """Each trace of a captured table the log (and a MySQL history file) holds."""
    prefix = topic_prefix(job)
    route = job_topic_router(job)
    pattern = re.compile(data_topic_pattern(prefix))
    for topic in sorted(state.topics):
        if pattern.fullmatch(topic):
            state.saw(topic[len(prefix) + 1 :], "log topic")
    state.sources.append("log topics")
    offset = state.offset or {}
    for table in [*(offset.get("snapshot_tables_done") or []), offset.get("snapshot_table")]:
        if table:
            state.saw(str(table), "interrupted snapshot")
    if source_family(str(job.source.get("connector.class", ""))) != "mysql":
        return  # PostgreSQL keeps no schema history; its publication is asked online (plan.py)
    change_topic = route(prefix) if route(prefix) in state.topics else prefix
    if change_topic in state.topics:
        for table in schema_change_tables(_values(log_, change_topic)):
            state.saw(table, "schema change topic")
        state.sources.append(f"schema change topic {change_topic}")
    history = _history_records(job, log_, state)
    if history is not None:
        for table in snapshot_history_tables(history[1]):
            state.saw(table, "schema history")
        state.sources.append(history[0])


def _values(log_: TopicLog, topic: str) -> Iterable[Any]:
    """The JSON values of a topic (JsonConverter, with or without schemas); others are skipped."""
    for record in read_topic(log_, topic):
        if record.value is None:
            continue
        try:
            value = json.loads(record.value)
        except ValueError:  # Avro (format: avro): this trace is not readable, the others are
            continue
        if isinstance(value, dict) and "payload" in value and "schema" in value:
            value = value["payload"]
        yield value


def _history_records(job: JobSpec, log_: TopicLog, state: StoredState) -> tuple[str, list[Any]] | None:
    """(where, records) of the MySQL schema history, when it is a file or a topic of the job's log."""
    source = job.source
    cls = str(source.get(_HISTORY_CLASS) or "")
    if cls in (_KAFKA_HISTORY, _MEMORY_HISTORY):
        return None  # a Kafka topic of its own cluster, or nothing durable
    file = source.get(_HISTORY_FILE)
    if file:
        path = Path(str(file))
        if not path.exists():
            return None
        records = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        return f"schema history file {path}", records
    if not log_.keeps_history_topics:
        return None
    topic = str(source.get(_HISTORY_TOPIC) or f"schema-changes.{topic_prefix(job)}")
    if topic not in state.topics:
        return None
    return f"schema history topic {topic}", list(_values(log_, topic))


def _table_id(raw: Any) -> str | None:
    """`"db"."table"` (Debezium's TableId in a table change) as `db.table`."""
    if not isinstance(raw, str) or not raw:
        return None
    parts = raw[1:-1].split('"."', 1) if raw.startswith('"') and raw.endswith('"') else raw.split(".", 1)
    return ".".join(parts) if len(parts) == 2 and all(parts) else None


def _net_tables(changes: Iterable[tuple[str, str]]) -> list[str]:
    """The tables (CREATE/ALTER) still there after the DROPs, in order of appearance."""
    known: dict[str, None] = {}
    for kind, table in changes:
        if kind == "DROP":
            known.pop(table, None)
        else:
            known[table] = None
    return list(known)


def _changes(records: Iterable[Any], only_snapshot: bool) -> Iterable[tuple[str, str]]:
    for record in records:
        if not isinstance(record, dict):
            continue
        if only_snapshot:
            position = record.get("position")
            snap = position.get("snapshot") if isinstance(position, dict) else None
            if not (snap is True or (isinstance(snap, str) and snap.lower() not in ("false", ""))):
                continue
        for change in record.get("tableChanges") or []:
            if isinstance(change, dict) and (table := _table_id(change.get("id"))) is not None:
                yield str(change.get("type") or ""), table


def schema_change_tables(values: Iterable[Any]) -> list[str]:
    """The tables of the schema change topic's events (only captured tables get one), net of drops."""
    return _net_tables(_changes(values, only_snapshot=False))


def snapshot_history_tables(records: Iterable[Any]) -> list[str]:
    """The tables an initial snapshot recorded in the schema history (its records' position is a
    snapshot's), net of later drops. Streamed DDL is left out: the history records the DDL of
    tables the connector does not capture too."""
    records = list(records)
    snapshot = set(_net_tables(_changes(records, only_snapshot=True)))
    return sorted(snapshot & set(_net_tables(_changes(records, only_snapshot=False))))

"""`cdc status job.yaml`: where a job stands, read from outside the process that runs it.

Everything comes from what the job persists, so it works while `cdc run` runs, after it
stopped, or after it was killed:

- the lock of the job's state.dir (running or not, and the pid), read without taking it:
  `cdc status` writes nothing, not even its own pid;
- the status topic: the source task's state and its latest metrics (snapshot progress per
  table, events seen, how far behind the database it is);
- the offset topic: the source position stored last;
- the source database, asked read-only through the connector: how much of its log lies past the
  stored offset, and how long it keeps the position that offset needs (cdc.api.retention);
- the log: events per table topic;
- the Spark checkpoint: the log offsets of the last batch the sink committed. Spark writes a
  commit only after the batch is in the target, so "applied" means durable there.

End-to-end lag per table is the age (in source time) of the oldest change in the log that
the sink has not applied yet: 0 when the sink is caught up with the log.

With heartbeats (`source.heartbeat.interval.ms`), the sink's checkpoint also names the last
heartbeat its committed batches cover (cdc.api.WATERMARK_HEADER: every change before the
heartbeat's position is in the target). Asked whether the database's log holds anything past
that position, the answer "nothing" means the lake reflects the database as of the moment of
asking; otherwise the lake holds what the connector had read by the heartbeat's time.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cdc.api.records import WATERMARK_HEADER
from cdc.api.retention import PositionRetention
from cdc.jobs import incremental_status
from cdc.jobs.checkpoints import checkpoint_dir, committed_offsets
from cdc.jobs.source_probe import ask_source, read_stored_offset
from cdc.jobs.spec import JobSpec
from cdc.jobs.topics import data_topic_pattern, heartbeat_topic_name, topic_prefix
from cdc.jobs.verify.periodic import VerifyOutcome, read_outcome
from cdc.log.base import INSPECTION_REACH_TIMEOUT, LogRecord, TopicLog, TopicPartition
from cdc.runtime.state_lock import job_role, lock_holder
from cdc.runtime.transport import open_log, open_status_store
from cdc.runtime.worker_config import WorkerConfig


@dataclass
class TableStatus:
    table: str
    topic: str
    log_events: int = 0
    applied_events: int = 0
    pending_events: int = 0
    applied_position: str | None = None  # the source position of the last applied change
    lag_ms: int | None = None  # age of the oldest unapplied change; 0 when caught up
    snapshot_rows: int | None = None
    snapshot_estimate: int | None = None
    incremental: dict[str, Any] | None = None  # a running incremental snapshot's progress (incremental_status)


@dataclass
class JobStatus:
    name: str
    transport: str
    running: bool
    pid: int | None = None
    task_state: str | None = None
    task_trace: str | None = None
    source_offset: dict[str, Any] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    metrics_age_ms: int | None = None
    checkpoint_batch: int | None = None
    tables: list[TableStatus] = field(default_factory=list)
    # The database's log past the stored offset (SourceConnector.source_backlog), read at collect time:
    # {"unread_bytes", "position", "note"}; or why it could not be read.
    source_backlog: dict[str, Any] | None = None
    source_backlog_error: str | None = None
    # How long the database keeps the position the stored offset needs (SourceConnector.position_retention,
    # a PositionRetention's to_json()), read at collect time; or why it could not be read.
    position_retention: dict[str, Any] | None = None
    position_retention_error: str | None = None
    # The last scheduled verify run of `cdc run` (the job key verify; verify.periodic.VerifyOutcome), or None.
    verify: dict[str, Any] | None = None
    # The last heartbeat the sink's committed batches cover (Watermark.to_json()), or None.
    watermark: dict[str, Any] | None = None
    watermark_error: str | None = None

    @property
    def source_unread(self) -> bool:
        """True unless the database is known to hold nothing past the stored offset."""
        backlog = self.source_backlog
        return backlog is None or backlog.get("unread_bytes") != 0

    @property
    def lake_caught_up(self) -> bool:
        """The database held nothing past the last heartbeat the sink committed when it was asked."""
        return self.watermark is not None and self.watermark.get("unread_bytes") == 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# -- the Spark checkpoint ----------------------------------------------------------------------
@dataclass
class Watermark:
    """The last heartbeat the sink committed: its time, the source offset it stands at, and what
    the database's log held past that offset when `cdc status` asked (SourceBacklog)."""

    ts_ms: int
    offset: dict[str, Any]
    asked_at_ms: int
    unread_bytes: int | None = None
    position: str | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def committed_watermark(log_: TopicLog, topic: str, applied: dict[TopicPartition, int]) -> tuple[int, dict] | None:
    """(time, source offset) of the last watermark record below the checkpoint's end of `topic`."""
    best: tuple[int, dict] | None = None
    for tp, end in applied.items():
        if tp.topic != topic or end <= 0:
            continue
        begin = log_.beginning_offsets([tp])[tp]
        for r in reversed(_records(log_, tp, max(begin, end - 8), end)):
            raw = dict(r.headers).get(WATERMARK_HEADER)
            if raw is None:
                continue
            found = (int(r.timestamp or 0), json.loads(raw))
            if best is None or found[0] > best[0]:
                best = found
            break
    return best


# -- records -------------------------------------------------------------------------------
def _source_block(record: LogRecord | None) -> dict[str, Any]:
    if record is None or record.value is None:
        return {}
    try:
        value = json.loads(record.value)
    except ValueError:
        return {}
    if isinstance(value, dict) and "payload" in value and "schema" in value:
        value = value["payload"]
    source = value.get("source") if isinstance(value, dict) else None
    return source if isinstance(source, dict) else {}


def _format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def source_position(source: dict[str, Any]) -> str | None:
    """`mysql-bin.000003:1547` (MySQL/MariaDB) or `0/1A2B3C4` (PostgreSQL LSN)."""
    if source.get("file"):
        return f"{source['file']}:{source.get('pos', 0)}"
    if source.get("lsn") is not None:
        return _format_lsn(int(source["lsn"]))
    return None


def _records(log_: TopicLog, tp: TopicPartition, start: int, end: int) -> list[LogRecord]:
    """The records in [start, end) (fewer where compaction removed some)."""
    reader = log_.reader()
    out: list[LogRecord] = []
    try:
        reader.assign({tp: start})
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (not out or out[-1].offset < end - 1):
            batch = reader.poll(end - start, 0.5)
            out.extend(r for r in batch if r.offset < end)
            if batch and batch[-1].offset >= end - 1:
                break
        return out
    finally:
        reader.close()


def _last_source(log_: TopicLog, tp: TopicPartition, begin: int, end: int) -> dict[str, Any]:
    """The `source` block of the last change before `end` (tombstones carry none: look back a little)."""
    for r in reversed(_records(log_, tp, max(begin, end - 8), end)):
        if src := _source_block(r):
            return src
    return {}


# -- collecting ----------------------------------------------------------------------------
def _table_of(topic: str, prefix: str) -> str:
    return topic[len(prefix) + 1 :] if topic.startswith(prefix + ".") else topic


def _snapshot_counts(metrics: dict[str, Any], table: str) -> tuple[int | None, int | None]:
    scanned = metrics.get("RowsScanned") or {}
    estimated = metrics.get("RowsEstimated") or {}
    return scanned.get(table), estimated.get(table)


def collect(job: JobSpec, now_ms: int | None = None) -> JobStatus:
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    config = WorkerConfig(job.worker_config())
    status = JobStatus(job.name, config.transport, running=False)
    # Read, never taken: taking it would write this process's pid into the running job's lock.
    holder = lock_holder(config.get("state.dir"), "transport.state.dir")
    if holder is not None and holder.role in (job_role(job.name), ""):  # "": a lock written by an older cdc
        status.running, status.pid = True, holder.pid

    if config.transport == "embedded" and not (Path(config.get("state.dir")) / "cdc.db").exists():
        return status  # never ran: no log to open (and opening would create one)
    with open_log(config) as log_:
        log_.probe(INSPECTION_REACH_TIMEOUT)
        _collect_stores(job, config, log_, status, now_ms)
        applied = _collect_tables(job, log_, status, now_ms)
        mark = committed_watermark(log_, heartbeat_topic_name(job), applied)
    _collect_backlog(job, status)
    _collect_retention(job, status)
    if mark is not None:
        _collect_watermark(job, status, *mark)
    if (outcome := read_outcome(job)) is not None:
        status.verify = outcome.to_json()
    return status


def _collect_watermark(job: JobSpec, status: JobStatus, ts_ms: int, offset: dict[str, Any]) -> None:
    """Ask the source connector what the database's log holds past the sink's last heartbeat."""
    asked = int(time.time() * 1000)
    backlog, status.watermark_error = ask_source(job, lambda c, config: c.source_backlog(config, offset))
    mark = Watermark(ts_ms, offset, asked)
    if backlog is not None:
        mark.unread_bytes, mark.position, mark.note = backlog.unread_bytes, backlog.position, backlog.note
    status.watermark = mark.to_json()


def _collect_backlog(job: JobSpec, status: JobStatus) -> None:
    """Ask the source connector how much of the database's log lies past the stored offset: the log's
    lag alone called a job "caught up" while the database held changes it never read."""
    offset = status.source_offset
    backlog, status.source_backlog_error = ask_source(job, lambda c, config: c.source_backlog(config, offset))
    if backlog is not None:
        status.source_backlog = asdict(backlog)


def _collect_retention(job: JobSpec, status: JobStatus) -> None:
    """Ask the source connector how long the database keeps the position the stored offset needs: a
    stopped job loses it once the binlog is purged or the slot invalidated."""
    if status.source_backlog_error:  # the database did not answer: one error line is enough
        return
    offset = status.source_offset
    retention, status.position_retention_error = ask_source(job, lambda c, config: c.position_retention(config, offset))
    if isinstance(retention, PositionRetention):
        status.position_retention = retention.to_json()


def _collect_stores(job: JobSpec, config: WorkerConfig, log_: TopicLog, status: JobStatus, now_ms: int) -> None:
    topics = log_.list_topics()
    status.source_offset = read_stored_offset(job.name, config, log_)
    if config.get("status.storage.topic") in topics or config.transport == "embedded":
        statuses = open_status_store(config, log_)
        statuses.start()
        try:
            task = statuses.get_task(job.name, 0)
            if task is not None and status.running:
                status.task_state = task.state.value
                status.task_trace = (task.trace or "").strip().splitlines()[-1] if task.trace else None
            report = statuses.get_task_metrics(job.name, 0)
            if report is not None:
                status.metrics = dict(report.metrics)
                status.metrics_age_ms = max(0, now_ms - report.timestamp) if report.timestamp else None
        finally:
            statuses.stop()


def _collect_tables(job: JobSpec, log_: TopicLog, status: JobStatus, now_ms: int) -> dict[TopicPartition, int]:
    """The tables' rows of the status; returns the checkpoint's committed end offsets."""
    prefix = topic_prefix(job)
    pattern = re.compile(data_topic_pattern(prefix))
    batch, applied = committed_offsets(checkpoint_dir(job))
    status.checkpoint_batch = batch
    # Every data topic, not only those sink.tables names: the sink applies them all.
    for topic, desc in sorted(log_.list_topics().items()):
        if not pattern.fullmatch(topic):
            continue
        table = _table_of(topic, prefix)
        tps = [TopicPartition(topic, p) for p in range(desc.partitions)]
        ends, begins = log_.end_offsets(tps), log_.beginning_offsets(tps)
        t = TableStatus(table, topic)
        t.log_events = sum(ends[tp] - begins[tp] for tp in tps)
        oldest_pending: int | None = None
        last_applied: dict[str, Any] = {}
        for tp in tps:
            done = min(max(applied.get(tp, begins[tp]), begins[tp]), ends[tp])
            t.applied_events += done - begins[tp]
            t.pending_events += ends[tp] - done
            if done > begins[tp]:
                src = _last_source(log_, tp, begins[tp], done)
                if src and int(src.get("ts_ms") or 0) >= int(last_applied.get("ts_ms") or 0):
                    last_applied = src
            if done < ends[tp]:
                first = _records(log_, tp, done, done + 1)
                ts = _source_block(first[0] if first else None).get("ts_ms")
                if ts is not None:
                    oldest_pending = int(ts) if oldest_pending is None else min(oldest_pending, int(ts))
        t.applied_position = source_position(last_applied)
        if t.pending_events == 0:
            t.lag_ms = 0
        elif oldest_pending is not None:
            t.lag_ms = max(0, now_ms - oldest_pending)
        t.snapshot_rows, t.snapshot_estimate = _snapshot_counts(status.metrics, table)
        status.tables.append(t)
    _add_incremental(job, log_, status, prefix)
    return applied


def _add_incremental(job: JobSpec, log_: TopicLog, status: JobStatus, prefix: str) -> None:
    """The running incremental snapshot's tables: progress on theirs, a row for one with no topic yet."""
    by_table = {t.table: t for t in status.tables}
    topics = {name: t.topic for name, t in by_table.items()}
    for table, p in incremental_status.progress(job, log_, status.source_offset, topics).items():
        if table not in by_table:
            by_table[table] = TableStatus(table, f"{prefix}.{table}")
            status.tables.append(by_table[table])
        by_table[table].incremental = p.to_json()


# -- rendering -----------------------------------------------------------------------------
def _duration(ms: int | None) -> str:
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms} ms"
    s = ms / 1000
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _snapshot_cell(t: TableStatus, metrics: dict[str, Any], offset: dict[str, Any] | None) -> str:
    if t.incremental is not None:
        return incremental_status.IncrementalProgress(**t.incremental).cell()
    if t.snapshot_rows is None:
        # A later run streams only; its stored offset says the snapshot finished long ago.
        finished = metrics.get("SnapshotCompleted") or (offset and str(offset.get("snapshot", "false")) == "false")
        return "done" if finished else "-"
    est = f"/{t.snapshot_estimate}" if t.snapshot_estimate is not None else ""
    running = metrics.get("SnapshotRunning") and not metrics.get("SnapshotCompleted")
    return f"{'running' if running else 'done'} {t.snapshot_rows}{est}"


def render(status: JobStatus) -> list[str]:
    state = f"running (pid {status.pid})" if status.running else "stopped"
    lines = [f"job {status.name}: {state}, transport {status.transport}"]
    if status.task_state:
        lines.append(f"source task: {status.task_state}" + (f": {status.task_trace}" if status.task_trace else ""))
    m = status.metrics
    if m:
        parts = []
        if m.get("SnapshotRunning"):
            total, remaining = m.get("TotalTableCount"), m.get("RemainingTableCount")
            parts.append(f"snapshot running ({(total or 0) - (remaining or 0)}/{total} tables done)")
        elif m.get("SnapshotCompleted"):
            parts.append("snapshot completed")
        if m.get("MilliSecondsBehindSource") is not None:
            parts.append(f"{_duration(int(m['MilliSecondsBehindSource']))} behind the database")
        if m.get("TotalNumberOfEventsSeen") is not None:
            parts.append(f"{m['TotalNumberOfEventsSeen']} events seen")
        if m.get("RetainedWalBytes") is not None:
            parts.append(f"slot retains {int(m['RetainedWalBytes']) / 1048576:.1f} MiB of WAL")
        if parts:
            lines.append(f"source: {', '.join(parts)} (metrics from {_duration(status.metrics_age_ms)} ago)")
    offset = status.source_offset
    lines.append(f"source offset: {json.dumps(offset) if offset else 'none stored yet'}")
    lines.append(_backlog_line(status))
    if (line := _retention_line(status)) is not None:
        lines.append(line)
    batch = status.checkpoint_batch
    lines.append(f"sink: {'no batch committed yet' if batch is None else f'last committed batch {batch}'}")
    if (line := _watermark_line(status)) is not None:
        lines.append(line)
    if status.verify is not None:
        lines.append(f"verify: {VerifyOutcome.from_json(status.verify).describe()}")
    header = ("table", "snapshot", "log events", "applied", "pending", "applied up to", "lag")
    rows = [
        (
            t.table,
            _snapshot_cell(t, m, status.source_offset),
            str(t.log_events),
            str(t.applied_events),
            str(t.pending_events),
            t.applied_position or "-",
            _lag_cell(t, status),
        )
        for t in status.tables
    ]
    if not rows:
        lines.append("no table topics in the log yet")
        return lines
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return lines


def _backlog_line(status: JobStatus) -> str:
    backlog = status.source_backlog
    if status.source_backlog_error:
        return f"database: not known to be caught up: cannot read its position ({status.source_backlog_error})"
    if backlog is None:
        return "database: not known to be caught up: the connector cannot say how far its log is ahead"
    unread, at, note = backlog.get("unread_bytes"), backlog.get("position"), backlog.get("note")
    if unread == 0:
        return f"database: caught up: nothing past the stored offset (at {at})"
    if unread is None:
        return f"database: not known to be caught up (at {at}): {note}"
    extra = f"; {note}" if note else ""
    return (
        f"database: not caught up: {unread} bytes of its log past the stored offset are not read yet (at {at}{extra})"
    )


def _retention_line(status: JobStatus) -> str | None:
    """`position kept: ~3 h 12 min until binlog mysql-bin.000004 is purged (…)`; None when the connector
    cannot say (not a database source)."""
    if status.position_retention_error:
        return f"position: cannot read how long the database keeps it ({status.position_retention_error})"
    if status.position_retention is None:
        return None
    return PositionRetention.from_json(status.position_retention).describe()


def _clock(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000))


def _watermark_line(status: JobStatus) -> str | None:
    """`lake: reflects the database as of …` from the sink's last heartbeat; None without heartbeats."""
    mark = status.watermark
    if mark is None:
        return None
    read_by = f"every change the connector had read by {_clock(mark['ts_ms'])} (its heartbeat)"
    if mark.get("unread_bytes") == 0:
        return (
            f"lake: reflects the database as of {_clock(mark['asked_at_ms'])}: nothing in its log lies past "
            f"the last heartbeat the sink committed (at {mark.get('position')})"
        )
    if status.watermark_error:
        return f"lake: holds {read_by}; cannot ask the database how far it is ahead ({status.watermark_error})"
    unread = mark.get("unread_bytes")
    ahead = f"{unread} bytes of the database's log lie past it" if unread is not None else mark.get("note")
    return f"lake: holds {read_by}; {ahead} (at {mark.get('position')})"


def _lag_cell(t: TableStatus, status: JobStatus) -> str:
    """A table is caught up when the sink applied all its log and the database holds nothing unread
    past the stored offset, or nothing past the last heartbeat the sink committed."""
    if t.lag_ms != 0 and not status.lake_caught_up:
        return _duration(t.lag_ms)
    if status.lake_caught_up or not status.source_unread:
        return "0 (caught up)"
    return "0 in the log; not caught up with the database"

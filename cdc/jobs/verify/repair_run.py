"""`cdc verify --repair`: send the repair signals through the job's channel, wait, verify the keys again.

The signals go where `cdc signal` sends them (cdc.jobs.signals: the signal table, `signal.file`
or the kafka signal topic). A table's signals go one at a time: Debezium queues one incremental
snapshot per table and drops an `execute-snapshot` for a table already queued.

With the job running, a table's signal is done when the stored source offset no longer queues the
table and the snapshot has shown itself: an incremental read (`source.snapshot` = incremental) in
the table's topic after the signal was sent, or (no row left to read) the stored offset past the
database position read after sending. Then the next signal of the table goes; once all are done,
the sink is waited for (the Spark checkpoint's committed offsets reach the topics' ends), and
the keys are verified again. The wait is bounded (`timeout`); the verification afterwards is the
answer either way.

With the job stopped, the first signal of each table is sent and kept by the channel (a row of the
signal table is in the binlog/WAL the job reads next; a signal file is read at its start; a kafka
signal record stays in its topic): the repair happens when the job runs next, and `cdc verify
--repair` run again then sends the rest, if any.
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc.api.errors import ConfigException
from cdc.jobs.incremental_status import _incremental_ts, queued_tables
from cdc.jobs.spec import JobSpec, source_family
from cdc.jobs.verify.catchup import ends as _ends
from cdc.jobs.verify.catchup import remote_checkpoint, sink_behind
from cdc.jobs.verify.catchup import retry as _retry
from cdc.jobs.verify.compare import TableResult
from cdc.jobs.verify.job import Verifier
from cdc.jobs.verify.repair import Literals, MySqlLiterals, PostgresLiterals, TablePlan, plan_table, signal_for
from cdc.jobs.verify.source import SourceTable
from cdc.log.base import TopicLog, TopicPartition
from cdc.runtime.signal_delivery import Signal, channel_of

POLL_S = 1.0
REPORT_EVERY_S = 5.0


def literals_for(v: Verifier) -> Literals:
    conn = v.source.conn  # type: ignore[attr-defined]
    return MySqlLiterals(conn) if v.source.family == "mysql" else PostgresLiterals(conn)


def plan(v: Verifier, results: list[TableResult], progress: Callable[[str], None]) -> list[TablePlan]:
    """A TablePlan per compared table with differences."""
    lit = literals_for(v)
    plans: list[TablePlan] = []
    for r in results:
        if r.skipped or not r.differences:
            continue
        table = SourceTable(*r.source.split(".", 1))
        names = v.keys_for(table)
        by_name = {c.name: c for c in v.source.columns(table)}
        key_columns = [by_name[n] for n in names]
        progress(f"{r.source}: reading the source values of the differing keys")
        # With --key-range the differing keys all lie in the range: read the source's keys there alone.
        rows = functools.partial(v.source.rows, table, key_columns, v.range_scope(table, key_columns))
        plans.append(plan_table(r, names, key_columns, rows, lit))
    return plans


def check_channel(job: JobSpec) -> str:
    """The channel the signals go through; ConfigException when the job's source cannot take them."""
    config = job.connector_config()
    read_only = str(config.get("read.only") or "").strip().lower() == "true"
    if not config.get("signal.data.collection") and not read_only:
        raise ConfigException(
            "--repair sends incremental snapshot signals, which need source.signal.data.collection (the table "
            "the connector writes its watermarks to; Debezium's signal table) or source.read.only=true",
            "source.signal.data.collection",
        )
    return channel_of(config)


@dataclass
class _InFlight:
    signal: Signal
    keys: int
    starts: dict[TopicPartition, int]  # the topic's ends when sent: an incremental read after them shows it ran
    position: Any  # the database position after sending
    read_seen: bool = False


@dataclass
class Outcome:
    running: bool
    channel: str = ""
    sent: dict[str, int] = field(default_factory=dict)  # table → signals sent
    total: dict[str, int] = field(default_factory=dict)  # table → signals planned
    held: list[str] = field(default_factory=list)  # tables not signalled: their snapshot was still queued
    completed: bool = False  # every signal's snapshot done and applied by the sink
    timed_out: bool = False
    after: dict[str, TableResult] = field(default_factory=dict)


class Repair:
    """Sends a job's repair signals and, with the job running, waits for them (see the module doc)."""

    def __init__(
        self,
        v: Verifier,
        plans: list[TablePlan],
        progress: Callable[[str], None],
        send: Callable[[JobSpec, Signal], str] | None = None,
    ) -> None:
        from cdc.jobs.signals import send as send_signal

        self.v = v
        self.job = v.job
        self.plans = [p for p in plans if p.conditions]
        self.progress = progress
        self.send = send or (lambda job, sig: send_signal(job, sig))
        self.config = self.job.connector_config()
        self.family = source_family(self.config.get("connector.class", "")) or ""
        self.topics = {p.table: v.route(f"{v.prefix}.{p.table}") for p in self.plans}

    # -- the job's state ----------------------------------------------------------------------
    def _worker(self) -> Any:
        from cdc.runtime.worker_config import WorkerConfig

        return WorkerConfig(self.job.worker_config())

    def _stored(self, log_: TopicLog) -> dict[str, Any] | None:
        from cdc.jobs.source_probe import read_stored_offset

        return read_stored_offset(self.job.name, self._worker(), log_)

    def _position(self) -> Any:
        from cdc.jobs.source_positions import source_position

        return source_position(self.family, self.config)

    def _reached(self, offset: dict[str, Any] | None, position: Any) -> bool:
        from cdc.jobs.source_positions import _mysql_reached, _postgres_reached

        if not offset or position is None:
            return False
        return (_mysql_reached if self.family == "mysql" else _postgres_reached)(offset, position)

    def _send(self, table: str, cond: str, keys: int, log_: TopicLog | None, offset: dict[str, Any] | None) -> Any:
        sig = signal_for(table, cond)
        starts = _ends(log_, self.topics[table]) if log_ is not None else {}
        where = self.send(self.job, sig)
        self.progress(f"sent {sig.id}: incremental snapshot of {table}, {keys} keys, to the {where}")
        position = None
        if log_ is not None:
            position = self._position()
            if self.family == "mysql":
                position = position.after(offset)  # the connector's binlog lineage (cdc_mysql/lineage.py)
        return _InFlight(sig, keys, starts, position)

    # -- sending ------------------------------------------------------------------------------
    def start_stopped(self) -> Outcome:
        """The job is not running: the first signal of each table, for the job's next run."""
        from cdc.jobs.source_probe import stored_offset

        out = Outcome(False, channel_of(self.config))
        queued = {t.lower() for t in queued_tables(stored_offset(self.job))}
        for p in self.plans:
            out.total[p.table] = len(p.conditions)
            if p.table.lower() in queued:
                out.held.append(p.table)
                continue
            self._send(p.table, p.conditions[0], _count(p, 0), None, None)
            out.sent[p.table] = 1
        return out

    def run_live(self, timeout_s: float) -> Outcome:
        """The job is running: every signal, one table's at a time, then the sink; bounded by `timeout_s`."""
        from cdc.runtime.transport import open_log

        out = Outcome(True, channel_of(self.config))
        todo = {p.table: deque(enumerate(p.conditions)) for p in self.plans}
        plans = {p.table: p for p in self.plans}
        out.total = {t: len(q) for t, q in todo.items()}
        flying: dict[str, _InFlight] = {}
        deadline = time.monotonic() + timeout_s
        last_report = time.monotonic()
        with open_log(self._worker()) as log_:
            while todo or flying:
                offset = _retry(lambda: self._stored(log_))
                queued = {t.lower() for t in queued_tables(offset)}
                for table, f in list(flying.items()):
                    if not f.read_seen:
                        f.read_seen = _retry(lambda f=f, t=table: _incremental_since(log_, self.topics[t], f.starts))
                    if table.lower() not in queued and (f.read_seen or self._reached(offset, f.position)):
                        del flying[table]
                for table in list(todo):
                    if table in flying or table.lower() in queued:
                        continue
                    i, cond = todo[table].popleft()
                    flying[table] = self._send(table, cond, _count(plans[table], i), log_, offset)
                    out.sent[table] = out.sent.get(table, 0) + 1
                    if not todo[table]:
                        del todo[table]
                if not todo and not flying:
                    break
                if time.monotonic() > deadline:
                    out.timed_out = True
                    return out
                if time.monotonic() - last_report >= REPORT_EVERY_S:
                    last_report = time.monotonic()
                    done = sum(out.sent.values()) - len(flying)
                    waiting = ", ".join(sorted(flying)) or "none"
                    self.progress(
                        f"waiting for the incremental snapshots: {done}/{sum(out.total.values())} signals done; "
                        f"running: {waiting} ({int(deadline - time.monotonic())} s left)"
                    )
                time.sleep(POLL_S)
            # The sink: every record up to the topics' ends now applied (Spark commits after the target).
            if remote_checkpoint(self.job):
                self.progress("the sink's checkpoint is remote: not waiting for it; verifying now")
                out.completed = True
                return out
            ends: dict[TopicPartition, int] = {}
            for topic in set(self.topics.values()):
                ends.update(_retry(lambda t=topic: _ends(log_, t)))
        while True:
            behind = sink_behind(self.job, ends)
            if behind == 0:
                out.completed = True
                return out
            if time.monotonic() > deadline:
                out.timed_out = True
                return out
            if time.monotonic() - last_report >= REPORT_EVERY_S:
                last_report = time.monotonic()
                left = int(deadline - time.monotonic())
                self.progress(f"waiting for the sink: {behind} events to apply ({left} s left)")
            time.sleep(POLL_S)


def verify_again(
    v: Verifier, plans: list[TablePlan], max_diffs: int, online_timeout_s: float | None = None
) -> dict[str, TableResult]:
    """Each planned table compared again, on the keys it had differing alone. `online_timeout_s`: with
    the job running, compare online (job.verify_online: a key the job changed after the source's
    snapshot is not a difference), waiting at most that long for the lake to apply up to it."""
    if online_timeout_s is not None:
        from cdc.jobs.verify.job import verify_online

        keys = {p.table: p.checked_keys for p in plans}
        results, _passed, _run = verify_online(v, list(keys), max_diffs, online_timeout_s, only_keys=keys)
        return {r.source: r for r in results}
    out: dict[str, TableResult] = {}
    for p in plans:
        table = SourceTable(*p.table.split(".", 1))
        out[p.table] = v.verify_table(table, max_diffs, only=p.checked_keys)
    return out


def _count(p: TablePlan, index: int) -> int:
    """How many keys the `index`th condition of `p` selects (the conditions hold the keys in order)."""
    return p.counts[index] if index < len(p.counts) else 0


def _incremental_since(log_: TopicLog, topic: str, starts: dict[TopicPartition, int]) -> bool:
    """Whether `topic` holds an incremental read after `starts`; moves `starts` past what it read."""
    ends = _ends(log_, topic)
    todo = {tp: starts.get(tp, 0) for tp, end in ends.items() if end > starts.get(tp, 0)}
    if not todo:
        return False
    reader = log_.reader()
    try:
        reader.assign(todo)
        remaining = sum(ends[tp] - at for tp, at in todo.items())
        empty = 0
        while remaining > 0 and empty < 5:
            batch = reader.poll(5000, 0.2)
            empty = 0 if batch else empty + 1
            for r in batch:
                tp = TopicPartition(r.topic, r.partition)
                if r.offset >= ends[tp]:
                    continue
                remaining -= 1
                starts[tp] = r.offset + 1
                if _incremental_ts(r.value) is not None:
                    return True
    finally:
        reader.close()
    return False

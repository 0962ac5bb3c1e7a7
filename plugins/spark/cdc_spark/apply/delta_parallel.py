"""The driver's half of the parallel Delta apply: plan, run the tasks, commit their files.

1. Plan: per table of the batch, its bucketed layout as of now (buckets.py: the files of each
   bucket), whether the batch is already in it (the app transaction: a replay), and the same
   for its tombstone table. Tables in another layout go to the driver's MERGE (delta.py).
2. Run: the batch's keyed events get their bucket, are shuffled by (topic, bucket), and each
   Spark task applies its buckets (delta_tasks.py), writing new Parquet files. Only file
   actions, counts and refused rows' positions come back to the driver: never rows.
3. Commit: one Delta transaction per table holding every task's add and remove actions and
   the batch's app transaction (`Transaction(app.id, batch_id)`), the table first, its
   tombstones after (as delta.py orders them). New columns are added just before.

A kill before a commit leaves the table as it was (the tasks' files are referenced by no
version; VACUUM removes them); the commit itself is atomic; a replay after it finds the app
transaction and writes nothing.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_spark.apply import buckets
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.delta_tasks import RESULT, Plan, TablePlan, apply_buckets, unpack_error
from cdc_spark.apply.errors import SchemaEvolutionError, TargetApplyError, key_text, keys_line, ours
from cdc_spark.decode.events import SNAPSHOT_END

log = logging.getLogger(__name__)
TOMBSTONE_SUFFIX = "__tombstones"
_EVENT_COLUMNS = ("topic", "key", "value", "__op", "__seq", "__source_ts_ms", "__deleted", "schema_id")


_SPARK_TYPES = {
    pa.string(): "string",
    pa.int64(): "bigint",
    pa.int32(): "int",
    pa.binary(): "binary",
    pa.bool_(): "boolean",
}
# The tasks' reports (delta_tasks.RESULT) as Spark declares them.
_REPORT_SCHEMA = ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in RESULT)


@dataclass
class Outcome:
    """What the tasks reported, for the engine: rows per table, refused rows, warnings."""

    applied: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # table → (rows, newest ms)
    parked: list[dict[str, Any]] = field(default_factory=list)
    blanked: list[tuple[str, str]] = field(default_factory=list)  # (table, problem)
    kept: list[tuple[str, int, list[str]]] = field(default_factory=list)  # (table, rows, columns)
    files: int = 0  # file actions committed
    workers: set[str] = field(default_factory=set)  # the processes that applied (host:pid)


class ParallelDelta:
    """Which tables the tasks apply, and the batch's run and commits for them (`events`: the
    batch's decoded events)."""

    def __init__(self, config: SinkConfig, path: Callable[[str], str], events: DataFrame) -> None:
        self.config = config
        self.path = path
        self.events = events

    @contextmanager
    def _naming(self, table: str) -> Iterator[None]:
        """Around the driver's reads and commits of one table: another library's error (a damaged
        log, a full disk) names the table and the batch's keys of it, as the tasks' errors do."""
        try:
            yield
        except Exception as e:
            if ours(e):
                raise
            raise TargetApplyError(table, self._keys_of(table), e) from e

    def _keys_of(self, table: str) -> str:
        """The batch's keys of `table`, counted and the first few named (the error path only)."""
        keyed = self.events.filter(F.col("key").isNotNull()).select("topic", "key").distinct()
        rows = [r for r in keyed.collect() if self.config.table_for(r["topic"]) == table]
        texts = sorted({r["key"] for r in rows})
        first = []
        for text in texts[:5]:  # keys_line names the first few
            value = json.loads(text)
            first.append(key_text(value, list(value)) if isinstance(value, dict) else repr(value))
        return keys_line(len(texts), first)

    def split(self, topics: Sequence[str], keeps_history: Callable[[str], bool]) -> tuple[list[str], list[str]]:
        """(topics the tasks apply, topics the driver's MERGE applies)."""
        if self.config.apply_on != "executors":
            return [], list(topics)
        tasks, driver = [], []
        for topic in topics:
            table = self.config.table_for(topic)
            with self._naming(table):
                bucketed = (
                    not keeps_history(topic)
                    and not self.config.partition_by.get(table)
                    and buckets.in_layout(self.path(table))
                    and buckets.in_layout(self.path(table + TOMBSTONE_SUFFIX))
                )
            (tasks if bucketed else driver).append(topic)
        return tasks, driver

    def plan(
        self, topics: Sequence[str], batch_id: int, schemas: Mapping[int, str], truncated: Mapping[str, bytes]
    ) -> Plan:
        tables: dict[str, TablePlan] = {}
        for topic in topics:
            table = self.config.table_for(topic)
            if table in tables:
                continue
            hard = self.config.delete_mode_for(table) == "hard"
            with self._naming(table):
                main = buckets.layout_of(self.path(table), self.config.buckets)
                tombs = buckets.layout_of(self.path(table + TOMBSTONE_SUFFIX), main.buckets) if hard and main else None
                main_done = main is not None and self._done(main, batch_id)
                tombs_done = tombs is not None and self._done(tombs, batch_id)
            if main is None or (hard and tombs is None):
                raise RuntimeError(f"table {table}: its layout changed while the batch was planned; run again")
            if tombs is not None and tombs.buckets != main.buckets:
                raise RuntimeError(
                    f"table {table}: {main.buckets} buckets, but its tombstone table {tombs.buckets}; both were "
                    f"written by other jobs. Fix: give this job its own path, or re-snapshot into a new one"
                )
            tables[table] = TablePlan(
                table,
                main,
                tombs,
                soft=not hard,
                apply_main=not main_done,
                apply_tombs=tombs is not None and not tombs_done,
            )
        return Plan(self.config, batch_id, tables, dict(schemas), dict(truncated))

    def _done(self, lay: buckets.Layout, batch_id: int) -> bool:
        if not lay.exists:
            return False
        from deltalake import DeltaTable

        from cdc_spark.apply.delta import has_batch

        return has_batch(DeltaTable(lay.path), self.config.app_id, batch_id)

    def run(self, topics: Sequence[str], plan: Plan, phases: dict[str, float | int]) -> Outcome:
        """The tasks' apply of the events of `topics` (the plan's), then the commits. `phases`:
        where the time went, for the batch's log line."""
        events = self.events
        t0 = time.perf_counter()
        todo = {t for t, tp in plan.tables.items() if tp.apply_main or tp.apply_tombs}
        topics = [t for t in topics if self.config.table_for(t) in todo]
        outcome = Outcome()
        if not topics:
            return outcome
        changes = events.filter(
            F.col("key").isNotNull() & F.col("__error").isNull() & ~F.col("__op").isin("t", SNAPSHOT_END)
        ).filter(F.col("topic").isin(topics))
        if "schema_id" not in changes.columns:
            changes = changes.withColumn("schema_id", F.lit(None).cast("bigint"))
        changes = changes.select(*_EVENT_COLUMNS, "partition", "offset")
        counts = {topic: plan.tables[self.config.table_for(topic)].main.buckets for topic in topics}
        # In the JVM: no pass of the events through Python before the shuffle.
        bucketed = changes.withColumn(buckets.BUCKET, buckets.bucket_column(counts))
        shuffled = bucketed.repartition("topic", buckets.BUCKET)
        reports = shuffled.mapInArrow(partial(apply_buckets, plan=plan), _REPORT_SCHEMA).toArrow()
        phases["tasks"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        self._commit(plan, reports, outcome)
        phases["commit"] = time.perf_counter() - t1
        return outcome

    def _commit(self, plan: Plan, reports: pa.Table, outcome: Outcome) -> None:
        rows = reports.to_pylist()
        for r in rows:
            if r["kind"] == "error":  # a task's error: nothing is committed, the batch is replayed
                raise unpack_error(r["schema"])
        actions: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            kind, table = r["kind"], r["table"]
            if kind in ("add", "remove"):
                actions.setdefault(table, []).append(r)
            elif kind == "applied":
                n, newest = outcome.applied.get(table, (0, None))
                ts = r["newest_ms"]
                outcome.applied[table] = (n + r["rows"], max(newest, ts) if newest and ts else (newest or ts))
                outcome.workers.add(r["worker"])
            elif kind == "parked":
                outcome.parked.append({k: r[k] for k in ("topic", "partition", "offset", "problem", "error_class")})
            elif kind == "blanked":
                outcome.blanked.append((table, r["problem"]))
            elif kind == "kept":
                outcome.kept.append((table, r["rows"], r["problem"].split(",")))
        for table, tp in sorted(plan.tables.items()):
            with self._naming(table):
                if tp.apply_main and actions.get(table):
                    outcome.files += self._commit_one(tp.main, actions[table], plan.batch_id)
                name = table + TOMBSTONE_SUFFIX
                if tp.tombs is not None and tp.apply_tombs and actions.get(name):
                    outcome.files += self._commit_one(tp.tombs, actions[name], plan.batch_id)

    def _commit_one(self, lay: buckets.Layout, rows: list[dict[str, Any]], batch_id: int) -> int:
        """One Delta transaction: the tasks' adds and removes and the batch's app transaction."""
        from deltalake import CommitProperties, DeltaTable, Field, Transaction
        from deltalake.transaction import AddAction, RemoveAction

        table = lay.path.rstrip("/").rsplit("/", 1)[-1]
        schema = _widened(
            table, lay.schema, [pa.ipc.read_schema(pa.py_buffer(r["schema"])) for r in rows if r["kind"] == "add"]
        )
        if not lay.exists:
            buckets.create(lay.path, schema, lay.buckets)
        dt = DeltaTable(lay.path)
        have = {f.name for f in pa.schema(dt.schema().to_arrow())}
        added = [f for f in schema if f.name not in have]
        if added:
            dt.alter.add_columns([Field.from_arrow(f) for f in added])
            dt = DeltaTable(lay.path)
        now = int(time.time() * 1000)
        out: list[AddAction | RemoveAction] = []
        for r in rows:
            part = {buckets.BUCKET: str(r["bucket"])}
            if r["kind"] == "add":
                out.append(AddAction(r["path"], r["size"], part, now, True, r["stats"]))
            else:
                out.append(RemoveAction(r["path"], True, now, r["size"], part))
        full = pa.schema(dt.schema().to_arrow())
        dt.create_write_transaction(
            out,
            mode="append",
            schema=full,
            partition_by=[buckets.BUCKET],
            commit_properties=CommitProperties(app_transactions=[Transaction(self.config.app_id, batch_id)]),
        )
        return len(out)


def _widened(table: str, existing: pa.Schema | None, files: list[pa.Schema]) -> pa.Schema:
    """The table's schema after this batch: its columns, then each new column the files bring
    (every task conformed its rows to `existing`, so only new columns can differ)."""
    fields = list(existing or [])
    seen = {f.name: f for f in fields}
    for schema in files:
        for f in schema:
            if f.name == buckets.BUCKET:
                continue
            have = seen.get(f.name)
            if have is None:
                seen[f.name] = f
                fields.append(f)
            elif have.type != f.type:
                raise SchemaEvolutionError(table, f.name, have.type, f.type)
    return pa.schema(fields)

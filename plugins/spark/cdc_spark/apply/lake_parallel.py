"""The driver's half of the parallel lake apply (Delta and Iceberg): plan, run the tasks,
commit their files. The per-format part (reading a layout, creating a table, the commit) is
delta_layout.py's or iceberg_layout.py's; the algorithm is written once here.

1. Plan: per table of the batch, its bucketed layout as of now (buckets.py: the files of each
   bucket), whether the batch is already in it (a replay: Delta's app transaction, Iceberg's
   snapshot summary), and the same for its tombstone table. Tables in another layout go to
   the driver's path (delta.py's MERGE, iceberg.py).
2. Run: the batch's keyed events get their bucket, are shuffled by (topic, bucket), and each
   Spark task applies its buckets (lake_tasks.py), writing new Parquet files. Only file
   actions, counts and refused rows' positions come back to the driver: never rows.
3. Commit: per table one Delta transaction (with `Transaction(app.id, batch_id)`) or one
   Iceberg snapshot (an overwrite naming the batch) holding every task's add and remove
   actions, the table first, its tombstones after (as delta.py orders them). New columns are
   added just before. An Iceberg file must carry the field ids of its columns, which only
   the catalog assigns: a new Iceberg table is created from the columns the tasks report in
   a first pass that writes nothing, and a batch that brings a column the table lacks has its
   files deleted and is applied again once the column is added (a schema change, rare).

A kill before a commit leaves the table as it was (the tasks' files are referenced by no
version; VACUUM or Iceberg's orphan-file removal deletes them); the commit itself is atomic; a
replay after it finds the batch in the table and writes nothing.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_spark.apply import buckets
from cdc_spark.apply.buckets import FileAction, Layout
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.errors import SchemaEvolutionError, TargetApplyError, key_text, keys_line, ours
from cdc_spark.apply.evolution import SchemaChange
from cdc_spark.apply.lake_tasks import RESULT, Plan, TablePlan, apply_buckets, filesystem, unpack_error
from cdc_spark.decode.events import SNAPSHOT_END
from cdc_spark.decode.types import default_of, time_factor, time_unit

log = logging.getLogger(__name__)
TOMBSTONE_SUFFIX = "__tombstones"
_EVENT_COLUMNS = ("topic", "key", "value", "__op", "__seq", "__source_ts_ms", "__deleted", "schema_id")
# A batch is applied again at most this often for columns an Iceberg table lacks (a new
# table, then a column added in the same batch by another task's rows).
_MAX_PASSES = 3


_SPARK_TYPES = {
    pa.string(): "string",
    pa.int64(): "bigint",
    pa.int32(): "int",
    pa.binary(): "binary",
    pa.bool_(): "boolean",
}
# The tasks' reports (lake_tasks.RESULT) as Spark declares them.
_REPORT_SCHEMA = ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in RESULT)


class LakeLayouts(Protocol):
    """One lake format's bucketed tables (delta_layout.DeltaLayouts, iceberg_layout.IcebergLayouts)."""

    def in_layout(self, table: str) -> bool: ...

    def layout_of(self, table: str, default_buckets: int) -> Layout | None: ...

    def has_batch(self, table: str, batch_id: int) -> bool: ...

    def create(self, table: str, schema: pa.Schema, count: int) -> None: ...

    def add_columns(self, table: str, fields: Sequence[pa.Field]) -> None: ...

    def change(self, table: str, change: SchemaChange) -> None: ...

    def commit(self, table: str, location: str, actions: Sequence[FileAction], batch_id: int) -> int: ...


@dataclass
class Outcome:
    """What the tasks reported, for the engine: rows per table, refused rows, warnings."""

    applied: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # table → (rows, newest ms)
    parked: list[dict[str, Any]] = field(default_factory=list)
    blanked: list[tuple[str, str]] = field(default_factory=list)  # (table, problem)
    kept: list[tuple[str, int, list[str]]] = field(default_factory=list)  # (table, rows, columns)
    files: int = 0  # file actions committed
    workers: set[str] = field(default_factory=set)  # the processes that applied (host:pid)


class ParallelLake:
    """Which tables the tasks apply, and the batch's run and commits for them (`events`: the
    batch's decoded events; `layouts`: the target's format)."""

    def __init__(self, config: SinkConfig, layouts: LakeLayouts, events: DataFrame) -> None:
        self.config = config
        self.layouts = layouts
        self.events = events
        self.iceberg = config.target == "iceberg"

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

    def split(self, topics: Sequence[str], keeps_history: Any) -> tuple[list[str], list[str]]:
        """(topics the tasks apply, topics the driver's path applies)."""
        if self.config.apply_on != "executors":
            return [], list(topics)
        tasks, driver = [], []
        for topic in topics:
            table = self.config.table_for(topic)
            with self._naming(table):
                bucketed = (
                    not keeps_history(topic)
                    and self.layouts.in_layout(table)
                    and self.layouts.in_layout(table + TOMBSTONE_SUFFIX)
                )
            (tasks if bucketed else driver).append(topic)
        return tasks, driver

    def plan(
        self, topics: Sequence[str], batch_id: int, schemas: Mapping[int, str], truncated: Mapping[str, bytes]
    ) -> Plan:
        tables: dict[str, TablePlan] = {}
        for topic in topics:
            table = self.config.table_for(topic)
            if table not in tables:
                tables[table] = self._plan_table(table, batch_id)
        return Plan(self.config, batch_id, tables, dict(schemas), dict(truncated))

    def _plan_table(self, table: str, batch_id: int) -> TablePlan:
        hard = self.config.delete_mode_for(table) == "hard"
        with self._naming(table):
            main = self.layouts.layout_of(table, self.config.buckets)
            tombs = self.layouts.layout_of(table + TOMBSTONE_SUFFIX, main.buckets) if hard and main else None
            main_done = main is not None and main.exists and self.layouts.has_batch(table, batch_id)
            tombs_done = (
                tombs is not None and tombs.exists and self.layouts.has_batch(table + TOMBSTONE_SUFFIX, batch_id)
            )
        if main is None or (hard and tombs is None):
            raise RuntimeError(f"table {table}: its layout changed while the batch was planned; run again")
        if tombs is not None and tombs.buckets != main.buckets:
            raise RuntimeError(
                f"table {table}: {main.buckets} buckets, but its tombstone table {tombs.buckets}; both were "
                f"written by other jobs. Fix: give this job its own path, or re-snapshot into a new one"
            )
        # Iceberg files need the field ids the catalog assigns when it creates a table: the
        # tasks report the columns of a table not created yet instead of writing its files.
        return TablePlan(
            table,
            main,
            tombs,
            soft=not hard,
            apply_main=not main_done,
            apply_tombs=tombs is not None and not tombs_done,
            probe_main=self.iceberg and not main.exists,
            probe_tombs=self.iceberg and tombs is not None and not tombs.exists,
        )

    def run(self, topics: Sequence[str], plan: Plan, phases: dict[str, float | int]) -> Outcome:
        """The tasks' apply of the events of `topics` (the plan's), then the commits. `phases`:
        where the time went, for the batch's log line."""
        outcome = Outcome()
        for attempt in range(_MAX_PASSES):
            todo = {t for t, tp in plan.tables.items() if tp.apply_main or tp.apply_tombs}
            topics = [t for t in topics if self.config.table_for(t) in todo]
            if not topics:
                return outcome
            t0 = time.perf_counter()
            reports = self._tasks(topics, plan)
            phases["tasks"] = phases.get("tasks", 0.0) + (time.perf_counter() - t0)
            t1 = time.perf_counter()
            again = self._commit(plan, reports, outcome)
            phases["commit"] = phases.get("commit", 0.0) + (time.perf_counter() - t1)
            if not again:
                return outcome
            log.info(
                "batch %d: %s applied again with the columns the tasks found (pass %d)",
                plan.batch_id,
                ", ".join(sorted(again)),
                attempt + 2,
            )
            plan = Plan(
                plan.config,
                plan.batch_id,
                {t: self._plan_table(t, plan.batch_id) for t in sorted(again)},
                plan.schemas,
                plan.truncated,
            )
        raise RuntimeError(
            f"batch {plan.batch_id}: the columns of {', '.join(sorted(plan.tables))} changed on every pass; "
            "run again (each pass adds the columns it found)"
        )

    def _tasks(self, topics: Sequence[str], plan: Plan) -> pa.Table:
        changes = self.events.filter(
            F.col("key").isNotNull() & F.col("__error").isNull() & ~F.col("__op").isin("t", SNAPSHOT_END)
        ).filter(F.col("topic").isin(list(topics)))
        if "schema_id" not in changes.columns:
            changes = changes.withColumn("schema_id", F.lit(None).cast("bigint"))
        changes = changes.select(*_EVENT_COLUMNS, "partition", "offset")
        counts = {topic: plan.tables[self.config.table_for(topic)].main.buckets for topic in topics}
        # In the JVM: no pass of the events through Python before the shuffle.
        bucketed = changes.withColumn(buckets.BUCKET, buckets.bucket_column(counts))
        shuffled = bucketed.repartition("topic", buckets.BUCKET)
        return shuffled.mapInArrow(partial(apply_buckets, plan=plan), _REPORT_SCHEMA).toArrow()

    def _commit(self, plan: Plan, reports: pa.Table, outcome: Outcome) -> set[str]:
        """Commit the tables whose files the tasks could write; return the tables to apply again
        (Iceberg: created or given new columns here first)."""
        rows = reports.to_pylist()
        for r in rows:
            if r["kind"] == "error":  # a task's error: nothing is committed, the batch is replayed
                raise unpack_error(r["schema"])
        by_table: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_table.setdefault(r["table"], []).append(r)
        again: set[str] = set()
        for table, tp in sorted(plan.tables.items()):
            name = table + TOMBSTONE_SUFFIX
            main, tombs = by_table.get(table, []), by_table.get(name, [])
            with self._naming(table):
                # The table first, its tombstones after (delta.py): a delete remembered before
                # its row is deleted would shadow its own event on the replay.
                if tp.apply_main and self._evolve(table, tp.main, tp.probe_main, main):
                    if tp.tombs is not None and (tomb_change := _reported_change(name, tp.tombs.schema, tombs)):
                        self.layouts.change(name, tomb_change)
                    _discard(tp.main, main)
                    _discard(tp.tombs, tombs)
                    again.add(table)
                    continue
                if tp.apply_main and _files(main):
                    outcome.files += self._commit_one(tp.main, main, plan.batch_id)
                if tp.tombs is not None and tp.apply_tombs:
                    if self._evolve(name, tp.tombs, tp.probe_tombs, tombs):
                        _discard(tp.tombs, tombs)
                        again.add(table)
                        continue
                    if _files(tombs):
                        outcome.files += self._commit_one(tp.tombs, tombs, plan.batch_id)
                gone = _absent_everywhere(main)
                if gone and tp.apply_main:
                    self.layouts.change(table, SchemaChange(dropped=tuple(gone)))
            _report([*main, *tombs], outcome)
        return again

    def _evolve(self, table: str, lay: Layout, probed: bool, rows: list[dict[str, Any]]) -> bool:
        """Whether `table`'s part of the batch must be applied again, after changing the table:
        a task found stored values that must change first (a new type, a dropped column:
        schema_rewrite.py, either format); Iceberg: create `table` from the columns its rows
        have, or add the ones it lacks (its files, if any, were written without those columns'
        field ids). Delta adds new columns in its commit."""
        change = _reported_change(table, lay.schema, rows)
        if change:
            self.layouts.change(table, change)
            return True
        if not self.iceberg:
            return False
        found = _schemas(rows)
        if not found:
            return False  # no rows for it in this batch
        schema = _widened(table.removesuffix(TOMBSTONE_SUFFIX), lay.schema, found)
        if probed:
            self.layouts.create(table, schema, lay.buckets)
            return True
        have = set(lay.schema.names if lay.schema is not None else [])
        added = [f for f in schema if f.name not in have]
        if added:
            self.layouts.add_columns(table, added)
        return bool(added)

    def _commit_one(self, lay: Layout, rows: list[dict[str, Any]], batch_id: int) -> int:
        """One transaction (Delta) or snapshot (Iceberg) of the tasks' file actions for the table
        at `lay`, after creating it or adding the columns its new files bring (Delta)."""
        table = rows[0]["table"]
        if not self.iceberg:
            schema = _widened(table.removesuffix(TOMBSTONE_SUFFIX), lay.schema, _schemas(rows))
            if not lay.exists:
                self.layouts.create(table, schema, lay.buckets)
            have = set(lay.schema.names if lay.schema is not None else [])
            added = [f for f in schema if f.name not in have]
            if added and lay.exists:
                self.layouts.add_columns(table, added)
        actions = [
            FileAction(r["kind"], r["path"], r["bucket"], r["size"] or 0, r["stats"], json.loads(r["values"] or "{}"))
            for r in rows
            if r["kind"] in ("add", "remove")
        ]
        return self.layouts.commit(table, lay.path, actions, batch_id)


def _files(rows: list[dict[str, Any]] | None) -> bool:
    return any(r["kind"] in ("add", "remove") for r in rows or [])


def _schemas(rows: list[dict[str, Any]] | None) -> list[pa.Schema]:
    return [pa.ipc.read_schema(pa.py_buffer(r["schema"])) for r in rows or [] if r["kind"] in ("add", "columns")]


def _report(rows: list[dict[str, Any]], outcome: Outcome) -> None:
    """The committed tables' counts, refused rows and warnings, for the engine."""
    for r in rows:
        kind, table = r["kind"], r["table"]
        if kind == "applied":
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


def _discard(lay: Layout | None, rows: list[dict[str, Any]]) -> None:
    """Delete the files a pass wrote for a table it will apply again (no snapshot names them)."""
    for r in rows:
        if r["kind"] != "add" or lay is None:
            continue
        fs, base = filesystem(lay.path)
        try:
            fs.delete_file(f"{base}/{r['path']}")
        except OSError:  # already gone; orphan-file removal would take it otherwise
            log.debug("could not delete %s", r["path"], exc_info=True)


def _absent_everywhere(rows: list[dict[str, Any]]) -> list[str]:
    """The table's columns no bucket's events carried (evolve, try_evolve: each task reports the
    ones its events lack), in the table's order: the source dropped them."""
    reports = [r["problem"] for r in rows if r["kind"] == "absent"]
    if not reports:
        return []
    sets = [set(filter(None, (p or "").split(","))) for p in reports]
    common = set.intersection(*sets)
    return [c for c in (reports[0] or "").split(",") if c in common]


def _reported_change(table: str, existing: pa.Schema | None, rows: list[dict[str, Any]]) -> SchemaChange:
    """The change the tasks' `change` reports ask of `table` (each report: the columns its rows
    have in the table's next schema, conformed under the table's schema.change.behavior): the
    columns they retype, the ones none of them has (dropped), the new ones, and the DEFAULT the
    stored rows take in a new one (its field's metadata, SchemaChange.reported; never in a
    tombstone table, which holds only keys)."""
    reported = [pa.ipc.read_schema(pa.py_buffer(r["schema"])) for r in rows if r["kind"] == "change"]
    if not reported or existing is None:
        return SchemaChange()
    retyped: dict[str, pa.Field] = {}
    added: dict[str, pa.Field] = {}
    filled: dict[str, pa.Scalar] = {}
    scaled: dict[str, int] = {}
    for schema in reported:
        for f in schema:
            if f.name == buckets.BUCKET:
                continue
            if f.name not in existing.names:
                added.setdefault(f.name, f.remove_metadata())
                default = default_of(f)
                if default is not None and not table.endswith(TOMBSTONE_SUFFIX):
                    filled.setdefault(f.name, default)
            elif existing.field(f.name).type != f.type:
                retyped.setdefault(f.name, f.remove_metadata())
                unit = time_unit(f)  # a time-of-day retyped to a finer unit: its stored values scaled
                if unit is not None and existing.field(f.name).type.bit_width <= 32:
                    scaled.setdefault(f.name, time_factor(b"ms", unit))
    dropped = [f.name for f in existing if all(f.name not in s.names for s in reported)]
    return SchemaChange(
        tuple(added.values()), tuple(retyped.values()), tuple(dropped), tuple(filled.items()), tuple(scaled.items())
    )


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

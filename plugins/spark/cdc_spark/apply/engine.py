"""The foreachBatch engine: decode → poison events → latest per key → apply to the target →
dead letters.

Decoding and the per-partition reduction run in Spark, one task per topic partition.
Delta and Iceberg (apply.on=executors, the default) shuffle by (table, key bucket); each task
applies whole buckets and writes files, and the driver commits the tasks' file actions once
per table (lake_parallel.py). Their tables in another layout (apply.on=driver, earlier tables,
scd2) have the per-partition winners collected and reduced in Arrow on the driver;
PostgreSQL shuffles by key, reduces each partition to its keys' latest events in Arrow and
upserts from every partition in parallel.

Under errors.tolerance=all, poison events and the rows a target refuses for their values
(refused.py) are left out and written to the dead-letter table and topic once per batch,
after the apply and before Spark commits the batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_spark.apply import deadletter
from cdc_spark.apply.arrowutil import by_topic
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.errors import BatchTooLargeError, Refused, SinkConfigError, driver_limit, naming_keys
from cdc_spark.apply.latest import decode, latest_and_earlier, topic_marks, truncate_marks
from cdc_spark.apply.metrics import process_metrics
from cdc_spark.apply.refused import PARTITION_RESULT, screen_lake
from cdc_spark.apply.unchanged import flatten_latest, warn_kept_rows
from cdc_spark.decode import Deserializer, FlatBatch, JsonDeserializer, flatten
from cdc_spark.decode.events import SNAPSHOT_END
from cdc_spark.source.options import SourceOptions

log = logging.getLogger(__name__)
_WINNER_COLUMNS = ("topic", "key", "value", "__op", "__seq", "__source_ts_ms", "__deleted", "schema_id")
_LOOSE_COLUMNS = ("topic", "partition", "offset", "__op", "__seq", "__error", "schema_id", "value_schema")


class ChangeApplier:
    """`query.foreachBatch(ChangeApplier(config))`: applies each micro-batch exactly once in effect."""

    def __init__(
        self,
        config: SinkConfig | Mapping[str, Any],
        deserializer: Deserializer | None = None,
        log_options: SourceOptions | Mapping[str, str] | None = None,
    ) -> None:
        """`log_options`: the topic log the stream reads (source options), for the dead-letter topic."""
        self.config = config if isinstance(config, SinkConfig) else SinkConfig.parse(config)
        if log_options is not None and not isinstance(log_options, SourceOptions):
            log_options = SourceOptions.parse(log_options)
        self.log_options = log_options
        if self.config.deadletter_topic and log_options is None:
            raise SinkConfigError(
                "errors.deadletterqueue.topic.name needs the topic log to write to: start the query with "
                "cdc_spark.pipeline.start_query, or pass log_options (the source options) to ChangeApplier"
            )
        self.deserializer = deserializer or JsonDeserializer(self.config.schemas_enable)
        self._target: Any = None
        self._tables: set[str] = set()
        self._schemas: dict[int, str] = {}  # this batch's value schemas by id
        self._truncated: dict[str, bytes] | None = None  # table → last truncate's sequence (stored)
        self._poison: DataFrame | None = None  # this batch's poison events, under errors.tolerance=all
        self._parked: list[dict[str, Any]] = []  # this batch's refused rows: position, problem, error_class
        self.last_batch_id: int | None = None
        # Where this batch's time went (Delta/Iceberg, on the driver): phase → seconds, for its log line.
        self._phases: dict[str, float | int] = {}
        self.metrics = process_metrics()  # per-table figures (apply/metrics.py), read by `cdc run`
        # Delta/Iceberg, apply.on=executors: the processes (host:pid) whose tasks applied the last batch.
        self.apply_workers: frozenset[str] = frozenset()

    @property
    def target(self) -> Any:
        """Built lazily on the driver (catalog and table handles are not picklable)."""
        if self._target is None:
            kind = self.config.target
            if kind == "delta":
                from cdc_spark.apply.delta import DeltaTarget

                self._target = DeltaTarget(self.config)
            elif kind == "iceberg":
                from cdc_spark.apply.iceberg import IcebergTarget

                self._target = IcebergTarget(self.config)
            elif kind == "parquet":
                from cdc_spark.apply.parquet import ParquetChangelog

                self._target = ParquetChangelog(self.config)
        return self._target

    def __call__(self, raw: DataFrame, batch_id: int) -> None:
        started = time.perf_counter()
        # The changelog keeps every event; the other targets need only each key's latest.
        if "__seq" not in raw.columns:  # raw records (the source did not decode them)
            raw = decode(raw, self.deserializer, self.config.keeps_only_latest, self.config.placeholder)
        self._poison, self._parked, self._phases, self._schemas = None, [], {}, {}
        if self.config.target in ("delta", "iceberg") and self.config.apply_on == "executors":
            events = raw.persist()
            try:
                self._apply_lake(events, batch_id)
                self._dead_letter(events, batch_id)
            finally:
                events.unpersist()
        elif self.config.target in ("delta", "iceberg"):  # scd1 and scd2 tables alike (mode_for)
            self._apply_collected(raw, batch_id)
            self._dead_letter(raw, batch_id)
        else:
            events = raw.persist()
            try:
                self._apply(events, batch_id)
                self._dead_letter(events, batch_id)
            finally:
                events.unpersist()
        self.metrics.batch_done()
        took = time.perf_counter() - started
        log.info("batch %d applied to %s in %.2fs%s", batch_id, self.config.target, took, self._split())
        self.last_batch_id = batch_id
        every = self.config.maintenance_interval_batches
        if every > 0 and batch_id > 0 and batch_id % every == 0:
            self.maintain()

    def _split(self) -> str:
        """` (collect 0.52s, latest 0.03s, ...)`: the batch's phases on the driver, or nothing."""
        if not self._phases:
            return ""
        parts = (f"{k} {v:.2f}s" if isinstance(v, float) else f"{k} {v}" for k, v in self._phases.items())
        return f" ({', '.join(parts)})"

    def _apply(self, events: DataFrame, batch_id: int) -> None:
        """PostgreSQL and the Parquet changelog: Spark jobs over the persisted batch."""
        t0 = time.perf_counter()
        # Errors and truncates are the only keyless rows: one small collect finds both, and
        # the value schemas the source cut off the records (decode/schemas.py).
        if "value_schema" not in events.columns:  # decoded elsewhere: full values, no side channel
            events = events.withColumn("schema_id", F.lit(None).cast("bigint"))
            events = events.withColumn("value_schema", F.lit(None).cast("string"))
        loose = events.filter(F.col("key").isNull() | F.col("value_schema").isNotNull())
        loose = loose.select(*_LOOSE_COLUMNS).collect()
        self._schemas = {r["schema_id"]: r["value_schema"] for r in loose if r["value_schema"] is not None}
        self._handle_errors(loose, lambda: events.filter(F.col("__error").isNotNull()), batch_id)
        log.debug("batch %d: decoded, poison handled in %.2fs", batch_id, time.perf_counter() - t0)
        good = events.filter(F.col("__error").isNull())
        # Snapshot ends are the sink's own marker rows (decode/events.py), not events.
        if self.config.target == "parquet":
            self.target.write(good.filter(F.col("__op") != SNAPSHOT_END), batch_id)
            return
        self._truncate(truncate_marks(loose, self.config.truncate_enabled), batch_id)
        self._apply_postgres(good.filter(~F.col("__op").isin("t", SNAPSHOT_END)))

    def _handle_errors(self, loose: Sequence[Any], failed: Callable[[], DataFrame], batch_id: int) -> None:
        """Stop on the first poison event (tolerance none), or keep them all for the dead letters (all)."""
        errors = [r for r in loose if r["__error"] is not None]
        if errors and self.config.errors_tolerance == "none":
            deadletter.stop_on_first(errors, self.config.table_for, failed)
        elif errors:
            self._poison = failed() if self._poison is None else self._poison.unionByName(failed())
            self.metrics.rejected(self.config.table_for(r["topic"]) for r in errors)
            log.debug("batch %d: %d poison events for the dead letters", batch_id, len(errors))

    @property
    def _tolerant(self) -> bool:
        return self.config.errors_tolerance == "all"

    def _dead_letter(self, events: DataFrame, batch_id: int) -> None:
        """The batch's poison events and refused rows' events to the dead-letter table and topic,
        in one write per batch (a replay overwrites the table's batch directory)."""
        if self._poison is None and not self._parked:
            return
        self.metrics.rejected(self.config.table_for(p["topic"]) for p in self._parked)
        refused = deadletter.refused_records(events, self._parked, self._schemas) if self._parked else None
        where = []
        if self.config.deadletter_path:
            deadletter.write(self._poison, self.config.deadletter_path, batch_id, refused)
            where.append(f"the dead-letter table {self.config.deadletter_path}")
        if self.config.deadletter_topic and self.log_options is not None:
            deadletter.send(self._poison, self.log_options, self.config, refused)
            where.append(f"the dead-letter topic {self.config.deadletter_topic}")
        for p in self._parked:
            log.warning(
                "%s: not applied (errors.tolerance=all), the target keeps the key's previous row; its event "
                "%s-%s@%s is in %s",
                p["problem"],
                p["topic"],
                p["partition"],
                p["offset"],
                " and ".join(where),
                extra={"table": self.config.table_for(p["topic"])},  # the JSON log's `table` field
            )

    def _park(self, rows: pa.Table, refused: Refused) -> None:
        """Keep the event of a refused row (`refused.row` of the events `rows`) for the dead letters."""
        event = rows.slice(refused.row, 1).select(["topic", "partition", "offset"]).to_pylist()[0]
        self._parked.append({**event, "problem": refused.problem, "error_class": refused.error_class})

    def _screen_lake(
        self, table: str, rows: pa.Table, flat: FlatBatch, reflatten: Callable[[pa.Table], FlatBatch]
    ) -> FlatBatch:
        """Under errors.tolerance=all, `flat` without the rows the lake refuses (their events
        parked for the dead letters) and with deletes' refused old values left out (refused.py)."""
        if not self._tolerant:
            return flat
        screened = screen_lake(table, rows, flat, reflatten)
        for refused in screened.refused:
            self._park(rows, refused)
        for problem in screened.blanked:
            log.warning("%s; the row is deleted, without that value of its old row", problem, extra={"table": table})
        return screened.flat

    def _apply_collected(self, events: DataFrame, batch_id: int) -> None:
        """Delta/Iceberg commit on the driver: one collect of the batch (the source tasks already
        kept each key's latest event per partition), then everything else in Arrow here."""
        t0 = time.perf_counter()
        batch = _collect(events.drop("raw_key", "headers"), batch_id)
        if "value_schema" not in batch.column_names:  # decoded elsewhere: full values, no side channel
            batch = batch.append_column("schema_id", pa.nulls(batch.num_rows, pa.int64()))
            batch = batch.append_column("value_schema", pa.nulls(batch.num_rows, pa.string()))
        keyless = pc.is_null(batch["key"])
        loose = batch.filter(pc.or_(keyless, pc.is_valid(batch["value_schema"]))).select(list(_LOOSE_COLUMNS))
        rows = loose.to_pylist()
        self._schemas = {r["schema_id"]: r["value_schema"] for r in rows if r["value_schema"] is not None}
        self._handle_errors(rows, lambda: events.filter(F.col("__error").isNotNull()), batch_id)
        log.debug("batch %d: %d rows collected in %.2fs", batch_id, batch.num_rows, time.perf_counter() - t0)
        # events: the rows collected (each partition's latest per key); collect: Spark's read, decode
        # and per-partition reduction and the transfer to the driver.
        self._phases.update(events=batch.num_rows, collect=time.perf_counter() - t0)
        # History (scd2) tables keep every version: truncates and snapshot ends clear nothing there.
        truncates = truncate_marks(rows, self.config.truncate_enabled)
        self._truncate({t: seq for t, seq in truncates.items() if not self._keeps_history(t)}, batch_id)
        # Keyed rows other than truncates. A poison event has no key and often no op (malformed
        # JSON): its null op must not make the test null, which `all` would skip and keep it.
        is_change = pc.and_(pc.invert(keyless), pc.fill_null(pc.not_equal(batch["__op"], "t"), True))
        changes = batch if pc.all(is_change).as_py() else batch.filter(is_change)
        history = [t for t in pc.unique(changes["topic"]).to_pylist() if self._keeps_history(t)]
        if history:
            in_history = pc.is_in(changes["topic"], value_set=pa.array(history, changes.schema.field("topic").type))
            self._apply_scd2(changes.filter(in_history), batch_id)
            changes = changes.filter(pc.invert(in_history))
        # scd1 tables: each key's latest event of the batch (the source forwards every event
        # when another table keeps history, so the reduction across them happens here).
        marks = topic_marks(changes["topic"], self._truncate_marks(), self.config.table_for)
        t1 = time.perf_counter()
        partial_topics = self.config.null_update_topics(pc.unique(changes["topic"]).to_pylist())
        winners = latest_and_earlier(changes, marks, self.config.placeholder, partial_topics)
        self._phases["latest"] = time.perf_counter() - t1
        self._apply_winners(*winners, batch_id)

    def _layouts(self) -> Any:
        """The target's bucketed tables (lake_parallel.LakeLayouts), built on the driver."""
        if self.config.target == "iceberg":
            from cdc_spark.apply.iceberg_layout import IcebergLayouts

            return IcebergLayouts(self.target.catalog, self.target.namespace, self.config.app_id)
        from cdc_spark.apply.delta_layout import DeltaLayouts

        return DeltaLayouts(self.target.path, self.config.app_id, self.config.partition_by)

    def _apply_lake(self, events: DataFrame, batch_id: int) -> None:
        """Delta and Iceberg with apply.on=executors: the tables in the bucketed layout are
        applied by Spark tasks and committed here from their file actions (lake_parallel.py);
        the others (an earlier layout, scd2) by the driver's path (_apply_collected)."""
        from cdc_spark.apply.lake_parallel import ParallelLake

        t0 = time.perf_counter()
        layouts = self._layouts()
        topics = [r["topic"] for r in events.select("topic").distinct().collect() if r["topic"] is not None]
        mine, driver = ParallelLake(self.config, layouts, events).split(sorted(topics), self._keeps_history)
        if driver:
            on_driver = F.col("topic").isin(driver)
            if not mine:  # poison events without a topic go with the driver's share
                on_driver = on_driver | F.col("topic").isNull()
            self._apply_collected(events.filter(on_driver), batch_id)
        if not mine:
            return
        mine_only = events.filter(F.col("topic").isin(mine) | (F.col("topic").isNull() if not driver else F.lit(False)))
        if "value_schema" not in events.columns:  # decoded elsewhere: full values, no side channel
            mine_only = mine_only.withColumn("schema_id", F.lit(None).cast("bigint"))
            mine_only = mine_only.withColumn("value_schema", F.lit(None).cast("string"))
        parallel = ParallelLake(self.config, layouts, mine_only)
        # Keyless rows (poison events, truncates, snapshot ends) and the value schemas the source
        # cut off the records (decode/schemas.py): one small collect.
        loose = mine_only.filter(F.col("key").isNull() | F.col("value_schema").isNotNull())
        loose = loose.select(*_LOOSE_COLUMNS).collect()
        self._schemas.update({r["schema_id"]: r["value_schema"] for r in loose if r["value_schema"] is not None})
        self._handle_errors(loose, lambda: mine_only.filter(F.col("__error").isNotNull()), batch_id)
        self._truncate(truncate_marks(loose, self.config.truncate_enabled), batch_id)
        self._phases["plan"] = time.perf_counter() - t0
        plan = parallel.plan(mine, batch_id, self._schemas, self._truncate_marks())
        outcome = parallel.run(mine, plan, self._phases)
        for table, (rows, newest) in sorted(outcome.applied.items()):
            if rows == 0:
                continue  # every row refused (errors.tolerance=all): not a batch of the table
            self.metrics.applied(table, rows, newest_ms=newest)
            self._tables.add(table)
            log.debug("batch %d: %d rows applied to %s by Spark tasks", batch_id, rows, table, extra={"table": table})
        self._parked.extend(outcome.parked)
        for table, problem in outcome.blanked:
            log.warning("%s; the row is deleted, without that value of its old row", problem, extra={"table": table})
        for table, rows, columns in outcome.kept:
            warn_kept_rows(table, rows, columns)
        self._phases["files"] = outcome.files
        self.apply_workers = frozenset(outcome.workers)

    def _keeps_history(self, topic: str) -> bool:
        return self.config.mode_for(self.config.table_for(topic)) == "scd2"

    def _truncate_marks(self) -> dict[str, bytes]:
        """Where each table was last truncated (or completely snapshotted), read once from the
        target and kept current here (this query is the tables' only writer)."""
        if self._truncated is None:
            if self.config.target == "postgres":
                from cdc_spark.apply.postgres import PostgresWriter

                writer = PostgresWriter(self.config)
                try:
                    self._truncated = writer.truncate_marks()
                finally:
                    writer.close()
            else:
                self._truncated = self.target.truncate_marks()
        return self._truncated

    def _truncate(self, truncates: Mapping[str, bytes], batch_id: int) -> None:
        """Clear each truncated table of older rows and store the truncate's sequence with it,
        so that older events arriving in later batches (another partition, a replay) stay out."""
        if not truncates:
            return
        marks = self._truncate_marks()
        writer = None
        if self.config.target == "postgres":
            from cdc_spark.apply.postgres import PostgresWriter

            writer = PostgresWriter(self.config)
        try:
            for topic, seq in sorted(truncates.items()):
                table = self.config.table_for(topic)
                if writer is not None:
                    writer.truncate(table, seq)
                else:
                    self.target.truncate(table, seq, batch_id)
                marks[table] = max(marks.get(table, seq), seq)
        finally:
            if writer is not None:
                writer.close()

    def _apply_winners(self, collected: pa.Table, earlier: pa.Table, batch_id: int) -> None:
        """`earlier`: events older than their key's winner that may hold values it lacks."""
        before = by_topic(earlier) if earlier.num_rows else {}
        for topic, rows in sorted(by_topic(collected).items()):
            table = self.config.table_for(topic)
            t1 = time.perf_counter()
            reflatten = partial(
                flatten_latest,
                topic,
                earlier=before.get(topic),
                schemas=self._schemas,
                placeholder=self.config.placeholder,
                options=self.config.options_for(table),
                table=table,
            )
            flat = self._screen_lake(table, rows, reflatten(rows), reflatten)
            t2 = time.perf_counter()
            if flat.table.num_rows == 0:
                continue  # every row refused
            with naming_keys(table, flat):  # errors name the table and key, and stop the query
                self.target.apply(table, flat, batch_id)
            self.metrics.applied(table, flat.table.num_rows, rows)
            t3 = time.perf_counter()
            self._phases["flatten"] = self._phases.get("flatten", 0.0) + (t2 - t1)
            self._phases["write"] = self._phases.get("write", 0.0) + (t3 - t2)  # the target's MERGE(s)
            log.debug(
                "batch %d: %s flattened in %.2fs, applied in %.2fs",
                batch_id,
                table,
                t2 - t1,
                t3 - t2,
                extra={"table": table},
            )
            self._tables.add(table)

    def _apply_scd2(self, collected: pa.Table, batch_id: int) -> None:
        """The batch's keyed events of the scd2 tables: every distinct event is a version
        (truncates are not applied to history, as in AUTO CDC; a replayed event is dropped
        when the history is chained)."""
        from cdc_spark.apply.scd2 import Scd2Delta

        writer = Scd2Delta(self.config)
        for topic, rows in sorted(by_topic(collected).items()):
            table = self.config.table_for(topic)
            reflatten = partial(_flatten_selected, topic, schemas=self._schemas, table=table, config=self.config)
            flat = self._screen_lake(table, rows, reflatten(rows), reflatten)
            if flat.table.num_rows == 0:
                continue
            with naming_keys(table, flat):
                writer.apply(self.target.path(table), table, flat, batch_id)
            self.metrics.applied(table, flat.table.num_rows, rows)
            log.debug("batch %d: %d versions added to %s", batch_id, flat.table.num_rows, table, extra={"table": table})
            self._tables.add(table)

    def _apply_postgres(self, changes: DataFrame) -> None:
        """Shuffle by key (a hash exchange, no sort), then each partition keeps its keys' latest
        events in Arrow and upserts them: partitions hold disjoint keys, so they run in parallel."""
        from cdc_spark.apply.postgres import apply_partition

        by_key = changes.select(*_WINNER_COLUMNS, "partition", "offset").repartition("topic", "key")
        marks = dict(self._truncate_marks())
        applied = by_key.mapInArrow(
            partial(apply_partition, config=self.config, schemas=self._schemas, truncated=marks),
            PARTITION_RESULT,
        )
        for row in applied.collect():
            if row["rows"] is not None:
                self._tables.add(self.config.table_for(row["topic"]))
                self.metrics.applied(self.config.table_for(row["topic"]), row["rows"])
            elif row["deleted"]:  # errors.tolerance=all: a delete applied without a value it refuses
                log.warning(
                    "%s; the row is deleted, without that value of its old row",
                    row["problem"],
                    extra={"table": self.config.table_for(row["topic"])},
                )
            else:  # errors.tolerance=all: a row PostgreSQL refuses, left out
                self._parked.append({k: row[k] for k in ("topic", "partition", "offset", "problem", "error_class")})

    def maintain(self) -> None:
        """Tombstone retention, compaction and checkpoints for the tables this query wrote."""
        if self.config.target == "parquet":
            return
        if self.config.target == "postgres":
            from cdc_spark.apply.postgres import PostgresWriter

            writer = PostgresWriter(self.config)
            try:
                writer.maintain(sorted(self._tables))
            finally:
                writer.close()
            return
        self.target.maintain(sorted(self._tables))


def _flatten_selected(
    topic: str, rows: pa.Table, schemas: Mapping[int, str], table: str, config: SinkConfig
) -> FlatBatch:
    """Every event of `rows` flattened, with the columns the table's column lists write."""
    return config.options_for(table).select(flatten(topic, rows, schemas), table)


def _collect(frame: DataFrame, batch_id: int) -> pa.Table:
    """`frame.toArrow()`, with advice instead of a JVM stack trace when the driver refuses its size."""
    try:
        return frame.toArrow()
    except Exception as e:
        cause = driver_limit(e)
        if cause is None:
            raise
        log.debug("batch %d: collect refused by the driver", batch_id, exc_info=True)
        raise BatchTooLargeError(batch_id, cause) from None

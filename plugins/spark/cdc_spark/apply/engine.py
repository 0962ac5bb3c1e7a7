"""The foreachBatch engine: decode → dead-letter → latest per key → apply to the target.

Decoding and the per-partition reduction run in Spark, one task per topic partition.
Delta and Iceberg commit once per table on the driver (their writers are single-committer),
so their per-partition winners are collected and reduced across partitions in Arrow there;
PostgreSQL shuffles by key, reduces each partition to its keys' latest events in Arrow and
upserts from every partition in parallel.
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
from cdc_spark.apply.errors import BatchTooLargeError, SinkConfigError, driver_limit, naming_keys
from cdc_spark.apply.latest import decode, latest_and_earlier, topic_marks, truncate_marks
from cdc_spark.apply.unchanged import flatten_latest
from cdc_spark.decode import Deserializer, JsonDeserializer, flatten
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
        self.last_batch_id: int | None = None

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
        if self.config.target in ("delta", "iceberg") and self.config.mode == "scd1":
            self._apply_collected(raw, batch_id)
        else:
            events = raw.persist()
            try:
                self._apply(events, batch_id)
            finally:
                events.unpersist()
        log.info("batch %d applied to %s in %.2fs", batch_id, self.config.target, time.perf_counter() - started)
        self.last_batch_id = batch_id
        every = self.config.maintenance_interval_batches
        if every > 0 and batch_id > 0 and batch_id % every == 0:
            self.maintain()

    def _apply(self, events: DataFrame, batch_id: int) -> None:
        """PostgreSQL, the Parquet changelog and SCD2: Spark jobs over the persisted batch."""
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
        if self.config.mode == "scd2":
            self._apply_scd2(good, batch_id)
            return
        self._truncate(truncate_marks(loose, self.config.truncate_enabled), batch_id)
        self._apply_postgres(good.filter(~F.col("__op").isin("t", SNAPSHOT_END)))

    def _handle_errors(self, loose: Sequence[Any], failed: Callable[[], DataFrame], batch_id: int) -> None:
        """Stop on the first poison event (tolerance none) or dead-letter them all (all)."""
        errors = [r for r in loose if r["__error"] is not None]
        if errors and self.config.errors_tolerance == "none":
            deadletter.stop_on_first(errors, self.config.table_for, failed)
        elif errors:
            frame = failed()
            if self.config.deadletter_path:
                deadletter.write(frame, self.config.deadletter_path, batch_id)
            if self.config.deadletter_topic and self.log_options is not None:
                deadletter.send(frame, self.log_options, self.config)

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
        self._truncate(truncate_marks(rows, self.config.truncate_enabled), batch_id)
        is_change = pc.and_(pc.invert(keyless), pc.not_equal(batch["__op"], "t"))
        changes = batch if pc.all(is_change).as_py() else batch.filter(is_change)
        marks = topic_marks(changes["topic"], self._truncate_marks(), self.config.table_for)
        self._apply_winners(*latest_and_earlier(changes, marks, self.config.placeholder), batch_id)

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
            flat = flatten_latest(topic, rows, before.get(topic), self._schemas, self.config.placeholder)
            t2 = time.perf_counter()
            with naming_keys(table, flat):  # errors name the table and key, and stop the query
                self.target.apply(table, flat, batch_id)
            t3 = time.perf_counter()
            log.debug("batch %d: %s flattened in %.2fs, applied in %.2fs", batch_id, table, t2 - t1, t3 - t2)
            self._tables.add(table)

    def _apply_scd2(self, good: DataFrame, batch_id: int) -> None:
        """Every distinct event is a version (truncates are not applied to history, as in AUTO CDC)."""
        from cdc_spark.apply.scd2 import Scd2Delta

        events = good.filter(~F.col("__op").isin("t", SNAPSHOT_END)).dropDuplicates(["topic", "key", "__seq"])
        collected = _collect(events.select(*_WINNER_COLUMNS), batch_id)
        writer = Scd2Delta(self.config)
        for topic, rows in sorted(by_topic(collected).items()):
            table = self.config.table_for(topic)
            flat = flatten(topic, rows, self._schemas)
            with naming_keys(table, flat):
                writer.apply(self.target.path(table), table, flat, batch_id)
            self._tables.add(table)

    def _apply_postgres(self, changes: DataFrame) -> None:
        """Shuffle by key (a hash exchange, no sort), then each partition keeps its keys' latest
        events in Arrow and upserts them: partitions hold disjoint keys, so they run in parallel."""
        from cdc_spark.apply.postgres import apply_partition

        by_key = changes.select(*_WINNER_COLUMNS, "offset").repartition("topic", "key")
        marks = dict(self._truncate_marks())
        applied = by_key.mapInArrow(
            partial(apply_partition, config=self.config, schemas=self._schemas, truncated=marks),
            "topic string, rows bigint",
        )
        for row in applied.collect():
            self._tables.add(self.config.table_for(row["topic"]))

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

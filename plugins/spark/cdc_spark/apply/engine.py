"""The foreachBatch engine: decode → dead-letter → latest per key → apply to the target.

Decoding and the per-key reduction run in Spark, one task per topic partition and then
one per shuffle partition. Delta and Iceberg commit once per table on the driver (their
writers are single-committer); PostgreSQL upserts from every partition in parallel.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_spark.apply import deadletter
from cdc_spark.apply.arrowutil import by_topic
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.latest import decode, latest_per_key, truncate_marks
from cdc_spark.decode import Deserializer, JsonDeserializer, flatten

log = logging.getLogger(__name__)
_WINNER_COLUMNS = ("topic", "key", "value", "__op", "__seq", "__source_ts_ms", "__deleted")


class ChangeApplier:
    """`query.foreachBatch(ChangeApplier(config))`: applies each micro-batch exactly once in effect."""

    def __init__(self, config: SinkConfig | Mapping[str, Any], deserializer: Deserializer | None = None) -> None:
        self.config = config if isinstance(config, SinkConfig) else SinkConfig.parse(config)
        self.deserializer = deserializer or JsonDeserializer(self.config.schemas_enable)
        self._target: Any = None
        self._tables: set[str] = set()
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
            raw = decode(raw, self.deserializer, combine=self.config.keeps_only_latest)
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
        errors = events.filter(F.col("__error").isNotNull())
        if self.config.errors_tolerance == "none":
            deadletter.stop_on_first(errors)
        elif errors.limit(1).count():
            deadletter.write(errors, self.config.deadletter_path or "", batch_id)
        log.debug("batch %d: decoded, poison handled", batch_id)
        good = events.filter(F.col("__error").isNull())
        if self.config.target == "parquet":
            self.target.write(good, batch_id)
            return
        if self.config.mode == "scd2":
            self._apply_scd2(good, batch_id)
            return
        truncates = truncate_marks(good) if self.config.truncate_enabled else {}
        winners = latest_per_key(good, truncates)
        if self.config.target == "postgres":
            self._apply_postgres(winners, truncates)
        else:
            self._apply_driver(winners, truncates, batch_id)

    def _apply_driver(self, winners: DataFrame, truncates: dict[str, bytes], batch_id: int) -> None:
        t0 = time.perf_counter()
        collected = winners.select(*_WINNER_COLUMNS).toArrow()
        log.debug("batch %d: %d winners collected in %.2fs", batch_id, collected.num_rows, time.perf_counter() - t0)
        for topic, seq in sorted(truncates.items()):
            self.target.truncate(self.config.table_for(topic), seq, batch_id)
        for topic, rows in sorted(by_topic(collected).items()):
            table = self.config.table_for(topic)
            self.target.apply(table, flatten(topic, rows), batch_id)
            self._tables.add(table)

    def _apply_scd2(self, good: DataFrame, batch_id: int) -> None:
        """Every distinct event is a version (truncates are not applied to history, as in AUTO CDC)."""
        from cdc_spark.apply.scd2 import Scd2Delta

        events = good.filter(F.col("__op") != "t").dropDuplicates(["topic", "key", "__seq"])
        collected = events.select(*_WINNER_COLUMNS).toArrow()
        writer = Scd2Delta(self.config)
        for topic, rows in sorted(by_topic(collected).items()):
            table = self.config.table_for(topic)
            writer.apply(self.target.path(table), table, flatten(topic, rows), batch_id)
            self._tables.add(table)

    def _apply_postgres(self, winners: DataFrame, truncates: dict[str, bytes]) -> None:
        from cdc_spark.apply.postgres import PostgresWriter, apply_partition

        if truncates:
            writer = PostgresWriter(self.config)
            try:
                for topic, seq in sorted(truncates.items()):
                    writer.truncate(self.config.table_for(topic), seq)
            finally:
                writer.close()
        applied = winners.select(*_WINNER_COLUMNS).mapInArrow(
            partial(apply_partition, config=self.config), "topic string, rows bigint"
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

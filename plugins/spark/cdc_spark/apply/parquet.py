"""Append-only Parquet changelog written by Spark itself, for audit: every decoded event of
the batch (not just the winners), under `<path>/batch_id=<n>/topic=<topic>/`.

A replayed batch overwrites its own directory, so the changelog has no duplicates.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_spark.apply.config import SinkConfig


class ParquetChangelog:
    def __init__(self, config: SinkConfig) -> None:
        self.config = config

    def write(self, events: DataFrame, batch_id: int) -> None:
        (
            events.select(
                "topic",
                "partition",
                "offset",
                "key",
                F.col("value").cast("string").alias("value"),
                "__op",
                "__seq",
                "__source_ts_ms",
                "__deleted",
            )
            .write.mode("overwrite")
            .partitionBy("topic")
            .parquet(f"{(self.config.path or '').rstrip('/')}/batch_id={batch_id}")
        )

"""Poison events: a Parquet dead-letter table (errors.tolerance=all) or a clear stop (none)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_spark.apply.errors import PoisonEventError

DEADLETTER_COLUMNS = ("topic", "partition", "offset", "key", "value", "error", "batch_id", "failed_at")


def stop_on_first(errors: DataFrame) -> None:
    first = errors.orderBy("topic", "partition", "offset").limit(1).collect()
    if first:
        r = first[0]
        raise PoisonEventError(
            f"poison event at {r['topic']}-{r['partition']}@{r['offset']}: {r['__error']}. "
            "Fix the producer, or set errors.tolerance=all with errors.deadletterqueue.path to route such "
            "events to a dead-letter table and keep going."
        )


def write(errors: DataFrame, path: str, batch_id: int) -> None:
    """One sub-directory per batch, overwritten on replay, so a re-run batch adds no duplicates."""
    (
        errors.select(
            "topic",
            "partition",
            "offset",
            F.col("raw_key").cast("string").alias("key"),
            F.col("value").cast("string").alias("value"),
            F.col("__error").alias("error"),
            F.lit(batch_id).cast("long").alias("batch_id"),
            F.current_timestamp().alias("failed_at"),
        )
        .write.mode("overwrite")
        .parquet(f"{path.rstrip('/')}/batch_id={batch_id}")
    )

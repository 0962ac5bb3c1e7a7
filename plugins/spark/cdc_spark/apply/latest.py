"""The Spark half of a micro-batch: decode in the source's partitions, then keep the latest
event per key (one shuffle by key, so the work stays partition-parallel)."""

from __future__ import annotations

from functools import partial

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from cdc_spark.decode import DECODED_SCHEMA, Deserializer, decode_batches


def decode(raw: DataFrame, deserializer: Deserializer, combine: bool = True) -> DataFrame:
    """One decoding task per source partition (mapInArrow keeps the partitioning).

    `combine` keeps only each key's latest event per source partition before the shuffle.
    """
    return raw.mapInArrow(partial(decode_batches, des=deserializer, combine=combine), DECODED_SCHEMA)


def truncate_marks(good: DataFrame) -> dict[str, bytes]:
    """topic → sequence of its latest truncate in the batch (few rows: collected)."""
    rows = good.filter(F.col("__op") == "t").groupBy("topic").agg(F.max("__seq").alias("seq")).collect()
    return {r["topic"]: bytes(r["seq"]) for r in rows}


def latest_per_key(good: DataFrame, truncates: dict[str, bytes]) -> DataFrame:
    """The winner per (topic, key): highest `__seq`, then the later offset for exact replays.

    Events older than a truncate of their topic in the same batch are dropped: the
    truncate clears what they wrote.
    """
    changes = good.filter(F.col("__op") != "t")
    for topic, seq in truncates.items():
        changes = changes.filter(~((F.col("topic") == topic) & (F.col("__seq") < F.lit(seq))))
    w = Window.partitionBy("topic", "key").orderBy(F.col("__seq").desc(), F.col("offset").desc())
    return changes.withColumn("_rn", F.row_number().over(w)).filter(F.col("_rn") == 1).drop("_rn")

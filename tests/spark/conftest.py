"""One SparkSession for the whole session (startup costs seconds) with the `cdc` source."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

# Spark's Python workers must run this interpreter (the one with cdc and cdc_spark), or
# they start a bare system Python and time out.
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


def spark_builder():  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[2]")
        .appName("cdc-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        # Small enough that test_large_batch.py exceeds it with ~25 MB (default: 1 GiB).
        .config("spark.driver.maxResultSize", "16m")
    )


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from cdc_spark.source import register

    session = spark_builder().getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()

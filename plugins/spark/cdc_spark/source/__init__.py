"""The `cdc` streaming data source over the topic log (Kafka or embedded)."""

from __future__ import annotations

from typing import Any

from cdc_spark.source.options import SourceOptionError, SourceOptions
from cdc_spark.source.reader import SCHEMA, CdcDataSource, CdcStreamReader


def register(spark: Any) -> None:
    """Make `spark.readStream.format("cdc")` available in this session."""
    spark.dataSource.register(CdcDataSource)


__all__ = ["SCHEMA", "CdcDataSource", "CdcStreamReader", "SourceOptionError", "SourceOptions", "register"]

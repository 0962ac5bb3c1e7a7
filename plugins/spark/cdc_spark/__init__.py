"""cdc's Spark sink: read change topics with `spark.readStream.format("cdc")`, decode the
Debezium events, and apply them per key in sequence order to lake and warehouse tables."""

from cdc_spark.source import register

__all__ = ["register"]

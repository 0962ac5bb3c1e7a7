"""Applying change events to tables in foreachBatch: Delta, PostgreSQL, Iceberg, Parquet."""

from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.engine import ChangeApplier
from cdc_spark.apply.errors import (
    PoisonEventError,
    SchemaChangeRefusedError,
    SchemaEvolutionError,
    SinkConfigError,
    TargetApplyError,
    ValueOutOfRangeError,
)

__all__ = [
    "ChangeApplier",
    "PoisonEventError",
    "SchemaChangeRefusedError",
    "SchemaEvolutionError",
    "SinkConfig",
    "SinkConfigError",
    "TargetApplyError",
    "ValueOutOfRangeError",
]

"""Applying change events to tables in foreachBatch: Delta, PostgreSQL, Iceberg, Parquet."""

from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.engine import ChangeApplier
from cdc_spark.apply.errors import (
    PoisonEventError,
    SchemaEvolutionError,
    SinkConfigError,
    TargetApplyError,
    TypeWideningError,
    ValueOutOfRangeError,
)

__all__ = [
    "ChangeApplier",
    "PoisonEventError",
    "SchemaEvolutionError",
    "SinkConfig",
    "SinkConfigError",
    "TargetApplyError",
    "TypeWideningError",
    "ValueOutOfRangeError",
]

"""Debezium change events: deserializing, ordering (`__seq`) and flattening to rows."""

from cdc_spark.decode.deserializer import DeserializeError, Deserializer, JsonDeserializer
from cdc_spark.decode.events import DECODED_SCHEMA, decode_batches, decode_one
from cdc_spark.decode.flatbatch import META_COLUMNS, ColumnTypeConflict, FlatBatch
from cdc_spark.decode.flatten import flatten

__all__ = [
    "DECODED_SCHEMA",
    "META_COLUMNS",
    "ColumnTypeConflict",
    "DeserializeError",
    "Deserializer",
    "FlatBatch",
    "JsonDeserializer",
    "decode_batches",
    "decode_one",
    "flatten",
]

"""Debezium change events: deserializing, ordering (`__seq`) and flattening to rows.

The names below are loaded on first use (PEP 562): Spark starts several Python processes per
query (the data source's schema lookup, the streaming source's planner) that import this
package only for `unavailable`, and the decoders pull in numpy, pandas (through pyarrow) and
the flattening code, about 0.4 s of each such process's start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Eager: the function shares its module's name, and importing the submodule (`from
# cdc_spark.decode.flatten import …`) would otherwise leave the module under this name.
from cdc_spark.decode.flatten import flatten

if TYPE_CHECKING:
    from cdc_spark.decode.deserializer import DeserializeError, Deserializer, JsonDeserializer
    from cdc_spark.decode.events import DECODED_SCHEMA, decode_batches, decode_one
    from cdc_spark.decode.flatbatch import META_COLUMNS, ColumnTypeConflict, FlatBatch

_HOME = {
    "DECODED_SCHEMA": "events",
    "META_COLUMNS": "flatbatch",
    "ColumnTypeConflict": "flatbatch",
    "DeserializeError": "deserializer",
    "Deserializer": "deserializer",
    "FlatBatch": "flatbatch",
    "JsonDeserializer": "deserializer",
    "decode_batches": "events",
    "decode_one": "events",
}

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


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once: later lookups are plain module attributes
    return value

"""HoistField$Key / HoistField$Value: wrap the key or value in a one-field Struct or map (Kafka's HoistField)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data import SchemaBuilder, Struct
from cdc.api.transforms import Transformation
from cdc.transforms._util import KeySide, OperatingSide, R, SchemaUpdateCache, ValueSide

FIELD = "field"

CONFIG_DEF = ConfigDef().define(
    FIELD,
    ConfigType.STRING,
    importance=Importance.MEDIUM,
    documentation="Field name for the single field that will be created in the resulting Struct or Map.",
)


class HoistField(OperatingSide, Transformation[R], ABC):
    """With a schema: a Struct whose only field `field` has the original schema and value;
    schemaless: a new dict `{field: value}`. Nulls are wrapped too, as in Kafka."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._field = config.get_string(FIELD) or ""
        self._cache = SchemaUpdateCache(16)

    def apply(self, record: R) -> R | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            return self.new_record(record, None, {self._field: value})
        updated_schema = self._cache.get(schema)
        if updated_schema is None:
            updated_schema = SchemaBuilder.struct().field(self._field, schema).build()
            self._cache.put(schema, updated_schema)
        return self.new_record(record, updated_schema, Struct(updated_schema).put(self._field, value))

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._cache = SchemaUpdateCache(16)


class HoistFieldKey(KeySide, HoistField[R]):
    """org.apache.kafka.connect.transforms.HoistField$Key"""


class HoistFieldValue(ValueSide, HoistField[R]):
    """org.apache.kafka.connect.transforms.HoistField$Value"""

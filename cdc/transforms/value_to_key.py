"""ValueToKey: a new record key made of some of the value's fields (Kafka's ValueToKey)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data import SchemaBuilder, Struct
from cdc.api.errors import DataException
from cdc.api.transforms import Transformation
from cdc.transforms._util import R, SchemaUpdateCache, non_empty_list, put_present, require_map, require_struct

FIELDS = "fields"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
PURPOSE = "copying fields from value to key"

CONFIG_DEF = (
    ConfigDef()
    .define(
        FIELDS,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="Field names on the record value to extract as the record key.",
    )
    .define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    )
)


class ValueToKey(Transformation[R]):
    """org.apache.kafka.connect.transforms.ValueToKey: the key becomes a Struct (or, schemaless, a
    dict) of the listed value fields, in the listed order; a field missing from the value schema
    is an error. Unlike most SMTs it rejects a null value (a tombstone), as Kafka's does."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._fields = list(config.get_list(FIELDS) or ())
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))
        self._cache = SchemaUpdateCache(16)

    def apply(self, record: R) -> R | None:
        if record.value_schema is None:
            value = require_map(record.value, PURPOSE)
            key: Any = {f: value.get(f) for f in self._fields}
            return record.new_record(
                record.topic, record.kafka_partition, None, key, None, record.value, record.timestamp
            )
        struct = require_struct(record.value, PURPOSE)
        key_schema = self._cache.get(struct.schema)
        if key_schema is None:
            builder = SchemaBuilder.struct()
            for name in self._fields:
                field = struct.schema.field(name)
                if field is None:
                    raise DataException("Field does not exist: " + name)
                builder.field(name, field.schema)
            key_schema = builder.build()
            self._cache.put(struct.schema, key_schema)
        key = Struct(key_schema)
        for name in self._fields:
            put_present(
                key, name, struct.get(name) if self._replace_null_with_default else struct.get_without_default(name)
            )
        return record.new_record(
            record.topic, record.kafka_partition, key_schema, key, struct.schema, struct, record.timestamp
        )

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._cache = SchemaUpdateCache(16)

"""InsertField$Key / InsertField$Value: add record metadata or a static value as fields."""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data import Schema, SchemaBuilder, Struct, Timestamp
from cdc.api.errors import ConfigException
from cdc.api.records import ConnectRecord
from cdc.api.transforms import Transformation
from cdc.transforms._util import (
    KeySide,
    OperatingSide,
    R,
    SchemaUpdateCache,
    ValueSide,
    config_error,
    copy_schema_basics,
    put_present,
    require_map,
    require_sink_record,
    require_struct,
)

TOPIC_FIELD = "topic.field"
PARTITION_FIELD = "partition.field"
OFFSET_FIELD = "offset.field"
TIMESTAMP_FIELD = "timestamp.field"
STATIC_FIELD = "static.field"
STATIC_VALUE = "static.value"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"

_FIELD_KEYS = (TOPIC_FIELD, PARTITION_FIELD, OFFSET_FIELD, TIMESTAMP_FIELD, STATIC_FIELD)
_OPTIONALITY_DOC = (
    "Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it optional (the default)."
)
PURPOSE = "field insertion"

CONFIG_DEF = (
    ConfigDef()
    .define(TOPIC_FIELD, ConfigType.STRING, None, documentation="Field name for Kafka topic. " + _OPTIONALITY_DOC)
    .define(
        PARTITION_FIELD, ConfigType.STRING, None, documentation="Field name for Kafka partition. " + _OPTIONALITY_DOC
    )
    .define(
        OFFSET_FIELD,
        ConfigType.STRING,
        None,
        documentation="Field name for Kafka offset - only applicable to sink connectors.<br/>" + _OPTIONALITY_DOC,
    )
    .define(
        TIMESTAMP_FIELD, ConfigType.STRING, None, documentation="Field name for record timestamp. " + _OPTIONALITY_DOC
    )
    .define(
        STATIC_FIELD, ConfigType.STRING, None, documentation="Field name for static data field. " + _OPTIONALITY_DOC
    )
    .define(STATIC_VALUE, ConfigType.STRING, None, documentation="Static field value, if field name configured.")
    .define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    )
)

_OPTIONAL_TIMESTAMP_SCHEMA = Timestamp.builder().optional().build()


@dataclass(frozen=True)
class InsertionSpec:
    """A field to insert: `name!` is required, `name?` or a bare `name` is optional."""

    name: str
    optional: bool

    @staticmethod
    def parse(key: str, spec: str | None) -> InsertionSpec | None:
        if spec is None:
            return None
        name, optional = spec, True
        if spec.endswith("?"):
            name = spec[:-1]
        elif spec.endswith("!"):
            name, optional = spec[:-1], False
        if not name:
            raise config_error(key, spec, "the field name is empty; give a name, optionally suffixed with ! or ?")
        return InsertionSpec(name, optional)


class InsertField(OperatingSide, Transformation[R], ABC):
    """Insert topic, partition, offset (sink only), timestamp and/or a static string field."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._topic = InsertionSpec.parse(TOPIC_FIELD, config.get_string(TOPIC_FIELD))
        self._partition = InsertionSpec.parse(PARTITION_FIELD, config.get_string(PARTITION_FIELD))
        self._offset = InsertionSpec.parse(OFFSET_FIELD, config.get_string(OFFSET_FIELD))
        self._timestamp = InsertionSpec.parse(TIMESTAMP_FIELD, config.get_string(TIMESTAMP_FIELD))
        self._static = InsertionSpec.parse(STATIC_FIELD, config.get_string(STATIC_FIELD))
        self._static_value = config.get_string(STATIC_VALUE)
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))
        if not any((self._topic, self._partition, self._offset, self._timestamp, self._static)):
            raise ConfigException("No field insertion configured: set at least one of " + ", ".join(_FIELD_KEYS))
        if self._static is not None and self._static_value is None:
            raise config_error(
                STATIC_VALUE,
                None,
                f"No value specified for static field: {self._static.name}; set {STATIC_VALUE} "
                f"or remove {STATIC_FIELD}",
            )
        self._cache = SchemaUpdateCache(16)

    def apply(self, record: R) -> R | None:
        # Tombstones (and null keys) pass through untouched, as in Kafka since KAFKA-8523.
        if self.operating_value(record) is None:
            return record
        if self.operating_schema(record) is None:
            return self._apply_schemaless(record)
        return self._apply_with_schema(record)

    def _apply_schemaless(self, record: R) -> R:
        updated = dict(require_map(self.operating_value(record), PURPOSE))
        if self._topic is not None:
            updated[self._topic.name] = record.topic
        if self._partition is not None and record.kafka_partition is not None:
            updated[self._partition.name] = record.kafka_partition
        if self._offset is not None:
            updated[self._offset.name] = require_sink_record(record, PURPOSE).kafka_offset
        if self._timestamp is not None and record.timestamp is not None:
            # Schemaless keeps the raw epoch milliseconds, as Kafka does.
            updated[self._timestamp.name] = record.timestamp
        if self._static is not None and self._static_value is not None:
            updated[self._static.name] = self._static_value
        return self.new_record(record, None, updated)

    def _apply_with_schema(self, record: R) -> R:
        value = require_struct(self.operating_value(record), PURPOSE)
        schema = self._cache.get(value.schema)
        if schema is None:
            schema = self._updated_schema(value.schema)
            self._cache.put(value.schema, schema)
        updated = Struct(schema)
        for field in value.schema.fields:
            original = value.get(field) if self._replace_null_with_default else value.get_without_default(field.name)
            put_present(updated, field.name, original)
        self._insert(record, updated)
        return self.new_record(record, schema, updated)

    def _insert(self, record: ConnectRecord, updated: Struct) -> None:
        if self._topic is not None:
            updated.put(self._topic.name, record.topic)
        if self._partition is not None and record.kafka_partition is not None:
            updated.put(self._partition.name, record.kafka_partition)
        if self._offset is not None:
            updated.put(self._offset.name, require_sink_record(record, PURPOSE).kafka_offset)
        if self._timestamp is not None and record.timestamp is not None:
            updated.put(self._timestamp.name, Timestamp.to_logical(Timestamp.SCHEMA, record.timestamp))
        if self._static is not None and self._static_value is not None:
            updated.put(self._static.name, self._static_value)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, field.schema)

        def add(spec: InsertionSpec | None, required: Schema, optional: Schema) -> None:
            if spec is not None:
                builder.field(spec.name, optional if spec.optional else required)

        add(self._topic, Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA)
        add(self._partition, Schema.INT32_SCHEMA, Schema.OPTIONAL_INT32_SCHEMA)
        add(self._offset, Schema.INT64_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA)
        add(self._timestamp, Timestamp.SCHEMA, _OPTIONAL_TIMESTAMP_SCHEMA)
        add(self._static, Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA)
        return builder.build()

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._cache = SchemaUpdateCache(16)


class InsertFieldKey(KeySide, InsertField[R]):
    """org.apache.kafka.connect.transforms.InsertField$Key"""


class InsertFieldValue(ValueSide, InsertField[R]):
    """org.apache.kafka.connect.transforms.InsertField$Value"""

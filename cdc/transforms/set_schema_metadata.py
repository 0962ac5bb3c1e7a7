"""SetSchemaMetadata$Key / $Value: set the key or value schema's name and/or version (Kafka's SetSchemaMetadata)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data import Schema, Struct, Type
from cdc.api.errors import ConfigException, DataException
from cdc.api.transforms import Transformation
from cdc.transforms._util import KeySide, OperatingSide, R, ValueSide, put_present

SCHEMA_NAME = "schema.name"
SCHEMA_VERSION = "schema.version"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
PURPOSE = "updating schema metadata"

CONFIG_DEF = (
    ConfigDef()
    .define(SCHEMA_NAME, ConfigType.STRING, None, importance=Importance.HIGH, documentation="Schema name to set.")
    .define(SCHEMA_VERSION, ConfigType.INT, None, importance=Importance.HIGH, documentation="Schema version to set.")
    .define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    )
)


class SetSchemaMetadata(OperatingSide, Transformation[R], ABC):
    """The schema keeps everything but the configured name/version; a Struct is rebuilt on the new
    schema so its `schema` matches. A schemaless null passes through; other schemaless data is an error."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._name = config.get_string(SCHEMA_NAME)
        self._version = config.get_int(SCHEMA_VERSION)
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))
        if self._name is None and self._version is None:
            raise ConfigException(
                f"Neither schema name nor version configured; set {SCHEMA_NAME} and/or {SCHEMA_VERSION}", SCHEMA_NAME
            )

    def apply(self, record: R) -> R | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if value is None and schema is None:
            return record
        if schema is None:
            raise DataException(f"Schema required for [{PURPOSE}]")
        is_map = schema.type is Type.MAP
        updated = Schema(
            schema.type,
            optional=schema.optional,
            default_value=schema.default_value,
            name=self._name if self._name is not None else schema.name,
            version=self._version if self._version is not None else schema.version,
            doc=schema.doc,
            parameters=schema.parameters,
            fields=schema.fields,
            key_schema=schema.key_schema if is_map else None,
            value_schema=schema.value_schema if is_map or schema.type is Type.ARRAY else None,
        )
        return self.new_record(record, updated, self.update_schema_in(value, updated))

    def update_schema_in(self, key_or_value: Any, updated: Schema) -> Any:
        """A Struct copied onto `updated` (same fields); anything else is returned as is."""
        if not isinstance(key_or_value, Struct):
            return key_or_value
        copy = Struct(updated)
        for field in updated.fields:
            value = (
                key_or_value.get(field.name)
                if self._replace_null_with_default
                else key_or_value.get_without_default(field.name)
            )
            put_present(copy, field.name, value)
        return copy

    def config(self) -> ConfigDef:
        return CONFIG_DEF


class SetSchemaMetadataKey(KeySide, SetSchemaMetadata[R]):
    """org.apache.kafka.connect.transforms.SetSchemaMetadata$Key"""


class SetSchemaMetadataValue(ValueSide, SetSchemaMetadata[R]):
    """org.apache.kafka.connect.transforms.SetSchemaMetadata$Value"""

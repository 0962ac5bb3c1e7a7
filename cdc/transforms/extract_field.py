"""ExtractField$Key / ExtractField$Value: replace the key or value by one of its fields (Kafka's ExtractField)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.errors import ConfigException, DataException
from cdc.api.transforms import Transformation
from cdc.transforms._util import KeySide, OperatingSide, R, ValueSide, require_map, require_struct
from cdc.transforms.field_path import FieldSyntaxVersion, SingleFieldPath

FIELD = "field"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
PURPOSE = "field extraction"

CONFIG_DEF = FieldSyntaxVersion.append_config_to(
    ConfigDef()
    .define(FIELD, ConfigType.STRING, importance=Importance.MEDIUM, documentation="Field name to extract.")
    .define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    )
)


class UnknownFieldError(DataException, ValueError):
    """The configured field is not in the record's schema (Kafka throws IllegalArgumentException)."""


class ExtractField(OperatingSide, Transformation[R], ABC):
    """With a schema the result takes the field's schema (an unknown field is an error); schemaless
    a missing field gives null. A null key/value stays null; `field.syntax.version=V2` reaches into
    nested structs and maps."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._original_path = config.get_string(FIELD) or ""
        version = FieldSyntaxVersion.from_config(config)
        try:
            self._path = SingleFieldPath(self._original_path, version)
        except ConfigException as e:  # an incomplete backtick pair: name the key
            raise ConfigException(
                f"Invalid value {self._original_path} for configuration {FIELD}: {e}", FIELD, self._original_path
            ) from None
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))

    def apply(self, record: R) -> R | None:
        schema = self.operating_schema(record)
        raw = self.operating_value(record)
        if schema is None:
            value = None if raw is None else require_map(raw, PURPOSE)
            return self.new_record(record, None, self._path.value_from_map(value))
        struct = None if raw is None else require_struct(raw, PURPOSE)
        field = self._path.field_from(schema)
        if field is None:
            raise UnknownFieldError("Unknown field: " + self._original_path)
        return self.new_record(
            record, field.schema, self._path.value_from_struct(struct, self._replace_null_with_default)
        )

    def config(self) -> ConfigDef:
        return CONFIG_DEF


class ExtractFieldKey(KeySide, ExtractField[R]):
    """org.apache.kafka.connect.transforms.ExtractField$Key"""


class ExtractFieldValue(ValueSide, ExtractField[R]):
    """org.apache.kafka.connect.transforms.ExtractField$Value"""

"""Flatten$Key / Flatten$Value: nested structs/maps become one level, names joined by a delimiter (Kafka's Flatten)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data import Schema, SchemaBuilder, Struct, Type
from cdc.api.errors import DataException
from cdc.api.transforms import Transformation
from cdc.transforms._util import (
    KeySide,
    OperatingSide,
    R,
    SchemaUpdateCache,
    ValueSide,
    class_name,
    copy_schema_basics,
    require_map,
    require_struct,
    schemaless_type,
)

DELIMITER = "delimiter"
PURPOSE = "flattening"

CONFIG_DEF = ConfigDef().define(
    DELIMITER,
    ConfigType.STRING,
    ".",
    importance=Importance.MEDIUM,
    documentation="Delimiter to insert between field names from the input record when generating field names for "
    "the output record",
)

# Types copied as they are; arrays (and whatever they hold) are not flattened.
_LEAF_TYPES = frozenset(
    {
        Type.INT8,
        Type.INT16,
        Type.INT32,
        Type.INT64,
        Type.FLOAT32,
        Type.FLOAT64,
        Type.BOOLEAN,
        Type.STRING,
        Type.BYTES,
        Type.ARRAY,
    }
)


def _leaf_schema(original: Schema, optional: bool, default: Any) -> Schema:
    """Kafka's SchemaUtil.copySchemaBasics(orig) plus the inherited optionality and default."""
    if original.type is Type.ARRAY:
        assert original.value_schema is not None
        builder = SchemaBuilder.array(original.value_schema)
    else:
        builder = SchemaBuilder.of(original.type)
    copy_schema_basics(original, builder)
    if optional:
        builder.optional()
    if default is not None:
        builder.default_value(default)
    return builder.build()


class Flatten(OperatingSide, Transformation[R], ABC):
    """Struct fields (or map entries) nested at any depth become top-level fields named
    `outer<delimiter>inner`. A child of an optional struct becomes optional, and inherits the
    parent struct's default for it when it has none itself. Nulls pass through; MAP fields in a
    schema'd struct are not supported, as in Kafka."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._delimiter = config.get_string(DELIMITER) or ""
        self._cache = SchemaUpdateCache(16)

    def apply(self, record: R) -> R | None:
        if self.operating_value(record) is None:
            return record
        if self.operating_schema(record) is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(self.operating_value(record), PURPOSE), "", flat)
            return self.new_record(record, None, flat)
        return self._apply_with_schema(record)

    def _name(self, prefix: str, name: str) -> str:
        return name if not prefix else prefix + self._delimiter + name

    def _flatten_map(self, value: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, item in value.items():
            name = self._name(prefix, key)
            if item is None:
                out[name] = None
                continue
            kind = schemaless_type(item)
            if kind is None:
                raise DataException(
                    f"Flatten transformation was passed a value of type {class_name(item)} which is not "
                    "supported by Connect's data API"
                )
            if kind is Type.MAP:
                self._flatten_map(item, name, out)
            elif kind in _LEAF_TYPES:
                out[name] = item
            else:
                raise DataException(
                    f"Flatten transformation does not support {class_name(item)} for record without schemas "
                    f"(for field {name})."
                )

    def _apply_with_schema(self, record: R) -> R:
        value = require_struct(self.operating_value(record), PURPOSE)
        schema = self.operating_schema(record)
        assert schema is not None
        updated_schema = self._cache.get(schema)
        if updated_schema is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            self._flatten_schema(schema, "", builder, schema.optional, schema.default_value)
            updated_schema = builder.build()
            self._cache.put(schema, updated_schema)
        updated = Struct(updated_schema)
        self._flatten_struct(value, "", updated)
        return self.new_record(record, updated_schema, updated)

    def _flatten_schema(
        self, schema: Schema, prefix: str, builder: SchemaBuilder, optional: bool, parent_default: Struct | None
    ) -> None:
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.optional
            default = field.schema.default_value
            if default is None and parent_default is not None:
                default = parent_default.get(field)
            if field.schema.type in _LEAF_TYPES:
                builder.field(name, _leaf_schema(field.schema, field_optional, default))
            elif field.schema.type is Type.STRUCT:
                self._flatten_schema(field.schema, name, builder, field_optional, default)
            else:
                raise DataException(
                    f"Flatten transformation does not support {field.schema.type.name} for record with schemas "
                    f"(for field {name})."
                )

    def _flatten_struct(self, value: Struct | None, prefix: str, out: Struct) -> None:
        if value is None:
            return
        for field in value.schema.fields:
            name = self._name(prefix, field.name)
            if field.schema.type in _LEAF_TYPES:
                item = value.get(field)
                if item is not None:
                    out.put(name, item)
            elif field.schema.type is Type.STRUCT:
                self._flatten_struct(value.get(field), name, out)
            else:
                raise DataException(
                    f"Flatten transformation does not support {field.schema.type.name} for record with schemas "
                    f"(for field {name})."
                )

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._cache = SchemaUpdateCache(16)


class FlattenKey(KeySide, Flatten[R]):
    """org.apache.kafka.connect.transforms.Flatten$Key"""


class FlattenValue(ValueSide, Flatten[R]):
    """org.apache.kafka.connect.transforms.Flatten$Value"""

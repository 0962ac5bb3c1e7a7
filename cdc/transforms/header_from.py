"""HeaderFrom$Key / HeaderFrom$Value: move or copy key/value fields into headers (Kafka's HeaderFrom)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance, ValidString
from cdc.api.data import Schema, SchemaBuilder, Struct
from cdc.api.errors import ConfigException, DataException
from cdc.api.header import Headers
from cdc.api.transforms import Transformation
from cdc.transforms._util import (
    KeySide,
    OperatingSide,
    R,
    SchemaUpdateCache,
    ValueSide,
    copy_schema_basics,
    non_empty_list,
    put_present,
    require_map,
    require_struct,
)

FIELDS = "fields"
HEADERS = "headers"
OPERATION = "operation"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
MOVE = "move"
COPY = "copy"

CONFIG_DEF = (
    ConfigDef()
    .define(
        FIELDS,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="Field names in the record whose values are to be copied or moved to headers.",
    )
    .define(
        HEADERS,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="Header names, in the same order as the field names listed in the fields configuration property.",
    )
    .define(
        OPERATION,
        ConfigType.STRING,
        validator=ValidString.in_(MOVE, COPY),
        importance=Importance.HIGH,
        documentation="Either <code>move</code> if the fields are to be moved to the headers (removed from the "
        "key/value), or <code>copy</code> if the fields are to be copied to the headers (retained in the "
        "key/value).",
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


class HeaderFrom(OperatingSide, Transformation[R], ABC):
    """The i-th of `fields` is appended as a header named the i-th of `headers` (existing headers
    stay; a field may feed several headers and several fields one header name). With a schema the
    header carries the field's schema; `move` also drops the fields from the key/value."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._fields = list(config.get_list(FIELDS) or ())
        self._headers = list(config.get_list(HEADERS) or ())
        if len(self._headers) != len(self._fields):
            raise ConfigException(
                f"'{FIELDS}' config must have the same number of elements as '{HEADERS}' config.", HEADERS
            )
        self._move = config.get_string(OPERATION) == MOVE
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))
        self._cache = SchemaUpdateCache(16)

    @property
    def _purpose(self) -> str:
        return "header " + (MOVE if self._move else COPY)

    def apply(self, record: R) -> R | None:
        schema = self.operating_schema(record)
        if schema is None:
            return self._apply_schemaless(record)
        return self._apply_with_schema(record, schema)

    def _apply_schemaless(self, record: R) -> R:
        value = require_map(self.operating_value(record), self._purpose)
        updated = dict(value)
        headers = record.headers.duplicate()
        for field, header in zip(self._fields, self._headers, strict=True):
            if self._move:
                updated.pop(field, None)
            headers.add(header, value.get(field), None)
        return self._with(record, None, updated, headers)

    def _apply_with_schema(self, record: R, schema: Schema) -> R:
        value = require_struct(self.operating_value(record), self._purpose)
        headers = record.headers.duplicate()
        if self._move:
            updated_schema = self._moved_schema(schema)
            updated: Struct = Struct(updated_schema)
            for field in updated_schema.fields:
                put_present(updated, field.name, self._field_value(value, field.name))
        else:
            updated_schema, updated = schema, value
        for field_name, header in zip(self._fields, self._headers, strict=True):
            field = schema.field(field_name)
            if field is None:
                raise DataException(f"Field does not exist: {field_name} (listed in {FIELDS})")
            headers.add(header, self._field_value(value, field_name), field.schema)
        return self._with(record, updated_schema, updated, headers)

    def _field_value(self, value: Struct, name: str) -> Any:
        if value.schema.field(name) is None:
            return None
        return value.get(name) if self._replace_null_with_default else value.get_without_default(name)

    def _moved_schema(self, schema: Schema) -> Schema:
        moved = self._cache.get(schema)
        if moved is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields:
                if field.name not in self._fields:
                    builder.field(field.name, field.schema)
            moved = builder.build()
            self._cache.put(schema, moved)
        return moved

    def _with(self, record: R, schema: Schema | None, value: Any, headers: Headers) -> R:
        out = self.new_record(record, schema, value)
        out.headers = headers
        return out

    def config(self) -> ConfigDef:
        return CONFIG_DEF


class HeaderFromKey(KeySide, HeaderFrom[R]):
    """org.apache.kafka.connect.transforms.HeaderFrom$Key"""


class HeaderFromValue(ValueSide, HeaderFrom[R]):
    """org.apache.kafka.connect.transforms.HeaderFrom$Value"""

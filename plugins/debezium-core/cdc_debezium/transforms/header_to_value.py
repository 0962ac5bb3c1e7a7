"""io.debezium.transforms.HeaderToValue: copy or move headers into fields of the record value.

Debezium's HeaderToValue: `headers` and `fields` are lists of the same length; each header found
on the record becomes the field at the same position (`after.f2` and deeper paths nest into
existing structs, and missing parent structs are created). `operation=move` also removes the
listed headers, `copy` keeps them. Tombstones and records carrying none of the headers pass
through unchanged. A header without a schema gets one from its Python value (string, boolean,
int64, float64).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api import (
    NO_DEFAULT_VALUE,
    AbstractConfig,
    ConfigDef,
    ConfigType,
    DataException,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Transformation,
)
from cdc.api.data import Type
from cdc_debezium.transforms._support import R, SchemaCache, config_error, copy_schema_basics, require_struct

HEADERS = "headers"
FIELDS = "fields"
OPERATION = "operation"
OPERATIONS = ("move", "copy")


def _raw_elements(value: Any) -> list[str]:
    """Debezium's Configuration.getList: comma-separated, trailing empty elements dropped."""
    items = list(value) if isinstance(value, list) else str(value).split(",")
    while items and not str(items[-1]).strip():
        items.pop()
    return [str(i) for i in items]


def _element_list(name: str, value: Any) -> None:
    if value is None:
        raise config_error(name, None, f"The '{name}' value is invalid: A value is required")
    elements = _raw_elements(value)
    if not elements:
        raise config_error(name, value, f"The '{name}' value is invalid: A value is required")
    shown = ",".join(elements)
    if any(not e.strip() for e in elements):
        raise config_error(name, shown, f"The '{name}' value is invalid: Empty string element(s) not permitted")
    if any(any(c.isspace() for c in e.strip()) for e in elements):
        raise config_error(name, shown, f"The '{name}' value is invalid: Element(s) containing space not permitted")


def _operation(name: str, value: Any) -> None:
    if value is None or str(value).strip().lower() not in OPERATIONS:
        raise config_error(name, value, f"The '{name}' value is invalid: Value must be one of move, copy")


CONFIG_DEF = (
    ConfigDef()
    .define(HEADERS, ConfigType.LIST, NO_DEFAULT_VALUE, _element_list, Importance.HIGH,
            "Header names in the record whose values are to be copied or moved to the record value.")
    .define(FIELDS, ConfigType.LIST, NO_DEFAULT_VALUE, _element_list, Importance.HIGH,
            "Field names, in the same order as the header names; nested with dots (after.field).")
    .define(OPERATION, ConfigType.STRING, NO_DEFAULT_VALUE, _operation, Importance.HIGH,
            "move (the headers are removed) or copy (the headers are kept).")
)  # fmt: skip


@dataclass(frozen=True)
class _Entry:
    path: tuple[str, ...]
    schema: Schema
    value: Any


def _inferred_schema(header: str, value: Any) -> Schema:
    if isinstance(value, bool):
        return Schema.OPTIONAL_BOOLEAN_SCHEMA
    if isinstance(value, int):
        return Schema.OPTIONAL_INT64_SCHEMA
    if isinstance(value, float):
        return Schema.OPTIONAL_FLOAT64_SCHEMA
    if isinstance(value, str) or value is None:
        return Schema.OPTIONAL_STRING_SCHEMA
    if isinstance(value, bytes | bytearray):
        return Schema.OPTIONAL_BYTES_SCHEMA
    raise DataException(f"Header {header!r} has no schema and a {type(value).__name__} value; give it a schema")


class HeaderToValue(Transformation[R]):
    """io.debezium.transforms.HeaderToValue"""

    def configure(self, configs: Mapping[str, Any]) -> None:
        props = dict(configs)
        config = AbstractConfig(CONFIG_DEF, props)
        self._headers = [h.strip() for h in _raw_elements(props.get(HEADERS, config.get_list(HEADERS)))]
        self._fields = [f.strip() for f in _raw_elements(props.get(FIELDS, config.get_list(FIELDS)))]
        if len(self._headers) != len(self._fields):
            raise config_error(
                FIELDS,
                ",".join(self._fields),
                f"'{FIELDS}' config must have the same number of elements as '{HEADERS}' config.",
            )
        self._move = str(config.get_string(OPERATION)).strip().lower() == "move"
        self._schemas = SchemaCache(64)

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def apply(self, record: R) -> R | None:
        if record.value is None:
            return record
        value = require_struct(record.value, "Header field insertion")
        entries: list[_Entry] = []
        for header in record.headers:
            if header.key in self._headers:
                target = self._fields[self._headers.index(header.key)]
                schema = header.schema if header.schema is not None else _inferred_schema(header.key, header.value)
                entries.append(_Entry(tuple(target.split(".")), schema, header.value))
        if not entries:
            return record
        key = (value.schema, tuple((e.path, e.schema) for e in entries))
        schema = self._schemas.get(key)
        if schema is None:
            schema = self._schemas.put(key, _new_schema(value.schema, entries))
        updated = _new_value(value, schema, entries)
        headers = record.headers.duplicate()
        if self._move:
            for name in self._headers:
                headers.remove(name)
        return record.new_record(
            record.topic,
            record.kafka_partition,
            record.key_schema,
            record.key,
            schema,
            updated,
            record.timestamp,
            headers,
        )


def _children(entries: list[_Entry], name: str) -> list[_Entry]:
    return [_Entry(e.path[1:], e.schema, e.value) for e in entries if len(e.path) > 1 and e.path[0] == name]


def _new_parents(old: Schema | None, entries: list[_Entry]) -> list[str]:
    names: list[str] = []
    for e in entries:
        if len(e.path) > 1 and (old is None or old.field(e.path[0]) is None) and e.path[0] not in names:
            names.append(e.path[0])
    return names


def _new_schema(old: Schema | None, entries: list[_Entry]) -> Schema:
    builder = SchemaBuilder.struct()
    if old is not None:
        copy_schema_basics(old, builder)
    if old is None or old.optional:
        builder.optional()
    seen = {f.name for f in old.fields} if old is not None else set()
    for field in old.fields if old is not None else []:
        nested = _children(entries, field.name)
        if nested and field.schema.type is not Type.STRUCT:
            path = f"{field.name}.{'.'.join(nested[0].path)}"
            raise DataException(
                f"Field '{field.name}' is a {field.schema.type.value}, not a struct: cannot add '{path}'"
            )
        builder.field(field.name, _new_schema(field.schema, nested) if nested else field.schema)
    for e in entries:
        if len(e.path) == 1 and e.path[0] not in seen:
            seen.add(e.path[0])
            builder.field(e.path[0], e.schema)
    for parent in _new_parents(old, entries):
        builder.field(parent, _new_schema(None, _children(entries, parent)))
    return builder.build()


def _new_value(old: Struct | None, schema: Schema, entries: list[_Entry]) -> Struct:
    out = Struct(schema)
    if old is not None:
        for field in old.schema.fields:
            current = old.get_without_default(field.name)
            nested = _children(entries, field.name)
            if nested and isinstance(current, Struct):
                current = _new_value(current, schema.field(field.name).schema, nested)  # type: ignore[union-attr]
            if current is not None:
                out.put(field.name, current)
    for e in entries:
        if len(e.path) == 1:
            out.put(e.path[0], e.value)
    for parent in _new_parents(old.schema if old is not None else None, entries):
        parent_schema = schema.field(parent).schema  # type: ignore[union-attr]
        out.put(parent, _new_value(None, parent_schema, _children(entries, parent)))
    return out

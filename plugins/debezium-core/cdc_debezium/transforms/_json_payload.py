"""Debezium's outbox JsonSchemaData: a Connect schema inferred from a JSON document, and its value.

Strings, booleans, int32/int64/float64 numbers, arrays (of one element type; object elements
merged field by field) and objects become optional schemas; a null is left out (`ignore`) or an
optional BYTES field (`optional_bytes`); an empty array is left out (`ignore`) or an optional
array of optional strings (`optional_string`).
"""

from __future__ import annotations

from typing import Any

from cdc.api import DataException, Schema, SchemaBuilder, Struct
from cdc.api.data import Type

_INT32 = range(-(2**31), 2**31)
_INT64 = range(-(2**63), 2**63)


class JsonSchemaData:
    def __init__(self, null_behavior: str = "ignore", empty_array_behavior: str = "ignore") -> None:
        self.null_behavior = null_behavior
        self.empty_array_behavior = empty_array_behavior

    # -- schema -----------------------------------------------------------------------------
    def to_connect_schema(self, key: str | None, node: Any) -> Schema | None:
        if isinstance(node, bool):
            return Schema.OPTIONAL_BOOLEAN_SCHEMA
        if isinstance(node, str):
            return Schema.OPTIONAL_STRING_SCHEMA
        if isinstance(node, int):
            if node in _INT32:
                return Schema.OPTIONAL_INT32_SCHEMA
            return Schema.OPTIONAL_INT64_SCHEMA if node in _INT64 else Schema.OPTIONAL_FLOAT64_SCHEMA
        if isinstance(node, float):
            return Schema.OPTIONAL_FLOAT64_SCHEMA
        if isinstance(node, list):
            if not node:
                if self.empty_array_behavior == "optional_string":
                    return SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().build()
                return None
            return SchemaBuilder.array(self._element_schema(key, node)).optional().build()
        if isinstance(node, dict):
            builder = SchemaBuilder.struct().optional()
            if key:
                builder.name(key)
            names: set[str] = set()
            for name, child in node.items():
                child_schema = self.to_connect_schema(f"{key}.{name}" if key else name, child)
                if child_schema is not None and name not in names:
                    names.add(name)
                    builder.field(name, child_schema)
            return builder.build()
        if node is None and self.null_behavior == "optional_bytes":
            return Schema.OPTIONAL_BYTES_SCHEMA
        return None

    def _element_schema(self, key: str | None, array: list[Any]) -> Schema:
        sample = self._first_element(array)
        if isinstance(sample, dict):
            merged: Schema | None = None
            for element in array:
                if isinstance(element, dict):
                    merged = _merge(merged, self.to_connect_schema(key, element))
            assert merged is not None
            return merged
        schema = self.to_connect_schema(None, sample)
        if schema is None:
            raise DataException(f"Array {array!r} has unrecognized member schema.")
        return schema

    def _first_element(self, array: list[Any]) -> Any:
        ref: Any = None
        ref_schema: Schema | None = None
        for element in array:
            if element is None:
                continue
            if ref is None:
                ref = element
            if _kind(element) != _kind(ref):
                raise DataException(f"Field is not a homogenous array ({ref!r} x {element!r}).")
            if _kind(ref) == "number":
                ref_schema = ref_schema or self.to_connect_schema(None, ref)
                if self.to_connect_schema(None, element) != ref_schema:
                    raise DataException(
                        f"Field is not a homogenous array ({ref!r} x {element!r}), different number types"
                    )
        return ref

    # -- value ------------------------------------------------------------------------------
    def to_connect_data(self, document: Any, schema: Schema) -> Any:
        return None if document is None else self._value(document, schema)

    def _value(self, node: Any, schema: Schema) -> Any:
        if node is None:
            return None
        if isinstance(node, dict):
            struct = Struct(schema)
            for field in schema.fields:
                if field.name in node:
                    struct.put(field, self._value(node[field.name], field.schema))
            return struct
        if isinstance(node, list):
            assert schema.value_schema is not None
            return [self._value(e, schema.value_schema) for e in node]
        if isinstance(node, int) and not isinstance(node, bool) and schema.type is Type.FLOAT64:
            return float(node)
        return node


def _kind(node: Any) -> str:
    if isinstance(node, bool):
        return "boolean"
    if isinstance(node, int | float):
        return "number"
    return type(node).__name__


def _merge(left: Schema | None, right: Schema | None) -> Schema | None:
    """Object elements of one array: the union of their fields, first seen first (a BYTES
    placeholder from a null gives way to a real type)."""
    if left is None or right is None:
        return left or right
    fields = {f.name: f.schema for f in left.fields}
    for f in right.fields:
        old = fields.get(f.name)
        if old is None or (old != f.schema and old.type is Type.BYTES and f.schema.type is not Type.BYTES):
            fields[f.name] = f.schema
    builder = SchemaBuilder.struct().optional()
    if left.name:
        builder.name(left.name)
    for name, schema in fields.items():
        builder.field(name, schema)
    return builder.build()

"""Connect schemas to and from the JsonConverter's schema JSON (Kafka's `JsonSchema`).

Rendering produces the exact text Jackson writes for Kafka's ObjectNode: keys in
insertion order `type`, `items` | `keys`,`values` | `fields`, `optional`, `name`,
`version`, `doc`, `parameters`, `default`, and in a struct's field entries the `field`
key last (Kafka deep-copies the field schema node and then appends it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc.api.data.schema import Schema, SchemaBuilder, Type
from cdc.api.errors import DataException
from cdc.converters._javafmt import quote

DefaultEncoder = Callable[[Schema, Any], str]
"""Renders a schema's (non-null) default value as JSON text."""

DefaultDecoder = Callable[[Schema, Any], Any]
"""Turns a parsed JSON default into a Connect value for the (default-less) schema."""

_BY_NAME = {t.value: t for t in Type}


def render(schema: Schema | None, encode_default: DefaultEncoder) -> str:
    """The compact schema JSON for `schema` (`null` for no schema)."""
    if schema is None:
        return "null"
    t = schema.type
    parts = ['{"type":"', t.value, '"']
    if t is Type.ARRAY:
        parts += [',"items":', render(schema.value_schema, encode_default)]
    elif t is Type.MAP:
        parts += [',"keys":', render(schema.key_schema, encode_default)]
        parts += [',"values":', render(schema.value_schema, encode_default)]
    elif t is Type.STRUCT:
        fields = [render(f.schema, encode_default)[:-1] + ',"field":' + quote(f.name) + "}" for f in schema.fields]
        parts += [',"fields":[', ",".join(fields), "]"]
    parts.append(',"optional":true' if schema.optional else ',"optional":false')
    if schema.name is not None:
        parts += [',"name":', quote(schema.name)]
    if schema.version is not None:
        parts += [',"version":', str(int(schema.version))]
    if schema.doc is not None:
        parts += [',"doc":', quote(schema.doc)]
    if schema.parameters is not None:
        params = ",".join(quote(k) + ":" + quote(v) for k, v in schema.parameters.items())
        parts += [',"parameters":{', params, "}"]
    if schema.default_value is not None:
        parts += [',"default":', encode_default(schema, schema.default_value)]
    parts.append("}")
    return "".join(parts)


def parse(node: Any, decode_default: DefaultDecoder) -> Schema | None:
    """Kafka's `JsonConverter.asConnectSchema`, with its error messages."""
    if node is None:
        return None
    if not isinstance(node, dict):
        raise DataException("Schema must contain 'type' field")
    type_name = node.get("type")
    if not isinstance(type_name, str):
        raise DataException("Schema must contain 'type' field")
    t = _BY_NAME.get(type_name)
    if t is None:
        raise DataException("Unknown schema type: " + type_name)
    if t is Type.ARRAY:
        items = node.get("items")
        if items is None:
            raise DataException("Array schema did not specify the element type")
        builder = SchemaBuilder.array(_required_schema(parse(items, decode_default)))
    elif t is Type.MAP:
        if "keys" not in node:
            raise DataException("Map schema did not specify the key type")
        if "values" not in node:
            raise DataException("Map schema did not specify the value type")
        builder = SchemaBuilder.map(
            _required_schema(parse(node["keys"], decode_default)),
            _required_schema(parse(node["values"], decode_default)),
        )
    elif t is Type.STRUCT:
        builder = SchemaBuilder.struct()
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise DataException('Struct schema\'s "fields" argument is not an array.')
        for field in fields:
            name = field.get("field") if isinstance(field, dict) else None
            if not isinstance(name, str):
                raise DataException("Struct schema's field name not specified properly")
            builder.field(name, _required_schema(parse(field, decode_default)))
    else:
        builder = SchemaBuilder(t)

    if node.get("optional") is True:
        builder.optional()
    name = node.get("name")
    if isinstance(name, str):
        builder.name(name)
    version = node.get("version")
    if isinstance(version, int) and not isinstance(version, bool):
        builder.version(version)
    doc = node.get("doc")
    if isinstance(doc, str):
        builder.doc(doc)
    params = node.get("parameters")
    if isinstance(params, dict):
        for k, v in params.items():
            if not isinstance(v, str):
                raise DataException("Schema parameters must have string values.")
            builder.parameter(k, v)
    if "default" in node:
        # Kafka converts the default against the schema built so far (no default yet).
        builder.default_value(decode_default(builder.build(), node["default"]))
    return builder.build()


def _required_schema(schema: Schema | None) -> Schema:
    # Kafka would accept a JSON null here and fail later with a NullPointerException.
    if schema is None:
        raise DataException("Nested schemas may not be null")
    return schema


def contains_logical(schema: Schema | None, name: str) -> bool:
    """Whether `schema` or any schema nested in it carries the logical name `name`."""
    if schema is None:
        return False
    if schema.name == name:
        return True
    if schema.type is Type.STRUCT:
        return any(contains_logical(f.schema, name) for f in schema.fields)
    return contains_logical(schema.key_schema, name) or contains_logical(schema.value_schema, name)

"""Cast$Key / Cast$Value: cast fields, or the whole key/value, to another primitive type (Kafka's Cast).

Numbers narrow the way Java's `Number.byteValue()`/`intValue()`/... do (integers wrap, doubles
truncate toward zero and saturate at the int/long range, NaN gives 0); strings are parsed as
`Integer.parseInt`, `Double.parseDouble` and `Boolean.parseBoolean` parse them; bytes become
base64 text; Date/Time/Timestamp values cast to a number become their epoch days/millis and,
cast to a string, Kafka's `Values.dateFormatFor` text.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
import re
from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data import Date, Schema, SchemaBuilder, Struct, Time, Timestamp, Type, is_logical
from cdc.api.data._javafmt import to_float32
from cdc.api.data.values import _format_temporal, _millis, java_to_string
from cdc.api.errors import DataException
from cdc.api.transforms import Transformation
from cdc.transforms._util import (
    KeySide,
    OperatingSide,
    R,
    SchemaUpdateCache,
    ValueSide,
    class_name,
    config_error,
    copy_schema_basics,
    put_present,
    require_map,
    require_struct,
    schemaless_type,
)

SPEC = "spec"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
PURPOSE = "cast types"

_INPUT_TYPES = (
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
)
_OUTPUT_TYPES = _INPUT_TYPES[:-1]
_WHOLE_VALUE = ""  # the spec key of a whole key/value cast ("int8" instead of "field:int8")


def _type_list(types: tuple[Type, ...]) -> str:
    return "[" + ", ".join(t.name for t in types) + "]"


def parse_spec(mappings: list[str], key: str = SPEC) -> dict[str, Type]:
    """`field:type,...` or a single `type`, as Kafka's Cast.parseFieldTypes reads it; errors name
    `key` (the full `transforms.<alias>.spec` when the connector's ConfigDef validates it)."""
    if not mappings:
        raise config_error(key, mappings, "Must specify at least one field to cast.")
    casts: dict[str, Type] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        while len(parts) > 1 and not parts[-1]:  # Java's split drops trailing empty strings
            parts.pop()
        if len(parts) > 2:
            raise config_error(key, mappings, f"Invalid cast mapping: {mapping}; use field:type or a single type")
        field, type_name = ("", parts[0]) if len(parts) == 1 else (parts[0].strip(), parts[1])
        try:
            target = Type[type_name.strip().upper()]
        except KeyError:
            raise config_error(key, mappings, f"Invalid type found in casting spec: {type_name.strip()}") from None
        if target not in _OUTPUT_TYPES:
            raise config_error(
                key,
                mappings,
                f"Cast transformation does not support casting to {target.name}; supported types are "
                + _type_list(_OUTPUT_TYPES),
            )
        casts[field if len(parts) == 2 else _WHOLE_VALUE] = target
    if _WHOLE_VALUE in casts and len(mappings) > 1:
        raise config_error(
            key,
            mappings,
            "Cast transformations that specify a type to cast the entire value to may only specify a single cast "
            "in their spec",
        )
    return casts


def _validate_spec(name: str, value: Any) -> None:
    parse_spec(list(value or ()), name)


CONFIG_DEF = (
    ConfigDef()
    .define(
        SPEC,
        ConfigType.LIST,
        validator=_validate_spec,
        importance=Importance.HIGH,
        documentation="List of fields and the type to cast them to of the form field1:type,field2:type to cast "
        "fields of Maps or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, "
        "int64, float32, float64, boolean, and string. Note that binary fields can only be cast to string.",
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


# -- Java's numeric conversions ---------------------------------------------------------------
def _wrap(value: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def _from_double(value: float, bits: int) -> int:
    """Java's (int)/(long) cast of a double: NaN is 0, the rest truncates and saturates."""
    if math.isnan(value):
        return 0
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if math.isinf(value):
        return hi if value > 0 else lo
    return max(lo, min(hi, int(value)))


def _integral(value: Any, bits: int) -> int:
    """Number.byteValue()/shortValue()/intValue()/longValue() for ints, floats and decimals."""
    if isinstance(value, float):
        # byteValue/shortValue of a Double go through (int) first, then wrap.
        return _wrap(_from_double(value, 64 if bits == 64 else 32), bits)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise DataException(f"Value ({value}) was out of range for requested data type")
        return _wrap(int(value), bits)
    return _wrap(int(value), bits)


_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_FLOAT = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?")
_JAVA_WS = "".join(map(chr, range(33)))


def _parse_int(text: str, bits: int) -> int:
    # Integer.parseInt: an optional sign and digits, nothing else, within range.
    if _JAVA_INT.fullmatch(text) is None or not -(1 << (bits - 1)) <= int(text) < (1 << (bits - 1)):
        raise DataException(f"Value ({text}) was out of range for requested data type")
    return int(text)


def _parse_float(text: str) -> float:
    # Double.parseDouble: surrounding whitespace is allowed, and a trailing f/d type suffix.
    trimmed = text.strip(_JAVA_WS)
    if _JAVA_FLOAT.fullmatch(trimmed) is None:
        raise DataException(f"Value ({text}) was out of range for requested data type")
    return float(trimmed.rstrip("fFdD"))


def _to_integer(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int | float | decimal.Decimal):
        return _integral(value, bits)
    if isinstance(value, str):
        return _parse_int(value, bits)
    raise DataException(f"Unexpected type in Cast transformation: {class_name(value)}")


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float | decimal.Decimal):
        return float(value)
    if isinstance(value, str):
        return _parse_float(value)
    raise DataException(f"Unexpected type in Cast transformation: {class_name(value)}")


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | decimal.Decimal):
        return _integral(value, 64) != 0  # Number.longValue() != 0: 0.5 is false
    if isinstance(value, str):
        return value.lower() == "true"
    raise DataException(f"Unexpected type in Cast transformation: {class_name(value)}")


def _to_string(value: Any, schema: Schema | None) -> str:
    if isinstance(value, datetime.date | datetime.time):
        return _format_temporal(_millis(value))
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return java_to_string(value, schema)


def _encode_logical(schema: Schema, value: Any) -> Any:
    """Date -> epoch days, Time and Timestamp -> millis (a Decimal stays a Decimal)."""
    if schema.name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)
    if schema.name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)
    if schema.name == Timestamp.LOGICAL_NAME:
        return Timestamp.from_logical(schema, value)
    return value


def cast_value(schema: Schema | None, value: Any, target: Type) -> Any:
    """Kafka's Cast.castValueToType: `value` (described by `schema`, or inferred) cast to `target`."""
    if value is None:
        return None
    source = schema.type if schema is not None else schemaless_type(value)
    if source is None:
        raise DataException(
            f"Cast transformation was passed a value of type {class_name(value)} which is not supported by "
            "Connect's data API"
        )
    if source not in _INPUT_TYPES:
        raise DataException(
            f"Cast transformation does not support casting from {source.name}; supported types are "
            + _type_list(_INPUT_TYPES)
        )
    if schema is not None and schema.name is not None and target is not Type.STRING:
        value = _encode_logical(schema, value)
    match target:
        case Type.INT8:
            return _to_integer(value, 8)
        case Type.INT16:
            return _to_integer(value, 16)
        case Type.INT32:
            return _to_integer(value, 32)
        case Type.INT64:
            return _to_integer(value, 64)
        case Type.FLOAT32:
            return to_float32(_to_float(value))
        case Type.FLOAT64:
            return _to_float(value)
        case Type.BOOLEAN:
            return _to_boolean(value)
        case Type.STRING:
            return _to_string(value, schema)
    raise DataException(f"{target.name} is not supported in the Cast transformation.")


class Cast(OperatingSide, Transformation[R], ABC):
    """`spec` lists `field:type` casts for a Struct's or map's fields, or one `type` for the whole
    key/value; the schema follows (optionality kept, defaults cast too). Nulls pass through."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._casts = parse_spec(list(config.get_list(SPEC) or ()))
        self._whole = self._casts.get(_WHOLE_VALUE)
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))
        self._cache = SchemaUpdateCache(16)

    def apply(self, record: R) -> R | None:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            if self._whole is not None:
                return self.new_record(record, None, cast_value(None, value, self._whole))
            updated = dict(require_map(value, PURPOSE))
            for field, target in self._casts.items():
                updated[field] = cast_value(None, updated.get(field), target)
            return self.new_record(record, None, updated)
        updated_schema = self._updated_schema(schema)
        if self._whole is not None:
            return self.new_record(record, updated_schema, cast_value(schema, value, self._whole))
        struct = require_struct(value, PURPOSE)
        out = Struct(updated_schema)
        for field in struct.schema.fields:
            original = struct.get(field) if self._replace_null_with_default else struct.get_without_default(field.name)
            target = self._casts.get(field.name)
            put_present(out, field.name, original if target is None else cast_value(field.schema, original, target))
        return self.new_record(record, updated_schema, out)

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._cache.get(schema)
        if cached is not None:
            return cached
        if self._whole is not None:
            builder = SchemaBuilder.of(self._whole)
            # Kafka also copies a logical type's name and parameters onto the new primitive
            # schema; that would make e.g. a STRING claim to be a Timestamp, so it is left off.
            if not is_logical(schema):
                copy_schema_basics(schema, builder)
        else:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields:
                target = self._casts.get(field.name)
                if target is None:
                    builder.field(field.name, field.schema)
                    continue
                field_builder = SchemaBuilder.of(target)
                if field.schema.optional:
                    field_builder.optional()
                if field.schema.default_value is not None:
                    field_builder.default_value(cast_value(field.schema, field.schema.default_value, target))
                builder.field(field.name, field_builder.build())
        if schema.optional:
            builder.optional()
        if schema.default_value is not None and self._whole is not None:
            builder.default_value(cast_value(schema, schema.default_value, self._whole))
        updated = builder.build()
        self._cache.put(schema, updated)
        return updated

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._cache = SchemaUpdateCache(16)


class CastKey(KeySide, Cast[R]):
    """org.apache.kafka.connect.transforms.Cast$Key"""


class CastValue(ValueSide, Cast[R]):
    """org.apache.kafka.connect.transforms.Cast$Value"""

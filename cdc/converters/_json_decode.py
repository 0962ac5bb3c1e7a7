"""Parsed JSON to Connect values (Kafka's `JsonConverter.convertToConnect`).

Readers are compiled once per schema. Where Kafka's Jackson accessors silently coerce a
mistyped node (a string read as int gives 0, a number read as boolean gives false), these
readers raise DataException instead; well-formed input reads the same.
"""

from __future__ import annotations

import binascii
import decimal
import math
from collections.abc import Callable
from typing import Any

from cdc.api.data.logical import Date, Decimal, Time, Timestamp
from cdc.api.data.schema import Schema, Type
from cdc.api.data.struct import Struct
from cdc.api.errors import DataException
from cdc.converters._javafmt import from_unscaled_bytes

Reader = Callable[[Any], Any]

_INT_RANGE = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_INT32 = _INT_RANGE[Type.INT32]
_INT64 = _INT_RANGE[Type.INT64]
# Kafka writes non-finite doubles as these strings (Jackson's WRITE_NAN_AS_STRINGS).
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def node_type(node: Any) -> str:
    """Jackson's JsonNodeType name for a parsed JSON value, for error messages."""
    if node is None:
        return "NULL"
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, int | float | decimal.Decimal):
        return "NUMBER"
    if isinstance(node, str):
        return "STRING"
    if isinstance(node, list):
        return "ARRAY"
    return "OBJECT"


def _is_number(node: Any) -> bool:
    return isinstance(node, int | float | decimal.Decimal) and not isinstance(node, bool)


def _mistyped(schema: Schema, node: Any, expected: str) -> DataException:
    return DataException(
        f"Invalid value for {schema.type.name} schema: expected {expected} but found {node_type(node)}"
    )


def compile_reader(schema: Schema | None, replace_null_with_default: bool) -> Reader:
    """A reader for `schema`, null handling included."""
    if schema is None:
        return read_schemaless
    base = _nonnull(schema, replace_null_with_default)
    default = schema.default_value
    if default is not None and replace_null_with_default:
        # Defaults were converted when the schema was read: no logical conversion here.
        return lambda n: default if n is None else base(n)
    if schema.optional:
        return lambda n: None if n is None else base(n)
    message = f"Invalid null value for required {schema.type.name} field"

    def required(n: Any) -> Any:
        if n is None:
            raise DataException(message)
        return base(n)

    return required


def _nonnull(schema: Schema, replace: bool) -> Reader:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return _decimal_reader(schema)
    if name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME):
        logical = Date if name == Date.LOGICAL_NAME else Time
        label = logical.__name__

        def read_days_or_millis(n: Any) -> Any:
            if type(n) is not int or not _INT32[0] <= n <= _INT32[1]:
                raise DataException(
                    f"Invalid type for {label}, underlying representation should be integer but was {node_type(n)}"
                )
            return logical.to_logical(schema, n)

        return read_days_or_millis
    if name == Timestamp.LOGICAL_NAME:

        def read_timestamp(n: Any) -> Any:
            if type(n) is not int or not _INT64[0] <= n <= _INT64[1]:
                raise DataException(
                    f"Invalid type for Timestamp, underlying representation should be integral but was {node_type(n)}"
                )
            return Timestamp.to_logical(schema, n)

        return read_timestamp
    t = schema.type
    if t in _INT_RANGE:
        return _int_reader(schema)
    if t is Type.FLOAT32 or t is Type.FLOAT64:

        def read_float(n: Any) -> float:
            if _is_number(n):
                return float(n)
            if isinstance(n, str) and n in _NON_FINITE:
                return _NON_FINITE[n]
            raise _mistyped(schema, n, "a number")

        return read_float
    if t is Type.BOOLEAN:

        def read_bool(n: Any) -> bool:
            if type(n) is bool:
                return n
            raise _mistyped(schema, n, "a boolean")

        return read_bool
    if t is Type.STRING:

        def read_str(n: Any) -> str:
            if type(n) is str:
                return n
            raise _mistyped(schema, n, "a string")

        return read_str
    if t is Type.BYTES:
        return _read_bytes
    if t is Type.ARRAY:
        elem = compile_reader(schema.value_schema, replace)

        def read_array(n: Any) -> list[Any]:
            if type(n) is not list:
                raise _mistyped(schema, n, "an array")
            return [elem(x) for x in n]

        return read_array
    if t is Type.MAP:
        return _map_reader(schema, replace)
    return _struct_reader(schema, replace)


def _int_reader(schema: Schema) -> Reader:
    lo, hi = _INT_RANGE[schema.type]

    def read_int(n: Any) -> int:
        if type(n) is int and lo <= n <= hi:
            return n
        # Accept integral numbers written with a fraction or exponent (12.0, 1E+2).
        # Range first: int() of a huge Decimal exponent would be enormous.
        if _is_number(n) and lo <= n <= hi and n == int(n):
            return int(n)
        if _is_number(n):
            raise DataException(f"Invalid value {n} for {schema.type.name} schema: not an integer in range")
        raise _mistyped(schema, n, "an integer")

    return read_int


def _read_bytes(n: Any) -> bytes:
    if type(n) is not str:
        raise DataException(f"Invalid bytes field: expected a base64 string but found {node_type(n)}")
    try:
        return binascii.a2b_base64(n, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise DataException("Invalid bytes field") from e


def _decimal_reader(schema: Schema) -> Reader:
    scale = Decimal.scale(schema)

    def read_decimal(n: Any) -> decimal.Decimal:
        if _is_number(n):
            # NUMERIC format: keep the written digits and scale, as Kafka's decimalValue() does.
            return n if isinstance(n, decimal.Decimal) else decimal.Decimal(repr(n) if type(n) is float else n)
        if type(n) is str:
            try:
                return from_unscaled_bytes(binascii.a2b_base64(n, strict_mode=True), scale)
            except Exception as e:
                raise DataException("Invalid bytes for Decimal field") from e
        raise DataException(
            f"Invalid type for Decimal, underlying representation should be numeric or bytes but was {node_type(n)}"
        )

    return read_decimal


def _map_reader(schema: Schema, replace: bool) -> Reader:
    key_schema = schema.key_schema
    key = compile_reader(key_schema, replace)
    val = compile_reader(schema.value_schema, replace)
    if key_schema is None or key_schema.type is Type.STRING:

        def read_object(n: Any) -> dict[Any, Any]:
            if type(n) is not dict:
                raise DataException(
                    "Maps with string fields should be encoded as JSON objects, but found " + node_type(n)
                )
            return {k: val(x) for k, x in n.items()}

        return read_object

    def read_pairs(n: Any) -> dict[Any, Any]:
        if type(n) is not list:
            raise DataException(
                "Maps with non-string fields should be encoded as JSON array of tuples, but found " + node_type(n)
            )
        out: dict[Any, Any] = {}
        for entry in n:
            if type(entry) is not list:
                raise DataException("Found invalid map entry instead of array tuple: " + node_type(entry))
            if len(entry) != 2:
                raise DataException(f"Found invalid map entry, expected length 2 but found :{len(entry)}")
            k = key(entry[0])
            try:
                out[k] = val(entry[1])
            except TypeError as e:  # a list or dict key has no Python hash
                raise DataException(f"Map key of type {type(k).__name__} cannot be used in a Python dict") from e
        return out

    return read_pairs


def _struct_reader(schema: Schema, replace: bool) -> Reader:
    """A generated reader: per field one dict lookup and one inline type test.

    Only values failing the inline test (nulls, coercions, errors, nested and logical
    types) go through the field's full reader. The readers produce values of the field
    types, so the struct's slots are filled directly instead of through Struct.put,
    whose re-validation would be the dominant cost on wide rows.
    """
    env: dict[str, Any] = {
        "Struct": Struct,
        "new": object.__new__,
        "schema": schema,
        "DataException": DataException,
        "node_type": node_type,
    }
    body = [
        "def read_struct(n):",
        "    if type(n) is not dict:",
        "        raise DataException('Structs should be encoded as JSON objects, but found ' + node_type(n))",
        "    get = n.get",
    ]
    for i, f in enumerate(schema.fields):
        env[f"k{i}"] = f.name
        env[f"r{i}"] = compile_reader(f.schema, replace)
        body.append(f"    x{i} = get(k{i})")
        fast = _inline_check(f.schema, f"x{i}", env, i)
        body.append(f"    if not ({fast}):" if fast else "    if True:")
        body.append(f"        x{i} = r{i}(x{i})")
    body += [
        "    s = new(Struct)",
        "    s.schema = schema",
        "    s._values = [" + ", ".join(f"x{i}" for i in range(len(schema.fields))) + "]",
        "    return s",
    ]
    exec(compile("\n".join(body), f"<json reader for {schema.name!a}>", "exec"), env)
    return env["read_struct"]  # type: ignore[no-any-return]


def _inline_check(schema: Schema, x: str, env: dict[str, Any], i: int) -> str | None:
    """An expression true when the parsed node `x` already is the field's value."""
    if schema.name in (Decimal.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return None
    t = schema.type
    if t in _INT_RANGE:
        env[f"lo{i}"], env[f"hi{i}"] = _INT_RANGE[t]
        return f"type({x}) is int and lo{i} <= {x} <= hi{i}"
    if t is Type.STRING:
        return f"type({x}) is str"
    if t is Type.BOOLEAN:
        return f"type({x}) is bool"
    if t is Type.FLOAT32 or t is Type.FLOAT64:
        return f"type({x}) is float"
    return None


def read_schemaless(n: Any) -> Any:
    """Without a schema: integers stay int (INT64), other numbers become float (FLOAT64)."""
    if isinstance(n, decimal.Decimal):
        return float(n)
    if type(n) is list:
        return [read_schemaless(x) for x in n]
    if type(n) is dict:
        return {k: read_schemaless(x) for k, x in n.items()}
    return n

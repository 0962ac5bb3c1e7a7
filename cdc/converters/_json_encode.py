"""Connect values to JSON text, exactly as Kafka's JsonConverter (Jackson) writes them.

Encoders are compiled once per schema and cached by the converter. STRUCT schemas get a
generated function (one f-string per struct, see `_generate_struct`); everything else
gets small closures. Output text still needs `jackson_fixup` for control characters.
"""

from __future__ import annotations

import binascii
import datetime
import decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api.data.logical import Date, Decimal, Time, Timestamp
from cdc.api.data.schema import Schema, Type
from cdc.api.data.struct import Struct
from cdc.api.errors import DataException
from cdc.converters._javafmt import (
    bigdecimal_to_string,
    double_to_string,
    float_to_string,
    quantum,
    quote,
    quote_fast,
    unscaled_bytes,
)

TextEncoder = Callable[[Any], str]

NULL_REQUIRED = "Conversion error: null value for field that is required and has no default value"
_LOGICAL = frozenset({Decimal.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME})
_INT_RANGE = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_BYTES = (bytes, bytearray, memoryview)


@dataclass(frozen=True, slots=True)
class EncodeOptions:
    numeric_decimals: bool = False
    replace_null_with_default: bool = True


def b64(value: bytes | bytearray | memoryview) -> str:
    return binascii.b2a_base64(value, newline=False).decode("ascii")


def _type_error(schema: Schema | None, value: Any) -> DataException:
    where = schema.type.name if schema is not None else "unknown schema"
    return DataException(f"Invalid type for {where}: {type(value).__module__}.{type(value).__qualname__}")


def _is_int(v: Any) -> bool:
    return type(v) is int or (isinstance(v, int) and not isinstance(v, bool))


# -- text encoder ---------------------------------------------------------------------------
def compile_text(schema: Schema | None, opts: EncodeOptions) -> TextEncoder:
    """Encoder for `schema`, null handling included (Kafka's convertToJson)."""
    if schema is None:
        return encode_schemaless
    base = _text_nonnull(schema, opts)
    if schema.default_value is not None and opts.replace_null_with_default:
        default_text = base(schema.default_value)
        return lambda v: default_text if v is None else base(v)
    if schema.optional:
        return lambda v: "null" if v is None else base(v)

    def required(v: Any) -> str:
        if v is None:
            raise DataException(NULL_REQUIRED)
        return base(v)

    return required


def _text_nonnull(schema: Schema, opts: EncodeOptions) -> TextEncoder:
    if schema.name in _LOGICAL:
        return _text_logical(schema, opts)
    t = schema.type
    if t in _INT_RANGE:
        lo, hi = _INT_RANGE[t]

        def enc_int(v: Any) -> str:
            if _is_int(v) and lo <= v <= hi:
                return int.__repr__(v)
            raise _type_error(schema, v)

        return enc_int
    if t is Type.FLOAT64 or t is Type.FLOAT32:
        fmt = double_to_string if t is Type.FLOAT64 else float_to_string

        def enc_float(v: Any) -> str:
            if type(v) is not float and not isinstance(v, float):
                raise _type_error(schema, v)
            text = fmt(v)
            # Jackson quotes NaN and the infinities (WRITE_NAN_AS_STRINGS is on by default).
            return text if text[-1].isdigit() else '"' + text + '"'

        return enc_float
    if t is Type.BOOLEAN:

        def enc_bool(v: Any) -> str:
            if v is True:
                return "true"
            if v is False:
                return "false"
            raise _type_error(schema, v)

        return enc_bool
    if t is Type.STRING:

        def enc_str(v: Any) -> str:
            if isinstance(v, str):
                return quote_fast(v)
            raise _type_error(schema, v)

        return enc_str
    if t is Type.BYTES:

        def enc_bytes(v: Any) -> str:
            if isinstance(v, _BYTES):
                return '"' + b64(v) + '"'
            raise DataException(f"Invalid type for bytes type: {type(v).__name__}")

        return enc_bytes
    if t is Type.ARRAY:
        return _text_array(schema, opts)
    if t is Type.MAP:
        return _text_map(schema, opts)
    return _text_struct(schema, opts)


def _text_array(schema: Schema, opts: EncodeOptions) -> TextEncoder:
    elem = compile_text(schema.value_schema, opts)

    def enc_array(v: Any) -> str:
        if not isinstance(v, list | tuple):
            raise _type_error(schema, v)
        return "[" + ",".join(map(elem, v)) + "]"

    return enc_array


def _text_map(schema: Schema, opts: EncodeOptions) -> TextEncoder:
    key_schema = schema.key_schema
    key = compile_text(key_schema, opts)
    val = compile_text(schema.value_schema, opts)
    if key_schema is not None and key_schema.type is Type.STRING:

        def key_text(k: Any) -> str:
            # Kafka uses the key node's asText(): a null key becomes the text "null".
            text = key(k)
            return text if text.startswith('"') else quote_fast(text)

        def enc_object(v: Any) -> str:
            if not isinstance(v, Mapping):
                raise _type_error(schema, v)
            return "{" + ",".join(key_text(k) + ":" + val(x) for k, x in v.items()) + "}"

        return enc_object

    def enc_pairs(v: Any) -> str:
        if not isinstance(v, Mapping):
            raise _type_error(schema, v)
        return "[" + ",".join("[" + key(k) + "," + val(x) + "]" for k, x in v.items()) + "]"

    return enc_pairs


def _text_logical(schema: Schema, opts: EncodeOptions) -> TextEncoder:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        exponent = quantum(scale)

        def enc_decimal(v: Any) -> str:
            if not isinstance(v, decimal.Decimal):
                raise DataException(f"Invalid type for Decimal, expected Decimal but was {type(v).__name__}")
            if opts.numeric_decimals:
                try:
                    return bigdecimal_to_string(v)
                except ValueError as e:
                    raise DataException(str(e)) from e
            if not v.same_quantum(exponent):
                raise DataException(
                    f"BigDecimal has mismatching scale value for given Decimal schema: {v} is not at scale {scale}"
                )
            return '"' + b64(unscaled_bytes(v, scale)) + '"'

        return enc_decimal
    if name == Date.LOGICAL_NAME:

        def enc_date(v: Any) -> str:
            if not isinstance(v, datetime.date) or isinstance(v, datetime.datetime):
                raise DataException(f"Invalid type for Date, expected Date but was {type(v).__name__}")
            return str(Date.from_logical(schema, v))

        return enc_date
    if name == Time.LOGICAL_NAME:

        def enc_time(v: Any) -> str:
            if not isinstance(v, datetime.time):
                raise DataException(f"Invalid type for Time, expected Date but was {type(v).__name__}")
            return str(Time.from_logical(schema, v))

        return enc_time

    def enc_timestamp(v: Any) -> str:
        if not isinstance(v, datetime.datetime):
            raise DataException(f"Invalid type for Timestamp, expected Date but was {type(v).__name__}")
        return str(Timestamp.from_logical(schema, v))

    return enc_timestamp


def encode_schemaless(v: Any) -> str:
    """A value without schema: the type is inferred from the Python class, as Kafka does."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return quote_fast(v)
    if _is_int(v):
        if not -(2**63) <= v < 2**63:
            raise DataException(f"Integer {v} does not fit int64, the widest Connect integer type.")
        return int.__repr__(v)
    if isinstance(v, float):
        text = double_to_string(v)
        return text if text[-1].isdigit() else '"' + text + '"'
    if isinstance(v, _BYTES):
        return '"' + b64(v) + '"'
    if isinstance(v, list | tuple):
        return "[" + ",".join(map(encode_schemaless, v)) + "]"
    if isinstance(v, Mapping):
        if all(isinstance(k, str) for k in v):
            return "{" + ",".join(quote_fast(k) + ":" + encode_schemaless(x) for k, x in v.items()) + "}"
        return "[" + ",".join("[" + encode_schemaless(k) + "," + encode_schemaless(x) + "]" for k, x in v.items()) + "]"
    if isinstance(v, Struct):
        raise DataException("Mismatching schema.")
    raise DataException(
        f"Python class {type(v).__module__}.{type(v).__qualname__} does not have corresponding schema type."
    )


# -- generated struct encoder ----------------------------------------------------------------
_MAX_GENERATED_FIELDS = 250  # beyond this the closure encoder is used (one huge f-string buys little)


def _text_struct(schema: Schema, opts: EncodeOptions) -> TextEncoder:
    if len(schema.fields) <= _MAX_GENERATED_FIELDS:
        return _generate_struct(schema, opts)
    return _closure_struct(schema, opts)


def _closure_struct(schema: Schema, opts: EncodeOptions) -> TextEncoder:
    """Reference struct encoder: one closure per field."""
    plan = [(quote(f.name) + ":", f.index, compile_text(f.schema, opts)) for f in schema.fields]

    def enc_struct(v: Any) -> str:
        if not isinstance(v, Struct) or (v.schema is not schema and v.schema != schema):
            raise DataException("Mismatching schema.")
        # Raw slots: each field encoder applies the default itself when that is enabled,
        # which is Kafka's struct.get() vs getWithoutDefault() choice.
        vals = v._values
        return "{" + ",".join(prefix + enc(vals[i]) for prefix, i, enc in plan) + "}"

    return enc_struct


def _generate_struct(schema: Schema, opts: EncodeOptions) -> TextEncoder:
    """Compile a struct encoder to a single f-string expression.

    Per record this is one function call per struct, not per field: field names are
    literal text, ints format natively, strings go through the C quoting function.
    Values in a Struct were type-checked by Struct.put, so only nulls are checked here.
    Output is identical to `_closure_struct` (a property test holds them together).
    """
    env: dict[str, Any] = {
        "Struct": Struct,
        "schema": schema,
        "DataException": DataException,
        "NULL_REQUIRED": NULL_REQUIRED,
        "q": quote_fast,
        "N": "null",
        "T": "true",
        "F": "false",
    }
    template: list[str] = []
    required: list[str] = []
    for i, f in enumerate(schema.fields):
        x = f"x{i}"
        fs = f.schema
        template.append(("{{" if i == 0 else ",") + quote(f.name).replace("{", "{{").replace("}", "}}") + ":")
        value = _inline_nonnull(fs, opts, x, env, i)
        if fs.default_value is not None and opts.replace_null_with_default:
            env[f"d{i}"] = compile_text(fs, opts)(None)
            expr = f"d{i} if {x} is None else {value}"
        elif fs.optional:
            expr = f"N if {x} is None else {value}"
        else:
            required.append(f"{x} is None")
            expr = value
        template.append("{" + expr + "}")
    template.append("}}" if schema.fields else "{{}}")
    names = ", ".join(f"x{i}" for i in range(len(schema.fields)))
    body = [
        "def enc_struct(v):",
        "    if type(v) is not Struct and not isinstance(v, Struct):",
        "        raise DataException('Mismatching schema.')",
        "    if v.schema is not schema and v.schema != schema:",
        "        raise DataException('Mismatching schema.')",
    ]
    if schema.fields:
        body.append(f"    {names}, = v._values")
    if required:
        body.append(f"    if {' or '.join(required)}:")
        body.append("        raise DataException(NULL_REQUIRED)")
    body.append("    return f" + repr("".join(template)))
    exec(compile("\n".join(body), f"<json encoder for {schema.name!a}>", "exec"), env)
    return env["enc_struct"]  # type: ignore[no-any-return]


def _inline_nonnull(schema: Schema, opts: EncodeOptions, x: str, env: dict[str, Any], i: int) -> str:
    """A quote-free, backslash-free expression rendering the non-null value `x`."""
    t = schema.type
    if schema.name not in _LOGICAL:
        if t in _INT_RANGE:
            return x  # f-string formatting of an int is its decimal text
        if t is Type.STRING:
            return f"q({x})"
        if t is Type.BOOLEAN:
            return f"T if {x} else F"
    env[f"e{i}"] = _text_nonnull(schema, opts)
    return f"e{i}({x})"

"""Kafka Connect JSON schemas → Arrow types, with the value conversion each one needs."""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa

Convert = Callable[[Any], Any]
_EPOCH_DATE = datetime.date(1970, 1, 1)


def _ident(v: Any) -> Any:
    return v


def _b64(v: Any) -> Any:
    return base64.b64decode(v) if isinstance(v, str) else v


def _json_text(v: Any) -> Any:
    return None if v is None else json.dumps(v, separators=(",", ":"))


def _days(v: Any) -> Any:
    return None if v is None else _EPOCH_DATE + datetime.timedelta(days=int(v))


# Decimal arithmetic rounds to the context's 28 digits by default; PostgreSQL numerics and
# MySQL DECIMAL(65) are wider, and a rounded value would reach the lake without a word.
_EXACT = decimal.Context(prec=decimal.MAX_PREC)


def _decimal(scale: int) -> Convert:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, str):  # base64 of the unscaled big-endian two's complement
            unscaled = int.from_bytes(base64.b64decode(v), "big", signed=True)
            return decimal.Decimal(unscaled).scaleb(-scale, _EXACT)
        return decimal.Decimal(str(v))  # decimal.format=NUMERIC

    return conv


def _float(v: Any) -> Any:
    """JsonConverter writes NaN and the infinities as the strings "NaN", "Infinity", "-Infinity"."""
    return float(v) if isinstance(v, str) else v


_PRIMITIVE: dict[str, pa.DataType] = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float": pa.float32(),
    "float32": pa.float32(),
    "double": pa.float64(),
    "float64": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
}
_TIMESTAMPS = {
    "org.apache.kafka.connect.data.Timestamp": "ms",
    "io.debezium.time.Timestamp": "ms",
    "io.debezium.time.MicroTimestamp": "us",
    "io.debezium.time.NanoTimestamp": "ns",
}


def arrow_type(schema: dict[str, Any]) -> tuple[pa.DataType, Convert]:
    """The Arrow type for one Connect field schema, and how to turn JSON values into it."""
    name = schema.get("name")
    kind = schema.get("type")
    params = schema.get("parameters") or {}
    if name == "org.apache.kafka.connect.data.Decimal":
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", 38))
        precision = max(precision, scale, 1)
        dtype = pa.decimal128(min(precision, 38), scale) if precision <= 38 else pa.string()
        conv = _decimal(scale)
        return dtype, (conv if precision <= 38 else (lambda v: None if v is None else str(conv(v))))
    if name in _TIMESTAMPS:
        return pa.timestamp(_TIMESTAMPS[name]), _ident
    if name in ("org.apache.kafka.connect.data.Date", "io.debezium.time.Date"):
        return pa.date32(), _days
    if kind == "bytes":
        return pa.binary(), _b64
    if kind in ("float", "float32", "double", "float64"):
        return _PRIMITIVE[kind], _float
    if kind in _PRIMITIVE:
        return _PRIMITIVE[kind], _ident
    return pa.string(), _json_text  # struct, array, map: kept as JSON text


def field_types(row_schema: dict[str, Any] | None) -> dict[str, tuple[pa.DataType, Convert]]:
    """Column name → (type, converter) for the `after`/`before` struct schema of an envelope."""
    if not row_schema:
        return {}
    return {f["field"]: arrow_type(f) for f in row_schema.get("fields", [])}


def envelope_row_schema(value_schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The row struct inside a Debezium envelope schema (the `after` field, else `before`)."""
    if not value_schema:
        return None
    fields = {f.get("field"): f for f in value_schema.get("fields", [])}
    return fields.get("after") or fields.get("before")

"""MaskField$Key / MaskField$Value: overwrite fields with a type's "empty" value or a replacement."""

from __future__ import annotations

import datetime
import decimal
import re
from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from cdc.api.errors import DataException
from cdc.api.transforms import Transformation
from cdc.transforms._util import (
    KeySide,
    OperatingSide,
    R,
    ValueSide,
    class_name,
    non_empty_list,
    non_empty_string_or_null,
    put_present,
    require_map,
    require_struct,
)

FIELDS = "fields"
REPLACEMENT = "replacement"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
PURPOSE = "mask fields"

CONFIG_DEF = (
    ConfigDef()
    .define(
        FIELDS,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="Names of fields to mask.",
    )
    .define(
        REPLACEMENT,
        ConfigType.STRING,
        None,
        validator=non_empty_string_or_null,
        importance=Importance.LOW,
        documentation="Custom value replacement, that will be applied to all 'fields' values "
        "(numeric or non-empty string values only).",
    )
    .define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        documentation="Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    )
)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_MIDNIGHT = datetime.time(0, 0)
_INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_INTEGER = re.compile(r"[+-]?[0-9]+")
# java.math.BigDecimal's string form, which Kafka parses numeric replacements with: no
# NaN/Infinity, no surrounding whitespace, no underscores (all of which float() accepts).
_JAVA_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


# -- default masks ---------------------------------------------------------------------------
def empty_for_schema(schema: Schema, field: str) -> Any:
    """The "null value" of a field's type; Connect's logical types mask to zero / the epoch."""
    if schema.name == Decimal.LOGICAL_NAME:
        # Zero at the schema's scale, so the converter can still encode it.
        return decimal.Decimal(0).scaleb(-Decimal.scale(schema))
    if schema.name == Date.LOGICAL_NAME:
        return _EPOCH_DATE
    if schema.name == Time.LOGICAL_NAME:
        return _MIDNIGHT
    if schema.name == Timestamp.LOGICAL_NAME:
        return _EPOCH
    t = schema.type
    if t in _INT_RANGES:
        return 0
    if t in (Type.FLOAT32, Type.FLOAT64):
        return 0.0
    if t is Type.BOOLEAN:
        return False
    if t is Type.STRING:
        return ""
    if t is Type.ARRAY:
        return []
    if t is Type.MAP:
        return {}
    # BYTES and STRUCT have no masked form in Kafka either.
    raise DataException(f"Cannot mask value of type: {_type_label(schema)} (field {field!r})")


def empty_for_value(value: Any, field: str) -> Any:
    """Schemaless: choose by the Python type of the value, as Kafka chooses by the Java class."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, str):
        return ""
    if isinstance(value, datetime.datetime):
        return _EPOCH if value.tzinfo is not None else _EPOCH.replace(tzinfo=None)
    if isinstance(value, datetime.date):
        return _EPOCH_DATE
    if isinstance(value, datetime.time):
        return _MIDNIGHT
    if isinstance(value, list | tuple):
        return []
    if isinstance(value, Mapping):
        return {}
    raise DataException(f"Cannot mask value of type: {class_name(value)} (field {field!r})")


# -- custom replacements ---------------------------------------------------------------------
def replacement_for_schema(schema: Schema, replacement: str, field: str) -> Any:
    """Parse `replacement` as the field's type; only numbers, decimals and strings qualify."""
    label = _type_label(schema)
    if schema.name == Decimal.LOGICAL_NAME:
        return _decimal(replacement, field, Decimal.scale(schema))
    if schema.name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        raise _unsupported(label, field)
    t = schema.type
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return _integer(replacement, field, label, lo, hi)
    if t in (Type.FLOAT32, Type.FLOAT64):
        return _float(replacement, field, label)
    if t is Type.STRING:
        return replacement
    raise _unsupported(label, field)


def replacement_for_value(value: Any, replacement: str, field: str) -> Any:
    if isinstance(value, bool):
        raise _unsupported("bool", field)
    if isinstance(value, int):
        lo, hi = _INT_RANGES[Type.INT64]
        return _integer(replacement, field, "int", lo, hi)
    if isinstance(value, float):
        return _float(replacement, field, "float")
    if isinstance(value, decimal.Decimal):
        return _decimal(replacement, field, None)
    if isinstance(value, str):
        return replacement
    raise _unsupported(class_name(value), field)


def _type_label(schema: Schema) -> str:
    return schema.name if schema.name else schema.type.value


def _unsupported(label: str, field: str) -> DataException:
    return DataException(
        f"Cannot mask value of type {label} with custom replacement (field {field!r}); "
        "a replacement works only for numeric and string fields"
    )


def _unparseable(replacement: str, field: str, label: str, why: str = "") -> DataException:
    return DataException(
        f"Unable to convert replacement {replacement!r} to {label} for masked field {field!r}{why}; "
        "set a replacement that parses as that type, or mask this field without a replacement"
    )


def _integer(replacement: str, field: str, label: str, lo: int, hi: int) -> int:
    if not _INTEGER.fullmatch(replacement):
        raise _unparseable(replacement, field, label)
    number = int(replacement)
    if not lo <= number <= hi:
        raise _unparseable(replacement, field, label, f" (out of range {lo}..{hi})")
    return number


def _float(replacement: str, field: str, label: str) -> float:
    if not _JAVA_NUMBER.fullmatch(replacement):
        raise _unparseable(replacement, field, label)
    return float(replacement)


def _decimal(replacement: str, field: str, scale: int | None) -> decimal.Decimal:
    if not _JAVA_NUMBER.fullmatch(replacement):
        raise _unparseable(replacement, field, "decimal")
    number = decimal.Decimal(replacement)
    if scale is None:
        return number
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if -exponent > scale:
        # Rounding would silently change the mask; Kafka's converter rejects a scale mismatch too.
        raise _unparseable(replacement, field, f"decimal with scale {scale}", " (too many fraction digits)")
    return number.quantize(decimal.Decimal(1).scaleb(-scale))


class MaskField(OperatingSide, Transformation[R], ABC):
    """Mask `fields` with their type's empty value (0, false, "", [], {}, zero, the epoch) or `replacement`."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._fields = frozenset(config.get_list(FIELDS) or [])
        self._replacement: str | None = config.get_string(REPLACEMENT)
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))

    def apply(self, record: R) -> R | None:
        if self.operating_value(record) is None:
            return record
        if self.operating_schema(record) is None:
            return self._apply_schemaless(record)
        return self._apply_with_schema(record)

    def _apply_schemaless(self, record: R) -> R:
        value = require_map(self.operating_value(record), PURPOSE)
        updated = dict(value)
        for field in self._fields:
            # Kafka writes the key even when the map lacks it (masking null gives null); kept
            # so the output matches Kafka's byte for byte.
            original = value.get(field)
            if original is None:
                updated[field] = None
            elif self._replacement is None:
                updated[field] = empty_for_value(original, field)
            else:
                updated[field] = replacement_for_value(original, self._replacement, field)
        return self.new_record(record, None, updated)

    def _apply_with_schema(self, record: R) -> R:
        value = require_struct(self.operating_value(record), PURPOSE)
        updated = Struct(value.schema)
        for field in value.schema.fields:
            original = value.get(field) if self._replace_null_with_default else value.get_without_default(field.name)
            if original is not None and field.name in self._fields:
                if self._replacement is None:
                    original = empty_for_schema(field.schema, field.name)
                else:
                    original = replacement_for_schema(field.schema, self._replacement, field.name)
            put_present(updated, field.name, original)
        return self.new_record(record, self.operating_schema(record), updated)

    def config(self) -> ConfigDef:
        return CONFIG_DEF


class MaskFieldKey(KeySide, MaskField[R]):
    """org.apache.kafka.connect.transforms.MaskField$Key"""


class MaskFieldValue(ValueSide, MaskField[R]):
    """org.apache.kafka.connect.transforms.MaskField$Value"""

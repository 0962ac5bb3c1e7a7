"""TimestampConverter$Key / $Value: convert a timestamp between unix, string, Date, Time and Timestamp
(Kafka's TimestampConverter).

Kafka pivots through `java.util.Date`; here the pivot is epoch milliseconds (so, as in Kafka,
sub-millisecond digits of micro/nanosecond unix values are lost). The Connect logical values
are Python's: a Timestamp is a UTC `datetime`, a Date a `date`, a Time a `time`. Schemaless, a
`datetime` is read as a Timestamp, a `date` as a Date, a `time` as a Time, an int as unix and a
str as text in `format` (a java.text.SimpleDateFormat pattern, always in UTC).
"""

from __future__ import annotations

import datetime
from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance, ValidString
from cdc.api.data import Date, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from cdc.api.errors import ConfigException, ConnectException, DataException
from cdc.api.transforms import Transformation
from cdc.transforms._java_date_format import JavaDateFormat
from cdc.transforms._util import (
    KeySide,
    OperatingSide,
    R,
    SchemaUpdateCache,
    ValueSide,
    class_name,
    copy_schema_basics,
    put_present,
    require_map,
    require_struct,
)

FIELD = "field"
TARGET_TYPE = "target.type"
FORMAT = "format"
UNIX_PRECISION = "unix.precision"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
PURPOSE = "converting timestamp formats"

TYPE_STRING = "string"
TYPE_UNIX = "unix"
TYPE_DATE = "Date"
TYPE_TIME = "Time"
TYPE_TIMESTAMP = "Timestamp"
SECONDS, MILLIS, MICROS, NANOS = "seconds", "milliseconds", "microseconds", "nanoseconds"

OPTIONAL_DATE_SCHEMA = Date.builder().optional().build()
OPTIONAL_TIMESTAMP_SCHEMA = Timestamp.builder().optional().build()
OPTIONAL_TIME_SCHEMA = Time.builder().optional().build()

CONFIG_DEF = (
    ConfigDef()
    .define(
        FIELD,
        ConfigType.STRING,
        "",
        importance=Importance.HIGH,
        documentation="The field containing the timestamp, or empty if the entire value is a timestamp",
    )
    .define(
        TARGET_TYPE,
        ConfigType.STRING,
        validator=ValidString.in_(TYPE_STRING, TYPE_UNIX, TYPE_DATE, TYPE_TIME, TYPE_TIMESTAMP),
        importance=Importance.HIGH,
        documentation="The desired timestamp representation: string, unix, Date, Time, or Timestamp",
    )
    .define(
        FORMAT,
        ConfigType.STRING,
        "",
        importance=Importance.MEDIUM,
        documentation="A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when "
        "type=string or used to parse the input if the input is a string.",
    )
    .define(
        UNIX_PRECISION,
        ConfigType.STRING,
        MILLIS,
        validator=ValidString.in_(NANOS, MICROS, MILLIS, SECONDS),
        importance=Importance.LOW,
        documentation="The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or "
        "nanoseconds. Used to generate the output when type=unix or used to parse the input if the input is a "
        "Long.Note: This SMT will cause precision loss during conversions from, and to, values with "
        "sub-millisecond components.",
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

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_DAY_MS = 86_400_000
_PER_MILLI = {SECONDS: (1000, 1), MILLIS: (1, 1), MICROS: (1, 1000), NANOS: (1, 1_000_000)}


def _div_toward_zero(a: int, b: int) -> int:
    """Java's long division (TimeUnit conversions truncate toward zero)."""
    q = abs(a) // b
    return q if a >= 0 else -q


def _moment(millis: int) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(milliseconds=millis)


def timestamp_type_of(schema: Schema) -> str:
    """Kafka's timestampTypeFromSchema."""
    if schema.name == Timestamp.LOGICAL_NAME:
        return TYPE_TIMESTAMP
    if schema.name == Date.LOGICAL_NAME:
        return TYPE_DATE
    if schema.name == Time.LOGICAL_NAME:
        return TYPE_TIME
    if schema.type is Type.STRING:
        return TYPE_STRING
    if schema.type is Type.INT64:
        return TYPE_UNIX
    raise ConnectException(f"Schema {schema!r} does not correspond to a known timestamp type format")


def _inferred_type(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return TYPE_TIMESTAMP
    if isinstance(value, datetime.date):
        return TYPE_DATE
    if isinstance(value, datetime.time):
        return TYPE_TIME
    if isinstance(value, int) and not isinstance(value, bool):
        return TYPE_UNIX
    if isinstance(value, str):
        return TYPE_STRING
    raise DataException(f"TimestampConverter does not support {class_name(value)} objects as timestamps")


def type_schema(target: str, optional: bool) -> Schema:
    """The schema of a converted value (Kafka's TimestampTranslator.typeSchema)."""
    return {
        TYPE_STRING: (Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
        TYPE_UNIX: (Schema.INT64_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA),
        TYPE_DATE: (Date.SCHEMA, OPTIONAL_DATE_SCHEMA),
        TYPE_TIME: (Time.SCHEMA, OPTIONAL_TIME_SCHEMA),
        TYPE_TIMESTAMP: (Timestamp.SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA),
    }[target][1 if optional else 0]


class TimestampConverter(OperatingSide, Transformation[R], ABC):
    """The key/value (or its `field`) is converted to `target.type`; its source type comes from the
    schema, or schemaless from the Python value. Nulls stay null (the schema still changes)."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._field = config.get_string(FIELD) or ""
        self._target = config.get_string(TARGET_TYPE) or ""
        self._precision = config.get_string(UNIX_PRECISION) or MILLIS
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))
        pattern = config.get_string(FORMAT) or ""
        if self._target == TYPE_STRING and not pattern.strip():
            raise ConfigException(
                f"TimestampConverter requires format option to be specified when using string timestamps; set "
                f"{FORMAT} to a java.text.SimpleDateFormat pattern",
                FORMAT,
            )
        self._format: JavaDateFormat | None = None
        if pattern.strip():
            try:
                self._format = JavaDateFormat(pattern)
            except ValueError as e:
                raise ConfigException(
                    f"Invalid value {pattern} for configuration {FORMAT}: TimestampConverter requires a "
                    f"SimpleDateFormat-compatible pattern for string timestamps ({e})",
                    FORMAT,
                    pattern,
                ) from None
        self._cache = SchemaUpdateCache(16)

    # -- conversions ---------------------------------------------------------------------------
    def _to_millis(self, value: Any, source: str) -> int:
        if source == TYPE_STRING:
            if not isinstance(value, str):
                raise DataException(f"Expected string timestamp to be a String, but found {class_name(value)}")
            if self._format is None:
                raise DataException(
                    f"Could not parse timestamp: value ({value}) needs a pattern; set {FORMAT} "
                    "to a java.text.SimpleDateFormat pattern"
                )
            try:
                return self._format.parse(value)
            except ValueError:
                raise DataException(
                    f"Could not parse timestamp: value ({value}) does not match pattern ({self._format.pattern})"
                ) from None
        if source == TYPE_UNIX:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataException(f"Expected Unix timestamp to be a Long, but found {class_name(value)}")
            multiply, divide = _PER_MILLI[self._precision]
            return _div_toward_zero(value * multiply, divide)
        if source == TYPE_TIMESTAMP:
            if not isinstance(value, datetime.datetime):
                raise DataException(f"Expected Timestamp to be a datetime.datetime, but found {class_name(value)}")
            return Timestamp.from_logical(Timestamp.SCHEMA, value)
        if source == TYPE_DATE:
            if not isinstance(value, datetime.date) or isinstance(value, datetime.datetime):
                raise DataException(f"Expected Date to be a datetime.date, but found {class_name(value)}")
            return Date.from_logical(Date.SCHEMA, value) * _DAY_MS
        if source == TYPE_TIME:
            if not isinstance(value, datetime.time):
                raise DataException(f"Expected Time to be a datetime.time, but found {class_name(value)}")
            return Time.from_logical(Time.SCHEMA, value)
        raise ConnectException("Unsupported timestamp type: " + source)

    def _from_millis(self, millis: int) -> Any:
        if self._target == TYPE_STRING:
            assert self._format is not None
            return self._format.format(millis)
        if self._target == TYPE_UNIX:
            divide, multiply = _PER_MILLI[self._precision]
            return _div_toward_zero(millis, divide) * multiply
        moment = _moment(millis)
        if self._target == TYPE_DATE:
            return moment.date()
        if self._target == TYPE_TIME:
            return moment.time()
        return moment

    def convert(self, value: Any, source: str | None = None) -> Any:
        """`value` (of type `source`, or inferred from the value) in the target representation."""
        if value is None:
            return None
        return self._from_millis(self._to_millis(value, source or _inferred_type(value)))

    # -- records ------------------------------------------------------------------------------
    def apply(self, record: R) -> R | None:
        schema = self.operating_schema(record)
        raw = self.operating_value(record)
        if schema is None:
            if raw is None or not self._field:
                return self.new_record(record, None, self.convert(raw))
            updated = dict(require_map(raw, PURPOSE))
            updated[self._field] = self.convert(updated.get(self._field))
            return self.new_record(record, None, updated)
        if not self._field:
            return self.new_record(
                record, type_schema(self._target, schema.optional), self.convert(raw, timestamp_type_of(schema))
            )
        struct = None if raw is None else require_struct(raw, PURPOSE)
        updated_schema = self._updated_schema(schema)
        if struct is None:
            return self.new_record(record, updated_schema, None)
        out = Struct(updated_schema)
        for field in struct.schema.fields:
            value = struct.get(field) if self._replace_null_with_default else struct.get_without_default(field.name)
            if field.name == self._field:
                value = self.convert(value, timestamp_type_of(field.schema))
            put_present(out, field.name, value)
        return self.new_record(record, updated_schema, out)

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._cache.get(schema)
        if cached is not None:
            return cached
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if field.name == self._field:
                builder.field(field.name, type_schema(self._target, field.schema.optional))
            else:
                builder.field(field.name, field.schema)
        if schema.optional:
            builder.optional()
        # A struct-level default is not carried over: it would have to be a Struct of the very
        # schema being built (Kafka builds it on the unfinished SchemaBuilder).
        updated = builder.build()
        self._cache.put(schema, updated)
        return updated

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._cache = SchemaUpdateCache(16)


class TimestampConverterKey(KeySide, TimestampConverter[R]):
    """org.apache.kafka.connect.transforms.TimestampConverter$Key"""


class TimestampConverterValue(ValueSide, TimestampConverter[R]):
    """org.apache.kafka.connect.transforms.TimestampConverter$Value"""

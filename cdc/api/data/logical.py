"""Kafka Connect's logical types: Decimal, Date, Time and Timestamp.

Each is a named physical schema; `from_logical` gives the physical value the converters
write and `to_logical` turns it back.
"""

from __future__ import annotations

import datetime
import decimal

from cdc.api.data.schema import Schema, SchemaBuilder, Type
from cdc.api.errors import DataException

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_DATE = datetime.date(1970, 1, 1)


class Decimal:
    """Kafka Connect's Decimal: a `decimal.Decimal` of fixed scale, written as BYTES (unscaled, big-endian).

    The scale is the schema's `scale` parameter; values must carry exactly that scale.
    """

    LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD = "scale"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        """A builder for a Decimal schema of `scale` (add `.optional()` for nullable columns)."""
        return SchemaBuilder.bytes().name(Decimal.LOGICAL_NAME).parameter(Decimal.SCALE_FIELD, str(scale)).version(1)

    @staticmethod
    def schema(scale: int) -> Schema:
        """A required Decimal schema of `scale`."""
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        """The scale a Decimal schema declares; DataException if it has none."""
        try:
            return int((schema.parameters or {})[Decimal.SCALE_FIELD])
        except (KeyError, ValueError) as e:
            raise DataException("Invalid Decimal schema: scale parameter not found.") from e

    @staticmethod
    def from_logical(schema: Schema, value: decimal.Decimal) -> bytes:
        """Unscaled value as big-endian two's complement, minimal length (Java BigInteger)."""
        scale = Decimal.scale(schema)
        exponent = value.as_tuple().exponent
        if not isinstance(exponent, int) or -exponent != scale:
            raise DataException(
                f"Decimal value {value} has scale {-exponent if isinstance(exponent, int) else exponent}"
                f" but the schema requires scale {scale}; quantize it first"
            )
        # Exact digit arithmetic: Decimal.scaleb would round to the 28-digit context. Decimal → int
        # converts in binary; int(str) refuses over 4,300 digits (PostgreSQL numerics reach 131,072).
        sign, digits, _ = value.as_tuple()
        unscaled = int(decimal.Decimal((sign, digits, 0)))
        length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
        return unscaled.to_bytes(length, "big", signed=True)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> decimal.Decimal:
        """The `decimal.Decimal` that the unscaled bytes `value` hold at the schema's scale."""
        unscaled = int.from_bytes(value, "big", signed=True)
        sign, digits, _ = decimal.Decimal(unscaled).as_tuple()  # no str(int): see from_logical
        return decimal.Decimal((sign, digits, -Decimal.scale(schema)))


class Date:
    """Kafka Connect's Date: a `datetime.date`, written as INT32 days since 1970-01-01."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Date"

    @staticmethod
    def builder() -> SchemaBuilder:
        """A builder for a Date schema (`Date.SCHEMA` is the required one)."""
        return SchemaBuilder.int32().name(Date.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: datetime.date) -> int:
        """Days since the Unix epoch."""
        if isinstance(value, datetime.datetime):
            raise DataException("Connect Date expects a datetime.date without a time part")
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.date:
        """The date `value` days after 1970-01-01 (negative: before)."""
        return _EPOCH_DATE + datetime.timedelta(days=value)


class Time:
    """Kafka Connect's Time: a `datetime.time`, written as INT32 milliseconds since midnight."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Time"

    @staticmethod
    def builder() -> SchemaBuilder:
        """A builder for a Time schema (`Time.SCHEMA` is the required one)."""
        return SchemaBuilder.int32().name(Time.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: datetime.time) -> int:
        """Milliseconds since midnight (sub-millisecond precision is dropped, as in Kafka)."""
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.time:
        """The time of day `value` milliseconds after midnight; DataException outside one day."""
        if not 0 <= value < 86_400_000:
            raise DataException("Time values must be milliseconds within one day, got " + str(value))
        ms = value
        return datetime.time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)


class Timestamp:
    """Kafka Connect's Timestamp: a `datetime.datetime`, written as INT64 milliseconds since the epoch (UTC)."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"

    @staticmethod
    def builder() -> SchemaBuilder:
        """A builder for a Timestamp schema (`Timestamp.SCHEMA` is the required one)."""
        return SchemaBuilder.int64().name(Timestamp.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: datetime.datetime) -> int:
        """Milliseconds since the epoch; a naive datetime is taken as UTC."""
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.datetime:
        """The UTC datetime `value` milliseconds after the epoch."""
        return _EPOCH + datetime.timedelta(milliseconds=value)


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()

LOGICAL_TYPES = {
    Decimal.LOGICAL_NAME: Decimal,
    Date.LOGICAL_NAME: Date,
    Time.LOGICAL_NAME: Time,
    Timestamp.LOGICAL_NAME: Timestamp,
}


def is_logical(schema: Schema | None) -> bool:
    """True when `schema` is one of Kafka Connect's four logical types (values are decimal/date/time/datetime)."""
    return schema is not None and schema.name in LOGICAL_TYPES and schema.type is not Type.STRUCT

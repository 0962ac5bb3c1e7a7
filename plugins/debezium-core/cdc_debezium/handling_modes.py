"""The type-handling knobs every relational Debezium connector accepts."""

from __future__ import annotations

from enum import Enum


class _Mode(Enum):
    @classmethod
    def values(cls) -> list[str]:
        return [m.value for m in cls]

    @classmethod
    def parse(cls, value: str) -> _Mode:
        for m in cls:
            if m.value == value.lower():
                return m
        raise ValueError(f"{value!r} is not one of {', '.join(cls.values())}")


class DecimalHandlingMode(_Mode):
    """`decimal.handling.mode`: precise = Connect Decimal (bytes), double, or string."""

    PRECISE = "precise"
    DOUBLE = "double"
    STRING = "string"


class TimePrecisionMode(_Mode):
    """`time.precision.mode`."""

    ADAPTIVE_TIME_MICROSECONDS = "adaptive_time_microseconds"
    ADAPTIVE = "adaptive"
    CONNECT = "connect"
    ISOSTRING = "isostring"


class BigIntUnsignedHandlingMode(_Mode):
    """`bigint.unsigned.handling.mode`: long (overflows above 2^63-1, as Debezium) or precise."""

    LONG = "long"
    PRECISE = "precise"


class BinaryHandlingMode(_Mode):
    """`binary.handling.mode`."""

    BYTES = "bytes"
    BASE64 = "base64"
    BASE64_URL_SAFE = "base64-url-safe"
    HEX = "hex"

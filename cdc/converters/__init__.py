"""Converters between Connect data and bytes, with Kafka Connect's formats and class names."""

from cdc.converters.bytearray import ByteArrayConverter
from cdc.converters.header import SimpleHeaderConverter
from cdc.converters.json import JsonConverter, JsonConverterConfig
from cdc.converters.string import StringConverter

__all__ = [
    "ByteArrayConverter",
    "JsonConverter",
    "JsonConverterConfig",
    "SimpleHeaderConverter",
    "StringConverter",
]

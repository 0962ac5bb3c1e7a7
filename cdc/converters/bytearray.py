"""Kafka's ByteArrayConverter: raw bytes in, raw bytes out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.config import ConfigDef
from cdc.api.data import SchemaAndValue
from cdc.api.data.schema import Schema, Type
from cdc.api.errors import DataException
from cdc.api.header import Headers
from cdc.api.storage import Converter, HeaderConverter

__all__ = ["ByteArrayConverter"]


class ByteArrayConverter(Converter, HeaderConverter):
    """`org.apache.kafka.connect.converters.ByteArrayConverter`, also a header converter."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        pass  # nothing to configure, as in Kafka

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataException("Invalid schema type for ByteArrayConverter: " + schema.type.name)
        if value is None:
            return None
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataException(f"ByteArrayConverter is not compatible with objects of type {type(value)}")
        return value if type(value) is bytes else bytes(value)

    def to_connect_data(self, topic: str, value: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        return SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, value)

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

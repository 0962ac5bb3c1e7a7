"""Kafka's default header converter, SimpleHeaderConverter."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cdc.api.config import ConfigDef
from cdc.api.data import SchemaAndValue
from cdc.api.data.schema import Schema
from cdc.api.storage import HeaderConverter
from cdc.converters._values import convert_to_string, parse_string

__all__ = ["SimpleHeaderConverter"]

log = logging.getLogger(__name__)


class SimpleHeaderConverter(HeaderConverter):
    """`org.apache.kafka.connect.storage.SimpleHeaderConverter`.

    Writes a header as its `Values.convertToString` form in UTF-8 (strings raw, other
    values in Kafka's literal syntax) and reads it back with `Values.parseString`, which
    infers booleans, the smallest integer type, floats, decimals, dates/times, arrays and
    maps, and otherwise keeps the string. No schema travels with the bytes.
    """

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass  # nothing to configure, as in Kafka

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        text = convert_to_string(schema, value)
        assert text is not None
        # Java's getBytes(UTF_8) writes '?' for a lone surrogate.
        return text.encode("utf-8", "replace")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        try:
            return parse_string(bytes(value).decode("utf-8", "replace"))
        except Exception:
            # Kafka's fallback: keep the raw bytes rather than fail the record.
            log.warning(
                "Failed to deserialize value for header '%s' on topic '%s', so using byte array",
                header_key,
                topic,
                exc_info=True,
            )
            return SchemaAndValue(Schema.BYTES_SCHEMA, bytes(value))

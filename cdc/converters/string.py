"""Kafka's StringConverter: values as their string form in a configurable charset."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import Any

from cdc.api.config import ConfigDef, ConfigType, Importance, ValidString, Width
from cdc.api.data import SchemaAndValue
from cdc.api.data.schema import Schema
from cdc.api.errors import ConfigException, DataException
from cdc.api.header import Headers
from cdc.api.storage import Converter, HeaderConverter
from cdc.converters._values import java_to_string

__all__ = ["StringConverter", "StringConverterConfig"]


class StringConverterConfig:
    TYPE_CONFIG = "converter.type"
    ENCODING_CONFIG = "converter.encoding"
    ENCODING_DEFAULT = "UTF-8"

    @staticmethod
    def config_def() -> ConfigDef:
        d = ConfigDef()
        d.define(
            StringConverterConfig.TYPE_CONFIG,
            ConfigType.STRING,
            validator=ValidString.in_("key", "value", "header"),
            importance=Importance.LOW,
            documentation="How this converter will be used.",
        )
        d.define(
            StringConverterConfig.ENCODING_CONFIG,
            ConfigType.STRING,
            StringConverterConfig.ENCODING_DEFAULT,
            importance=Importance.HIGH,
            documentation="The name of the Java character set to use for encoding strings as byte arrays.",
            group="Converter",
            order_in_group=0,
            width=Width.MEDIUM,
            display_name="Character encoding",
        )
        return d


_CONFIG_DEF = StringConverterConfig.config_def()


class _Charset:
    """A Java charset name mapped to Python codecs.

    Java's "UTF-16" writes big-endian with a byte-order mark and "UTF-32" big-endian
    without one, where Python's codecs of those names use the machine's byte order.
    """

    def __init__(self, name: str) -> None:
        try:
            self.codec = codecs.lookup(name).name
        except LookupError as e:
            raise ConfigException(f"Unsupported encoding {name}", StringConverterConfig.ENCODING_CONFIG, name) from e

    def encode(self, text: str) -> bytes:
        # Java's String.getBytes replaces what the charset cannot represent with '?'.
        if self.codec == "utf-16":
            return codecs.BOM_UTF16_BE + text.encode("utf-16-be", "replace")
        if self.codec == "utf-32":
            return text.encode("utf-32-be", "replace")
        return text.encode(self.codec, "replace")

    def decode(self, data: bytes) -> str:
        # new String(bytes, charset) substitutes U+FFFD for malformed input.
        if self.codec == "utf-16" and data[:2] not in (codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE):
            return data.decode("utf-16-be", "replace")
        if self.codec == "utf-32" and data[:4] not in (codecs.BOM_UTF32_BE, codecs.BOM_UTF32_LE):
            return data.decode("utf-32-be", "replace")
        return data.decode(self.codec, "replace")


class StringConverter(Converter, HeaderConverter):
    """`org.apache.kafka.connect.storage.StringConverter`, also a header converter.

    Writing uses Java's `toString()` form (`true`, `1.0E10`, `[a, b]`, `{k=v}`,
    `Struct{…}`), so keys written here match keys written by a Java worker. Bytes are
    passed through unchanged (Java would print a useless `[B@…` identity string).
    Reading always yields OPTIONAL_STRING_SCHEMA.
    """

    def __init__(self) -> None:
        self.configure({}, False)

    def config(self) -> ConfigDef:
        return _CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        conf = dict(configs)
        if is_key is not None:
            conf[StringConverterConfig.TYPE_CONFIG] = "key" if is_key else "value"
        parsed = _CONFIG_DEF.parse(conf)
        side = "key" if parsed[StringConverterConfig.TYPE_CONFIG] == "key" else "value"
        encoding = parsed[StringConverterConfig.ENCODING_CONFIG]
        # Kafka hands the configs to StringSerializer/Deserializer, where the
        # key./value.-prefixed encodings win over the converter's own setting.
        self._out = _Charset(str(conf.get(f"{side}.serializer.encoding") or encoding))
        self._in = _Charset(str(conf.get(f"{side}.deserializer.encoding") or encoding))

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        try:
            return self._out.encode(java_to_string(value, schema))
        except Exception as e:
            raise DataException(f"Failed to serialize to a string: {e}") from e

    def to_connect_data(self, topic: str, value: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
        try:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, self._in.decode(bytes(value)))
        except Exception as e:
            raise DataException(f"Failed to deserialize string: {e}") from e

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

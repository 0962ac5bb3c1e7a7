"""Kafka Connect's JsonConverter: byte-identical `{"schema":…,"payload":…}` records.

Same configs as `org.apache.kafka.connect.json.JsonConverterConfig`: `schemas.enable`,
`schemas.cache.size`, `decimal.format`, `replace.null.with.default`, `converter.type`.

Hot-path design: everything that depends only on the schema is done once per schema and
kept in an LRU of `schemas.cache.size` entries (Kafka caches the schema JSON the same
way). Per record, writing is "cached envelope prefix + payload + `}`"; reading recognises
the schema text of the previous record without parsing it again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal as _BigDecimal
from typing import Any

from cdc.api.config import ConfigDef, ConfigType, Importance, ValidString, Width
from cdc.api.data import SchemaAndValue
from cdc.api.data.logical import Decimal
from cdc.api.data.schema import Schema
from cdc.api.errors import DataException
from cdc.api.header import Headers
from cdc.api.storage import Converter, HeaderConverter
from cdc.converters import _json_decode, _json_encode, _json_schema
from cdc.converters._javafmt import jackson_fixup
from cdc.converters.lru import LRU

__all__ = ["JsonConverter", "JsonConverterConfig"]

ENVELOPE_ADVICE = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional'
    " fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter"
    " configuration."
)
_SCHEMA_PREFIX = '{"schema":'
_PAYLOAD_KEY = ',"payload":'
_SCHEMALESS_PREFIX = b'{"schema":null,"payload":'
_DECIMAL_NAME = Decimal.LOGICAL_NAME
_WS = " \t\n\r"


class JsonConverterConfig:
    """Names and definition of the converter's configs (Kafka's JsonConverterConfig)."""

    TYPE_CONFIG = "converter.type"
    SCHEMAS_ENABLE_CONFIG = "schemas.enable"
    SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
    DECIMAL_FORMAT_CONFIG = "decimal.format"
    REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"

    @staticmethod
    def config_def() -> ConfigDef:
        d = ConfigDef()
        d.define(
            JsonConverterConfig.TYPE_CONFIG,
            ConfigType.STRING,
            validator=ValidString.in_("key", "value", "header"),
            importance=Importance.LOW,
            documentation="How this converter will be used.",
        )
        d.define(
            JsonConverterConfig.SCHEMAS_ENABLE_CONFIG,
            ConfigType.BOOLEAN,
            True,
            importance=Importance.HIGH,
            documentation="Include schemas within each of the serialized values and keys.",
            group="Schemas",
            order_in_group=0,
            width=Width.MEDIUM,
            display_name="Enable Schemas",
        )
        d.define(
            JsonConverterConfig.SCHEMAS_CACHE_SIZE_CONFIG,
            ConfigType.INT,
            1000,
            importance=Importance.HIGH,
            documentation="The maximum number of schemas that can be cached in this converter instance.",
            group="Schemas",
            order_in_group=1,
            width=Width.MEDIUM,
            display_name="Schema Cache Size",
        )
        d.define(
            JsonConverterConfig.DECIMAL_FORMAT_CONFIG,
            ConfigType.STRING,
            "BASE64",
            validator=ValidString.in_ignore_case("BASE64", "NUMERIC"),
            importance=Importance.LOW,
            documentation="Controls which format this converter will serialize decimals in. This value is case"
            " insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
            group="Serialization",
            order_in_group=0,
            width=Width.MEDIUM,
            display_name="Decimal Format",
        )
        d.define(
            JsonConverterConfig.REPLACE_NULL_WITH_DEFAULT_CONFIG,
            ConfigType.BOOLEAN,
            True,
            importance=Importance.LOW,
            documentation="Whether to replace fields that have a default value and that are null to the default"
            " value. When set to true, the default value is used, otherwise null is used.",
            group="Serialization",
            order_in_group=1,
            width=Width.MEDIUM,
            display_name="Replace null with default",
        )
        return d


_CONFIG_DEF = JsonConverterConfig.config_def()


class _Writer:
    """Everything needed to write records of one schema: the envelope prefix and encoder."""

    __slots__ = ("encode", "prefix", "prefix_bytes")

    def __init__(self, schema: Schema, opts: _json_encode.EncodeOptions) -> None:
        self.encode = _json_encode.compile_text(schema, opts)
        schema_json = _json_schema.render(schema, lambda s, v: _json_encode.compile_text(s, opts)(v))
        self.prefix = jackson_fixup(_SCHEMA_PREFIX + schema_json + _PAYLOAD_KEY)
        # UTF-8 of the prefix, made by the first batch that needs it (a schema text that cannot be
        # encoded then fails the batch, and the record's own conversion reports it).
        self.prefix_bytes: bytes | None = None


@dataclass(frozen=True, slots=True)
class _ReadEntry:
    schema: Schema | None
    read: _json_decode.Reader
    decoder: json.JSONDecoder


def _identity(node: Any) -> Any:
    return node


def _reject_constant(name: str) -> Any:
    # Jackson refuses NaN/Infinity literals unless ALLOW_NON_NUMERIC_NUMBERS is on.
    raise ValueError(f"Non-standard token '{name}'")


class JsonConverter(Converter, HeaderConverter):
    """`org.apache.kafka.connect.json.JsonConverter`; also usable as a header converter."""

    def __init__(self) -> None:
        self._float_decoder = json.JSONDecoder(parse_constant=_reject_constant)
        # USE_BIG_DECIMAL_FOR_FLOATS: NUMERIC decimals keep every written digit.
        self._decimal_decoder = json.JSONDecoder(parse_float=_BigDecimal, parse_constant=_reject_constant)
        self.configure({}, False)

    # -- configuration ----------------------------------------------------------------------
    def config(self) -> ConfigDef:
        return _CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """`is_key` as for a Converter; leave it out (header use) to read `converter.type`."""
        conf = dict(configs)
        if is_key is not None:
            conf[JsonConverterConfig.TYPE_CONFIG] = "key" if is_key else "value"
        parsed = _CONFIG_DEF.parse(conf)
        self.converter_type: str = parsed[JsonConverterConfig.TYPE_CONFIG]
        self.schemas_enabled: bool = parsed[JsonConverterConfig.SCHEMAS_ENABLE_CONFIG]
        self.replace_null_with_default: bool = parsed[JsonConverterConfig.REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self.decimal_format: str = parsed[JsonConverterConfig.DECIMAL_FORMAT_CONFIG].upper()
        cache_size: int = parsed[JsonConverterConfig.SCHEMAS_CACHE_SIZE_CONFIG]
        self._opts = _json_encode.EncodeOptions(
            numeric_decimals=self.decimal_format == "NUMERIC",
            replace_null_with_default=self.replace_null_with_default,
        )
        self._writers: LRU[Schema, _Writer] = LRU(cache_size)
        self._readers: LRU[str, _ReadEntry] = LRU(cache_size)
        self._last_read: tuple[str, _ReadEntry] | None = None

    # -- Connect data to bytes --------------------------------------------------------------
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None:
        if schema is None and value is None:
            return None  # a tombstone stays a tombstone
        if schema is None:
            payload = jackson_fixup(_json_encode.encode_schemaless(value))
            text = '{"schema":null,"payload":' + payload + "}" if self.schemas_enabled else payload
        else:
            writer = self._writer(schema)
            payload = jackson_fixup(writer.encode(value))  # the cached prefix is already fixed up
            text = writer.prefix + payload + "}" if self.schemas_enabled else payload
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise DataException(
                f"Converting Kafka Connect data to byte[] failed due to serialization error of topic {topic}: {e}"
            ) from e

    def from_connect_batch(
        self, topics: Sequence[str], schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        """`from_connect_data` of each (topic, schema, value), byte for byte, in a few C calls per batch.

        Only the payloads are written per record; they are joined with newlines (which JSON
        output never holds unescaped), fixed up for Jackson and encoded once, split again, and
        each joined to its schema's cached UTF-8 prefix. Consecutive records of one schema
        object reuse its writer without a cache lookup. Any error propagates: the caller then
        converts the batch record by record (`from_connect_data`) to name the failing record.
        """
        if type(self).from_connect_data is not JsonConverter.from_connect_data:
            return [self.from_connect_data(t, s, v) for t, s, v in zip(topics, schemas, values, strict=True)]
        if len(topics) != len(values):
            raise ValueError(f"from_connect_batch: {len(topics)} topics for {len(values)} values")
        enveloped = self.schemas_enabled
        payloads: list[str] = []
        add = payloads.append
        prefixes: list[bytes | None] = []  # per record; None: a tombstone
        mark = prefixes.append
        last: Schema | None = None
        encode: _json_encode.TextEncoder = _json_encode.encode_schemaless
        prefix = b""
        schemaless_prefix = _SCHEMALESS_PREFIX if enveloped else b""
        for schema, value in zip(schemas, values, strict=True):
            if schema is None:
                if value is None:
                    mark(None)
                    continue
                add(_json_encode.encode_schemaless(value))
                mark(schemaless_prefix)
                continue
            if schema is not last:
                writer = self._writer(schema)
                if enveloped and writer.prefix_bytes is None:
                    writer.prefix_bytes = writer.prefix.encode("utf-8")
                encode, prefix, last = writer.encode, writer.prefix_bytes if enveloped else b"", schema
            add(encode(value))
            mark(prefix)
        text = "\n".join(payloads)
        bodies = iter(jackson_fixup(text).encode("utf-8").split(b"\n"))
        if not enveloped:
            return [None if p is None else next(bodies) for p in prefixes]
        return [None if p is None else p + next(bodies) + b"}" for p in prefixes]

    def _writer(self, schema: Schema) -> _Writer:
        writer = self._writers.get(schema)
        if writer is None:
            writer = _Writer(schema, self._opts)
            self._writers.put(schema, writer)
        return writer

    def as_json_schema(self, schema: Schema | None) -> str:
        """The schema's JSON text as it appears in the envelope (`null` for None)."""
        if schema is None:
            return "null"
        return self._writer(schema).prefix[len(_SCHEMA_PREFIX) : -len(_PAYLOAD_KEY)]

    # -- bytes to Connect data --------------------------------------------------------------
    def to_connect_data(self, topic: str, value: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)  # tombstone
        try:
            raw = bytes(value)
            # JSON from Kafka is UTF-8; only sniff (BOM, UTF-16/32) when it may be something else.
            utf8 = len(raw) > 1 and raw[0] == 0x7B and raw[1] != 0
            text = raw.decode("utf-8" if utf8 else json.detect_encoding(raw))
        except (UnicodeDecodeError, LookupError) as e:
            raise self._read_error(topic, e) from e
        if self.schemas_enabled and text.startswith(_SCHEMA_PREFIX):
            fast = self._read_envelope_fast(text)
            if fast is not None:
                return fast
        decimals = _DECIMAL_NAME in text
        node = self._parse(topic, text, decimals)
        if self.schemas_enabled:
            if type(node) is not dict or len(node) != 2 or "schema" not in node or "payload" not in node:
                raise DataException(ENVELOPE_ADVICE)
            entry = self._entry_for_node(node["schema"])
            return SchemaAndValue(entry.schema, entry.read(node["payload"]))
        if not decimals:
            return SchemaAndValue(None, node)  # the float decoder already produced the Python values
        return SchemaAndValue(None, _json_decode.read_schemaless(node))

    def _parse(self, topic: str, text: str, decimals: bool) -> Any:
        decoder = self._decimal_decoder if decimals else self._float_decoder
        start = len(text) - len(text.lstrip(_WS))
        if start == len(text):
            return None  # Jackson reads empty input as a missing node
        try:
            # Like Jackson's readTree, content after the first value is ignored.
            return decoder.raw_decode(text, start)[0]
        except (ValueError, RecursionError) as e:
            raise self._read_error(topic, e) from e

    @staticmethod
    def _read_error(topic: str, cause: Exception) -> DataException:
        # Apache's JsonConverter leaves the topic out; Confluent's converters name it, which
        # is what an operator reading a dead-letter log needs.
        return DataException(
            f"Converting byte[] to Kafka Connect data failed due to serialization error of topic {topic}: {cause}"
        )

    def _read_envelope_fast(self, text: str) -> SchemaAndValue | None:
        """`{"schema":S,"payload":P}` written compactly (by Kafka or us), else None.

        When S is the previous record's schema text it is recognised with one
        `startswith` and never parsed again.
        """
        start = len(_SCHEMA_PREFIX)
        last = self._last_read
        if last is not None and text.startswith(last[0], start):
            end = start + len(last[0])
            entry = last[1]
        else:
            try:
                node, end = self._decimal_decoder.raw_decode(text, start)
            except (ValueError, RecursionError):
                return None
            schema_text = text[start:end]
            cached = self._readers.get(schema_text)
            entry = cached if cached is not None else self._new_entry(node, schema_text)
            self._last_read = (schema_text, entry)
        if not text.startswith(_PAYLOAD_KEY, end):
            return None
        try:
            payload, end = entry.decoder.raw_decode(text, end + len(_PAYLOAD_KEY))
        except (ValueError, RecursionError):
            return None
        while end < len(text) and text[end] in _WS:
            end += 1
        if not text.startswith("}", end):
            return None
        return SchemaAndValue(entry.schema, entry.read(payload))

    def _entry_for_node(self, node: Any) -> _ReadEntry:
        key = json.dumps(node, sort_keys=True, default=str)
        entry = self._readers.get(key)
        return entry if entry is not None else self._new_entry(node, key)

    def _new_entry(self, node: Any, key: str) -> _ReadEntry:
        schema = self.as_connect_schema(node)
        if schema is None:
            # Schemaless payload read with plain floats: the parsed JSON already is the value.
            entry = _ReadEntry(None, _identity, self._float_decoder)
        else:
            decimals = _json_schema.contains_logical(schema, _DECIMAL_NAME)
            entry = _ReadEntry(
                schema,
                _json_decode.compile_reader(schema, self.replace_null_with_default),
                self._decimal_decoder if decimals else self._float_decoder,
            )
        self._readers.put(key, entry)
        return entry

    def as_connect_schema(self, node: Any) -> Schema | None:
        """A parsed schema JSON object to a Schema (Kafka's asConnectSchema)."""
        return _json_schema.parse(node, lambda s, n: _json_decode.compile_reader(s, self.replace_null_with_default)(n))

    # -- HeaderConverter ----------------------------------------------------------------------
    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

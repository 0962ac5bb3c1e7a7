"""`io.confluent.connect.avro.AvroConverter`: Connect data as Avro in Confluent's wire format.

Each record is magic byte 0, the writer schema's registry id (4 bytes, big-endian) and the Avro
binary body; a null value stays null and registers nothing. Keys and values alike. Writing
registers the record's schema under the subject its strategy names (TopicNameStrategy:
`<topic>-key`/`<topic>-value`) when `auto.register.schemas` (the default), else looks it up, or
with `use.latest.version` uses the subject's latest schema; ids are cached per subject and schema,
so the registry is asked once per schema version. Reading fetches the writer schema by id once
and caches its Connect schema and reader. As Confluent's, a top-level schema without
`connect.version` reads back with the registry's version of it.

Encoding is fastavro's compiled writer (`write_data`, the encoder of `schemaless_writer`, with each
schema parsed once: avro_data.append_body) and `schemaless_reader`; the registry client is
confluent-kafka's (registry.py), or one injected with `use_registry`. A source task's poll batch
goes through `from_connect_batch` (the bytes of `from_connect_data`, record for record).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import fastavro

from cdc.api.config import ConfigDef
from cdc.api.data import Schema, SchemaAndValue
from cdc.api.errors import ConfigException, ConnectException, DataException, RetriableException
from cdc.api.header import Headers
from cdc.api.storage import Converter
from cdc.converters.avro import config as cfg
from cdc.converters.avro.avro_data import (
    LRU,
    WRITE_OPTIONS,
    AvroData,
    Body,
    ReadSchema,
    WriteSchema,
    append_body,
    parse_codec,
)
from cdc.converters.avro.registry import (
    SchemaRegistry,
    SubjectNameStrategy,
    client_config,
    new_client,
    subject_name_strategy,
)

__all__ = ["MAGIC_BYTE", "AvroConverter"]

MAGIC_BYTE = 0
_HEADER = struct.Struct(">bI")
NO_REGISTRY = (
    "AvroConverter: schema.registry.url is not set; set it to your Schema Registry"
    " (or use transport=embedded, whose worker serves one)"
)


_WRITE_ERRORS = (DataException, ValueError, TypeError, AttributeError, KeyError, OverflowError)


def _write_error(e: Exception, topic: str) -> DataException:
    """The one-line error of a record the writer or fastavro refused, naming the topic (both write paths)."""
    if isinstance(e, DataException):
        return DataException(f"{e} (topic {topic})")
    return DataException(
        f"AvroConverter: cannot write the record for topic {topic} with its Avro schema:"
        f" {type(e).__name__}: {one_line(str(e))}"
    )


class AvroConverter(Converter):
    """Confluent's AvroConverter (`io.confluent.connect.avro.AvroConverter`)."""

    def __init__(self) -> None:
        self._registry: SchemaRegistry | None = None
        self._injected = False
        self.configure({}, False)

    # -- configuration ----------------------------------------------------------------------------
    def config(self) -> ConfigDef:
        return cfg.CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        conf = dict(configs)
        if cfg.BASIC_AUTH_USER_INFO not in conf and cfg.BASIC_AUTH_USER_INFO_OLD in conf:
            conf[cfg.BASIC_AUTH_USER_INFO] = conf[cfg.BASIC_AUTH_USER_INFO_OLD]
        if cfg.SCHEMAS_CACHE_CONFIG not in conf and cfg.SCHEMAS_CACHE_SIZE in conf:
            conf[cfg.SCHEMAS_CACHE_CONFIG] = conf[cfg.SCHEMAS_CACHE_SIZE]
        p = cfg.CONFIG_DEF.parse(conf)
        self.is_key = is_key
        self.urls: list[str] = [u.strip() for u in p[cfg.SCHEMA_REGISTRY_URL] if u.strip()]
        self.auto_register: bool = p[cfg.AUTO_REGISTER_SCHEMAS]
        self.use_latest_version: bool = p[cfg.USE_LATEST_VERSION]
        self.latest_compatibility_strict: bool = p[cfg.LATEST_COMPATIBILITY_STRICT]
        self.normalize: bool = p[cfg.NORMALIZE_SCHEMAS]
        strategy_key = cfg.KEY_SUBJECT_NAME_STRATEGY if is_key else cfg.VALUE_SUBJECT_NAME_STRATEGY
        self.subject_strategy: SubjectNameStrategy = subject_name_strategy(p[strategy_key], strategy_key)
        cache_size: int = p[cfg.SCHEMAS_CACHE_CONFIG]
        self.avro_data = AvroData(
            connect_meta_data=p[cfg.CONNECT_META_DATA],
            enhanced_schema_support=p[cfg.ENHANCED_AVRO_SCHEMA_SUPPORT],
            scrub_invalid_names=p[cfg.SCRUB_INVALID_NAMES],
            allow_optional_map_keys=p[cfg.ALLOW_OPTIONAL_MAP_KEYS],
            schema_name_adjustment_mode=p[cfg.SCHEMA_NAME_ADJUSTMENT_MODE].lower(),
            field_name_adjustment_mode=p[cfg.FIELD_NAME_ADJUSTMENT_MODE].lower(),
            cache_size=cache_size,
        )
        user_info = p[cfg.BASIC_AUTH_USER_INFO]
        self._client_conf: dict[str, Any] | None = None
        if self.urls:
            self._client_conf = client_config(
                self.urls,
                p[cfg.BASIC_AUTH_CREDENTIALS_SOURCE],
                user_info.value() if user_info is not None else None,
                conf,
            )
        if not self._injected:
            self._registry = None
        self._cache_size = cache_size
        self._ids: LRU[tuple[str, str], int] = LRU(cache_size)  # (subject, schema text) -> id
        self._readers: LRU[int, ReadSchema] = LRU(cache_size)  # schema id -> reader
        self._latest_bodies: LRU[tuple[str, str], Body] = LRU(cache_size)  # (writer, latest text) -> body

    def use_registry(self, registry: SchemaRegistry) -> None:
        """Use `registry` instead of a client for schema.registry.url (the embedded transport's own)."""
        self._registry = registry
        self._injected = True
        self._ids = LRU(self._cache_size)  # ids of another registry mean nothing here
        self._readers = LRU(self._cache_size)

    @property
    def registry_location(self) -> str:
        """Where the registry is, for messages: `at <urls>`, or `in process` (an injected one)."""
        return f"at {','.join(self.urls)}" if self.urls and not self._injected else "in process"

    def registry(self) -> SchemaRegistry:
        """The registry client: the injected one, or confluent-kafka's for schema.registry.url."""
        if self._registry is None:
            if self._client_conf is None:
                raise ConfigException(NO_REGISTRY, cfg.SCHEMA_REGISTRY_URL)
            self._registry = new_client(self._client_conf)
        return self._registry

    # -- Connect data to bytes --------------------------------------------------------------------
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None:
        if value is None:
            return None  # a tombstone stays one; nothing is registered
        if schema is None:
            raise DataException(
                f"AvroConverter: the record for topic {topic} has no schema (a schemaless"
                f" {type(value).__name__}); Avro needs a Connect schema, use JsonConverter with"
                " schemas.enable=false for schemaless data"
            )
        writer = self.avro_data.writer(schema)
        subject = self.subject_strategy(topic, self.is_key, writer.full_name)
        schema_id, body = self._writer_id(subject, writer, topic)
        try:
            datum = writer.write(value)
            buf = bytearray(_HEADER.pack(MAGIC_BYTE, schema_id))
            append_body(buf, datum, body.schema, body.named, "", WRITE_OPTIONS)
        except _WRITE_ERRORS as e:
            raise _write_error(e, topic) from None
        return bytes(buf)

    def from_connect_batch(
        self, topics: Sequence[str], schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        """`from_connect_data` of each (topic, schema, value), byte for byte, for a whole poll batch.

        The runtime's fast record path (cdc.runtime.source_task, as for JsonConverter's). The writer,
        subject, registry id, header and parsed schema are resolved once per run of one schema
        object and topic (a connector hands the same schema object to a table's records; the
        registry is asked once per subject and schema, then the id is cached), and every record is
        appended by fastavro's compiled encoder (avro_data.append_body) to one bytearray that is
        sliced at the end, instead of a buffer and a copy per record. Memory is the batch's bytes
        twice at most (the buffer and the records). Errors are from_connect_data's; the runtime
        then converts the batch record by record to name the failing record.
        """
        if type(self).from_connect_data is not AvroConverter.from_connect_data:
            return [self.from_connect_data(t, s, v) for t, s, v in zip(topics, schemas, values, strict=True)]
        if not len(topics) == len(schemas) == len(values):
            raise ValueError(
                f"from_connect_batch: {len(topics)} topics, {len(schemas)} schemas and {len(values)} values"
            )
        buf = bytearray()
        append = append_body
        options = WRITE_OPTIONS
        ends: list[int] = []  # per record, where its bytes end; -1: null
        mark = ends.append
        last_schema: Schema | None = None
        last_topic: str | None = None
        header = b""
        body_schema: Any = None
        named: dict[str, Any] = {}
        write: Any = None
        for topic, schema, value in zip(topics, schemas, values, strict=True):
            if value is None:
                mark(-1)
                continue
            if schema is not last_schema or topic != last_topic:
                if schema is None:
                    self.from_connect_data(topic, schema, value)  # raises its DataException
                writer = self.avro_data.writer(schema)  # type: ignore[arg-type]
                subject = self.subject_strategy(topic, self.is_key, writer.full_name)
                schema_id, body = self._writer_id(subject, writer, topic)
                header, write = _HEADER.pack(MAGIC_BYTE, schema_id), writer.write
                body_schema, named = body.schema, body.named
                last_schema, last_topic = schema, topic
            buf += header
            try:
                append(buf, write(value), body_schema, named, "", options)
            except _WRITE_ERRORS as e:
                raise _write_error(e, topic) from None
            mark(len(buf))
        data = memoryview(buf)
        result: list[bytes | None] = []
        add = result.append
        start = 0
        for end in ends:
            if end < 0:
                add(None)
            else:
                add(bytes(data[start:end]))
                start = end
        data.release()
        return result

    def _writer_id(self, subject: str, writer: WriteSchema, topic: str) -> tuple[int, Body]:
        """The registry id of the writer's schema under `subject` (cached), and the Body to encode with."""
        key = (subject, writer.text)
        cached = self._ids.get(key)
        if cached is not None:
            return cached, writer.body
        from confluent_kafka.schema_registry import Schema as RegistrySchema

        registry = self.registry()
        registry_schema = RegistrySchema(writer.text, "AVRO")
        body = writer.body
        if self.auto_register:
            schema_id = self._call(
                lambda: registry.register_schema(subject, registry_schema, normalize_schemas=self.normalize),
                f"registering the schema of subject {subject}",
                topic,
            )
        elif self.use_latest_version:
            latest = self._call(
                lambda: registry.get_latest_version(subject), f"reading the latest schema of subject {subject}", topic
            )
            # the latest version is the client's to cache (cache.latest.ttl.sec); what it means for
            # this writer (the same schema, or another to encode with) is parsed once per text
            key = (writer.text, latest.schema.schema_str)
            latest_body = self._latest_bodies.get(key)
            if latest_body is None:
                avro = _json(latest.schema.schema_str)
                latest_body = writer.body if avro == writer.avro else Body.of(parse_codec(avro))
                self._latest_bodies.put(key, latest_body)
            if latest_body is not writer.body:
                if self.latest_compatibility_strict:
                    raise DataException(
                        f"AvroConverter: the latest schema of subject {subject} (version {latest.version}, id"
                        f" {latest.schema_id}) is not the record's schema (topic {topic}); register it, or set"
                        " latest.compatibility.strict=false to write with the latest schema"
                    )
                body = latest_body
            return int(latest.schema_id), body  # not cached: the latest version may change
        else:
            found = self._call(
                lambda: registry.lookup_schema(subject, registry_schema, normalize_schemas=self.normalize),
                f"looking up the schema under subject {subject} (auto.register.schemas=false)",
                topic,
            )
            schema_id = found.schema_id
        schema_id = int(schema_id)
        self._ids.put(key, schema_id)
        return schema_id, body

    # -- bytes to Connect data --------------------------------------------------------------------
    def to_connect_data(self, topic: str, value: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        data = bytes(value)
        if len(data) < 5 or data[0] != MAGIC_BYTE:
            raise DataException(
                f"AvroConverter: the record in topic {topic} is not Confluent Avro (expected magic byte 0x00 and a"
                f" 4-byte schema id; first bytes: {data[:16].hex(' ') or 'none'}, {len(data)} bytes in all);"
                " the topic holds other data or its converter is not AvroConverter"
            )
        schema_id = _HEADER.unpack_from(data)[1]
        reader = self._reader(schema_id, topic)
        try:
            body = io.BytesIO(data)
            body.seek(_HEADER.size)
            datum = fastavro.schemaless_reader(body, reader.codec, None)
        except Exception as e:
            raise DataException(
                f"AvroConverter: cannot read the record in topic {topic} with schema id {schema_id}:"
                f" {type(e).__name__}: {one_line(str(e))}"
            ) from None
        return SchemaAndValue(reader.schema, datum if reader.read is None else reader.read(datum))

    def _reader(self, schema_id: int, topic: str) -> ReadSchema:
        cached = self._readers.get(schema_id)
        if cached is not None:
            return cached
        registry = self.registry()
        found = self._call(lambda: registry.get_schema(schema_id), f"reading schema id {schema_id}", topic, schema_id)
        if getattr(found, "schema_type", "AVRO") not in (None, "AVRO"):
            raise DataException(
                f"AvroConverter: schema id {schema_id} (topic {topic}) is a {found.schema_type} schema, not Avro"
            )
        version = self._version(topic, schema_id, found)
        reader = self.avro_data.reader(found.schema_str, version)
        self._readers.put(schema_id, reader)
        return reader

    def _version(self, topic: str, schema_id: int, found: Any) -> int | None:
        """The registry's version of the writer schema under this topic's subject (Confluent's
        deserializer passes it to AvroData for schemas without connect.version); None if unknown."""
        avro = _json(found.schema_str)
        if isinstance(avro, dict) and "connect.version" in avro:
            return None
        try:
            subject = self.subject_strategy(topic, self.is_key, _record_full_name(avro))
            registered = self.registry().lookup_schema(subject, found)
        except Exception:  # no such subject (another strategy wrote it): Confluent's version is null too
            return None
        return int(registered.version) if registered.version is not None else None

    # -- registry calls ---------------------------------------------------------------------------
    def _call(self, fn: Any, what: str, topic: str, schema_id: int | None = None) -> Any:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            return fn()
        except SchemaRegistryError as e:
            status = getattr(e, "http_status_code", None)
            code = getattr(e, "error_code", None)
            message = getattr(e, "error_message", str(e))
            if schema_id is not None and (status == 404 or code in (40403, 40400, 40401)):
                raise DataException(
                    f"AvroConverter: schema id {schema_id} is unknown to the Schema Registry"
                    f" {self.registry_location} (record in topic {topic}); the record was written against another"
                    " registry, or its schema was deleted"
                ) from None
            raise DataException(
                f"AvroConverter: the Schema Registry {self.registry_location} refused {what} (topic {topic}):"
                f" {one_line(str(message))} (HTTP {status}, error code {code})"
            ) from None
        except ConnectException:
            raise
        except Exception as e:
            if _is_network_error(e):
                raise RetriableException(
                    f"AvroConverter: the Schema Registry {self.registry_location} is unreachable while {what}"
                    f" (topic {topic}): {type(e).__name__}: {one_line(str(e))}; check schema.registry.url and"
                    " that the registry is running"
                ) from None
            raise DataException(
                f"AvroConverter: {what} failed with the Schema Registry {self.registry_location} (topic {topic}):"
                f" {type(e).__name__}: {one_line(str(e))}"
            ) from None


def _is_network_error(e: BaseException) -> bool:
    module = type(e).__module__
    return isinstance(e, OSError | TimeoutError) or module.startswith(("httpx", "httpcore", "httpx2", "httpcore2"))


def _json(text: str) -> Any:
    return json.loads(text)


def _record_full_name(avro: Any) -> str | None:
    if not isinstance(avro, dict) or avro.get("type") not in ("record", "enum", "fixed"):
        return None
    name = str(avro["name"])
    namespace = avro.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


def one_line(text: str) -> str:
    """`text` on one line (registry and network errors may span several)."""
    return " ".join(text.split())

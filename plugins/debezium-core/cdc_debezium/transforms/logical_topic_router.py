"""io.debezium.transforms.ByLogicalTableRouter and ToLogicalTopicRouter: many physical tables, one topic.

Debezium's ToLogicalTopicRouter (and the deprecated ByLogicalTableRouter, which only changes the
key field's default name): a record whose topic fully matches `topic.regex` goes to
`topic.replacement` (Java `$1`/`${name}` syntax). Its key (when there is one) is renamed
`<new topic>.Key` and, with `key.enforce.uniqueness` (the default), gets a string field
`key.field.name` holding the source topic, or `key.field.regex`/`key.field.replacement` applied
to it, so rows of different shards with the same primary key stay apart. Change event envelopes
get `<new topic>.Envelope` and `.Value` schema names; tombstones, heartbeats and schema change
events keep their value and only move topic (and key). A replacement that yields an empty topic
leaves the record as it is.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from cdc.api import (
    NO_DEFAULT_VALUE,
    AbstractConfig,
    ConfigDef,
    ConfigType,
    Importance,
    Range,
    Schema,
    SchemaBuilder,
    Struct,
    Transformation,
    Width,
)
from cdc_debezium.transforms._java_regex import compile_java, translate_replacement
from cdc_debezium.transforms._support import (
    SCHEMA_NAME_MODES,
    R,
    SchemaCache,
    adjust_schema_name,
    config_error,
    is_envelope,
    require_struct,
    struct_values,
)

log = logging.getLogger(__name__)

TOPIC_REGEX = "topic.regex"
TOPIC_REPLACEMENT = "topic.replacement"
KEY_ENFORCE_UNIQUENESS = "key.enforce.uniqueness"
KEY_FIELD_REGEX = "key.field.regex"
KEY_FIELD_NAME = "key.field.name"
KEY_FIELD_REPLACEMENT = "key.field.replacement"
SCHEMA_NAME_ADJUSTMENT_MODE = "schema.name.adjustment.mode"
LOGICAL_DESTINATION_CACHE_SIZE = "logical.destination.cache.size"
LOGICAL_TABLE_CACHE_SIZE = "logical.table.cache.size"


def _required_string(name: str, value: Any) -> None:
    if value is None or not str(value).strip():
        raise config_error(name, value, "must be set to a non-empty value")


def _mode(name: str, value: Any) -> None:
    if str(value).strip().lower() not in SCHEMA_NAME_MODES:
        raise config_error(name, value, f"must be one of {', '.join(SCHEMA_NAME_MODES)}")


def _config_def(key_field_default: str, legacy_cache_key: bool) -> ConfigDef:
    definition = (
        ConfigDef()
        .define(TOPIC_REGEX, ConfigType.STRING, NO_DEFAULT_VALUE, _required_string, Importance.LOW,
                "The regex (Java syntax) that extracts the logical destination from the topic name.", width=Width.LONG)
        .define(TOPIC_REPLACEMENT, ConfigType.STRING, NO_DEFAULT_VALUE, _required_string, Importance.LOW,
                "The replacement ($1, ${name}) that makes the new topic name from topic.regex.", width=Width.LONG)
        .define(KEY_ENFORCE_UNIQUENESS, ConfigType.BOOLEAN, True, importance=Importance.LOW,
                documentation="Add a key field naming the source topic, so rows of different physical tables "
                "with the same key stay apart.")
        .define(KEY_FIELD_REGEX, ConfigType.STRING, None, importance=Importance.LOW,
                documentation="The regex that extracts the source identifier from the topic name.")
        .define(KEY_FIELD_NAME, ConfigType.STRING, key_field_default, importance=Importance.LOW,
                documentation="The key field added when key.enforce.uniqueness is true.")
        .define(KEY_FIELD_REPLACEMENT, ConfigType.STRING, None, importance=Importance.LOW,
                documentation="The replacement that makes the source identifier from key.field.regex.")
        .define(SCHEMA_NAME_ADJUSTMENT_MODE, ConfigType.STRING, "none", _mode, Importance.LOW,
                "How the new key, value and envelope schema names are adjusted: none, avro or avro_unicode.")
        .define(LOGICAL_DESTINATION_CACHE_SIZE, ConfigType.INT, 16, Range.at_least(1), Importance.LOW,
                "Entries kept in the schema and topic caches.")
    )  # fmt: skip
    if legacy_cache_key:
        definition.define(
            LOGICAL_TABLE_CACHE_SIZE,
            ConfigType.INT,
            None,
            importance=Importance.LOW,
            documentation=f"Deprecated name of {LOGICAL_DESTINATION_CACHE_SIZE}.",
        )
    return definition


class _Rewriter:
    """One `regex` + `replacement` pair, applied when the regex matches the whole topic (cached)."""

    def __init__(self, regex_key: str, regex: str, replacement_key: str, replacement: str, cache_size: int) -> None:
        self.pattern = compile_java(regex_key, regex)
        self.template = translate_replacement(replacement_key, replacement)
        # an unknown group fails now, not on the first record
        self._check_groups(regex_key, replacement_key, replacement)
        self.cache: dict[str, str | None] = {}
        self.cache_size = cache_size

    def _check_groups(self, regex_key: str, replacement_key: str, replacement: str) -> None:
        known = set(self.pattern.groupindex) | {str(i) for i in range(self.pattern.groups + 1)}
        for ref in re.findall(r"\\g<([^>]*)>", self.template):
            if ref not in known:
                raise config_error(replacement_key, replacement, f"no group {ref} in {regex_key}")

    def __call__(self, topic: str) -> str | None:
        if topic in self.cache:
            return self.cache[topic]
        match = self.pattern.fullmatch(topic)
        result = match.expand(self.template) if match else None
        if len(self.cache) >= self.cache_size:
            self.cache.pop(next(iter(self.cache)))
        self.cache[topic] = result
        return result


class ToLogicalTopicRouter(Transformation[R]):
    """io.debezium.transforms.ToLogicalTopicRouter"""

    KEY_FIELD_DEFAULT = "__dbz__sourceIdentifier"
    LEGACY = False

    def configure(self, configs: Mapping[str, Any]) -> None:
        props = dict(configs)
        if self.LEGACY and LOGICAL_TABLE_CACHE_SIZE in props and LOGICAL_DESTINATION_CACHE_SIZE not in props:
            props[LOGICAL_DESTINATION_CACHE_SIZE] = props[LOGICAL_TABLE_CACHE_SIZE]
        self._def = _config_def(self.KEY_FIELD_DEFAULT, self.LEGACY)
        config = AbstractConfig(self._def, props)
        cache_size = int(config.get_int(LOGICAL_DESTINATION_CACHE_SIZE) or 16)
        self._topic = _Rewriter(
            TOPIC_REGEX,
            str(config.get_string(TOPIC_REGEX)),
            TOPIC_REPLACEMENT,
            str(config.get_string(TOPIC_REPLACEMENT)),
            cache_size,
        )
        key_regex = (config.get_string(KEY_FIELD_REGEX) or "").strip()
        self._key_rewriter: _Rewriter | None = None
        if key_regex:
            replacement = (config.get_string(KEY_FIELD_REPLACEMENT) or "").strip()
            if not replacement:
                raise config_error(
                    KEY_FIELD_REPLACEMENT,
                    None,
                    f"{KEY_FIELD_REPLACEMENT} must be non-empty if {KEY_FIELD_REGEX} is set",
                )
            self._key_rewriter = _Rewriter(KEY_FIELD_REGEX, key_regex, KEY_FIELD_REPLACEMENT, replacement, cache_size)
        self._key_field = str(config.get_string(KEY_FIELD_NAME))
        self._unique = bool(config.get_boolean(KEY_ENFORCE_UNIQUENESS))
        self._mode = str(config.get_string(SCHEMA_NAME_ADJUSTMENT_MODE)).strip().lower()
        self._schemas = SchemaCache(cache_size * 3)

    def config(self) -> ConfigDef:
        return _config_def(self.KEY_FIELD_DEFAULT, self.LEGACY)

    def apply(self, record: R) -> R | None:
        old_topic = record.topic
        new_topic = self._topic(old_topic)
        if new_topic is None:
            return record
        if not new_topic:
            log.warning("Routing regex returned an empty topic name, propagating original record")
            return record
        key_schema: Schema | None = None
        key: Struct | None = None
        if record.key is not None:
            old_key = require_struct(record.key, "Updating schema")
            key_schema = self._key_schema(old_key.schema, new_topic)
            values = struct_values(old_key, [f.name for f in old_key.schema.fields])
            if self._unique:
                values.append(self._source_identifier(old_topic))
            key = Struct.from_values(key_schema, values)
        if record.value is None or not is_envelope(record.value_schema):
            return record.new_record(
                new_topic, record.kafka_partition, key_schema, key, record.value_schema, record.value, record.timestamp
            )
        envelope = require_struct(record.value, "Updating schema")
        envelope_schema = self._envelope_schema(envelope.schema, new_topic)
        row_field = envelope_schema.field("before") or envelope_schema.field("after")
        values = []
        for field in envelope.schema.fields:
            value = envelope.get_without_default(field.name)
            if row_field is not None and field.name in ("before", "after") and isinstance(value, Struct):
                value = Struct.from_values(
                    row_field.schema, struct_values(value, [f.name for f in value.schema.fields])
                )
            values.append(value)
        return record.new_record(
            new_topic,
            record.kafka_partition,
            key_schema,
            key,
            envelope_schema,
            Struct.from_values(envelope_schema, values),
            record.timestamp,
        )

    def _source_identifier(self, old_topic: str) -> str:
        if self._key_rewriter is None:
            return old_topic
        found = self._key_rewriter(old_topic)
        return old_topic if found is None else found

    def _key_schema(self, old: Schema, new_topic: str) -> Schema:
        cache_key = ("key", old, new_topic)
        cached = self._schemas.get(cache_key)
        if cached is not None:
            return cached
        builder = _copy_excluding_name(old, copy_fields=True)
        builder.name(adjust_schema_name(new_topic + ".Key", self._mode))
        if self._unique:
            builder.field(self._key_field, Schema.STRING_SCHEMA)
        return self._schemas.put(cache_key, builder.build())

    def _envelope_schema(self, old: Schema, new_topic: str) -> Schema:
        cache_key = ("envelope", old, new_topic)
        cached = self._schemas.get(cache_key)
        if cached is not None:
            return cached
        row_field = old.field("before") or old.field("after")
        row_schema = None
        if row_field is not None and row_field.schema.fields:
            row_builder = _copy_excluding_name(row_field.schema, copy_fields=True)
            row_schema = row_builder.name(adjust_schema_name(new_topic + ".Value", self._mode)).build()
        builder = _copy_excluding_name(old, copy_fields=False)
        for field in old.fields:
            use = row_schema if row_schema is not None and field.name in ("before", "after") else field.schema
            builder.field(field.name, use)
        builder.name(adjust_schema_name(new_topic + ".Envelope", self._mode))
        return self._schemas.put(cache_key, builder.build())


def _copy_excluding_name(source: Schema, copy_fields: bool) -> SchemaBuilder:
    builder = SchemaBuilder.struct()
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters is not None:
        builder.parameters(source.parameters)
    if source.optional:
        builder.optional()
    if copy_fields:
        for field in source.fields:
            builder.field(field.name, field.schema)
    return builder


class ByLogicalTableRouter(ToLogicalTopicRouter[R]):
    """io.debezium.transforms.ByLogicalTableRouter (deprecated in Debezium for ToLogicalTopicRouter)

    The key field defaults to `__dbz__physicalTableIdentifier`, and `logical.table.cache.size` is
    read when `logical.destination.cache.size` is not set.
    """

    KEY_FIELD_DEFAULT = "__dbz__physicalTableIdentifier"
    LEGACY = True

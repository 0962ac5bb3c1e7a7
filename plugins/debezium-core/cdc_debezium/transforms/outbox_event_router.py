"""io.debezium.transforms.outbox.EventRouter: outbox-table inserts become domain events on per-aggregate topics.

Debezium's EventRouter (EventRouterDelegate, EventRouterConfigDefinition):

- an insert (or snapshot read) into the outbox table becomes one record: topic from
  `route.by.field` (default `aggregatetype`) through `route.topic.regex` / `route.topic.replacement`
  (default `outbox.event.${routedByValue}`), key from `table.field.event.key` (default
  `aggregateid`), header `id` from `table.field.event.id`, timestamp from the envelope's `ts_ms`
  or `table.field.event.timestamp`;
- the value is the payload column alone, or, when `table.fields.additional.placement` puts
  columns in the `envelope`, a struct with `payload` and those columns; `header` placement adds
  headers and `partition` sets the Kafka partition;
- `table.expand.json.payload` turns a JSON string payload into a struct with an inferred schema;
- an empty or null payload becomes a tombstone when `route.tombstone.on.empty.payload` is true;
- deletes and tombstones are dropped, updates are dropped per `table.op.invalid.behavior` (warn,
  error, or fatal: fail); non-envelope records (heartbeats, schema changes) pass through;
- truncate events are dropped (Debezium would fail on them; the outbox table is often truncated).
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    DataException,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Transformation,
)
from cdc.api import Timestamp as ConnectTimestamp
from cdc_debezium import logical_types
from cdc_debezium.transforms._java_regex import JavaRouter
from cdc_debezium.transforms._json_payload import JsonSchemaData
from cdc_debezium.transforms._support import R, SchemaCache, config_error, is_envelope, require_struct

log = logging.getLogger(__name__)

FIELD_EVENT_ID = "table.field.event.id"
FIELD_EVENT_KEY = "table.field.event.key"
FIELD_EVENT_TYPE = "table.field.event.type"
FIELD_EVENT_TIMESTAMP = "table.field.event.timestamp"
FIELD_PAYLOAD = "table.field.event.payload"
FIELDS_ADDITIONAL_PLACEMENT = "table.fields.additional.placement"
FIELDS_ADDITIONAL_MISSING = "table.field.additional.missing"
FIELD_SCHEMA_VERSION = "table.field.event.schema.version"
ROUTE_BY_FIELD = "route.by.field"
ROUTE_TOPIC_REGEX = "route.topic.regex"
ROUTE_TOPIC_REPLACEMENT = "route.topic.replacement"
ROUTE_TOMBSTONE_ON_EMPTY_PAYLOAD = "route.tombstone.on.empty.payload"
OPERATION_INVALID_BEHAVIOR = "table.op.invalid.behavior"
EXPAND_JSON_PAYLOAD = "table.expand.json.payload"
JSON_PAYLOAD_NULL_BEHAVIOR = "table.json.payload.null.behavior"
JSON_PAYLOAD_EMPTY_ARRAY_BEHAVIOR = "table.json.payload.empty.array.behavior"

ENVELOPE_PAYLOAD = "payload"
PLACEMENTS = ("header", "envelope", "partition")

_TIMESTAMP_DIVISORS = {
    logical_types.TIMESTAMP: 1,
    logical_types.MICRO_TIMESTAMP: 1_000,
    logical_types.NANO_TIMESTAMP: 1_000_000,
}
_KAFKA_TIMESTAMP = ConnectTimestamp.LOGICAL_NAME


def _one_of(*allowed: str) -> Any:
    def check(name: str, value: Any) -> None:
        if value is not None and str(value).strip().lower() not in allowed:
            raise config_error(name, value, f"must be one of {', '.join(allowed)}")

    return check


def _placements(name: str, value: Any) -> None:
    if value is None:
        return
    if not value:
        raise config_error(name, "", "list at least one COLUMN:PLACEMENT[:ALIAS], or remove the key")
    for entry in value:
        parts = entry.split(":")
        if len(parts) not in (2, 3) or not all(p.strip() for p in parts):
            raise config_error(name, value, f"{entry!r} is not COLUMN:PLACEMENT or COLUMN:PLACEMENT:ALIAS")
        if parts[1].strip().lower() not in PLACEMENTS:
            raise config_error(
                name, value, f"placement {parts[1]!r} of {entry!r} must be one of {', '.join(PLACEMENTS)}"
            )


CONFIG_DEF = (
    ConfigDef()
    .define(FIELD_EVENT_ID, ConfigType.STRING, "id", importance=Importance.LOW, group="Table",
            documentation="The column which contains the event ID within the outbox table")
    .define(FIELD_EVENT_KEY, ConfigType.STRING, "aggregateid", importance=Importance.LOW, group="Table",
            documentation="The column which contains the event key within the outbox table")
    .define(FIELD_EVENT_TYPE, ConfigType.STRING, "type", importance=Importance.LOW, group="Table",
            documentation="The column which contains the event type within the outbox table")
    .define(FIELD_PAYLOAD, ConfigType.STRING, "payload", importance=Importance.LOW, group="Table",
            documentation="The column which contains the event payload within the outbox table")
    .define(FIELD_EVENT_TIMESTAMP, ConfigType.STRING, None, group="Table",
            documentation="A column whose value overrides the record timestamp (else the event's ts_ms)")
    .define(FIELDS_ADDITIONAL_PLACEMENT, ConfigType.LIST, None, _placements, Importance.HIGH, group="Table",
            documentation="Extra columns for the event envelope, a header or the partition: "
            "id:header,field_name:envelope:alias,field_name:partition")
    .define(FIELDS_ADDITIONAL_MISSING, ConfigType.STRING, "error", _one_of("error", "ignore"), group="Table",
            documentation="An additional column missing from the event: error (the default) or ignore")
    .define(FIELD_SCHEMA_VERSION, ConfigType.STRING, None, importance=Importance.LOW, group="Table",
            documentation="The column which contains the event schema version within the outbox table")
    .define(OPERATION_INVALID_BEHAVIOR, ConfigType.STRING, "warn", _one_of("warn", "error", "fatal"),
            group="Table", documentation="An update of an outbox row: skip with a warning, skip with an error, "
            "or fail (fatal)")
    .define(EXPAND_JSON_PAYLOAD, ConfigType.BOOLEAN, False, group="Table",
            documentation="Expand a JSON string payload into a struct with an inferred schema")
    .define(JSON_PAYLOAD_NULL_BEHAVIOR, ConfigType.STRING, "ignore", _one_of("ignore", "optional_bytes"),
            group="Table", documentation="JSON nulls when expanding: ignore (leave the field out) or optional_bytes")
    .define(JSON_PAYLOAD_EMPTY_ARRAY_BEHAVIOR, ConfigType.STRING, "ignore", _one_of("ignore", "optional_string"),
            group="Table", documentation="Empty JSON arrays when expanding: ignore (leave the field out) or "
            "optional_string")
    .define(ROUTE_BY_FIELD, ConfigType.STRING, "aggregatetype", importance=Importance.HIGH, group="Router",
            documentation="The column whose value becomes part of the topic name")
    .define(ROUTE_TOPIC_REGEX, ConfigType.STRING, "(?<routedByValue>.*)", importance=Importance.LOW,
            group="Router", documentation="The regex applied to the route.by.field value (Java syntax)")
    .define(ROUTE_TOPIC_REPLACEMENT, ConfigType.STRING, "outbox.event.${routedByValue}", importance=Importance.HIGH,
            group="Router", documentation="The topic name; ${routedByValue} is the route.by.field value")
    .define(ROUTE_TOMBSTONE_ON_EMPTY_PAYLOAD, ConfigType.BOOLEAN, False, importance=Importance.HIGH, group="Router",
            documentation="Whether an empty or null payload becomes a tombstone")
)  # fmt: skip


@dataclass(frozen=True)
class AdditionalField:
    placement: str
    field: str
    alias: str

    @classmethod
    def parse(cls, entry: str) -> AdditionalField:
        parts = [p.strip() for p in entry.split(":")]
        return cls(parts[1].lower(), parts[0], parts[2] if len(parts) == 3 else parts[0])


class EventRouter(Transformation[R]):
    """io.debezium.transforms.outbox.EventRouter"""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._event_id = str(config.get_string(FIELD_EVENT_ID))
        self._event_key = config.get_string(FIELD_EVENT_KEY)
        self._payload = str(config.get_string(FIELD_PAYLOAD))
        self._event_timestamp = config.get_string(FIELD_EVENT_TIMESTAMP) or None
        self._schema_version = config.get_string(FIELD_SCHEMA_VERSION) or None
        self._route_by = str(config.get_string(ROUTE_BY_FIELD))
        self._router = JavaRouter(
            ROUTE_TOPIC_REGEX,
            str(config.get_string(ROUTE_TOPIC_REGEX)),
            ROUTE_TOPIC_REPLACEMENT,
            str(config.get_string(ROUTE_TOPIC_REPLACEMENT)),
        )
        self._tombstone_on_empty = bool(config.get_boolean(ROUTE_TOMBSTONE_ON_EMPTY_PAYLOAD))
        self._invalid_op = str(config.get_string(OPERATION_INVALID_BEHAVIOR)).strip().lower()
        self._additional = [AdditionalField.parse(e) for e in config.get_list(FIELDS_ADDITIONAL_PLACEMENT) or []]
        self._ignore_missing = str(config.get_string(FIELDS_ADDITIONAL_MISSING)).strip().lower() == "ignore"
        self._only_payload = not any(f.placement == "envelope" for f in self._additional)
        self._expand_json = bool(config.get_boolean(EXPAND_JSON_PAYLOAD))
        self._json = JsonSchemaData(
            str(config.get_string(JSON_PAYLOAD_NULL_BEHAVIOR)).strip().lower(),
            str(config.get_string(JSON_PAYLOAD_EMPTY_ARRAY_BEHAVIOR)).strip().lower(),
        )
        self._schemas = SchemaCache(10_000)

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def apply(self, record: R) -> R | None:
        if record.value is None:
            return None  # tombstones of the outbox table are not events
        if not is_envelope(record.value_schema):
            return record
        envelope = require_struct(record.value, "Detect Debezium Operation")
        op = envelope.get_without_default("op")
        if op == "d":
            return None
        if op == "u":
            self._unexpected_update(record)
            return None
        after = envelope.get_without_default("after")
        if after is None:
            log.debug("Outbox event router: %s event without an after row dropped", op)
            return None
        return self._route(record, envelope, require_struct(after, "Read Outbox Event"))

    def _route(self, record: R, envelope: Struct, event: Struct) -> R:
        event_schema = event.schema
        payload_field = event_schema.field(self._payload)
        if payload_field is None:
            raise ConnectException(f"Unable to find payload field {self._payload} in event; set {FIELD_PAYLOAD}")
        id_field = event_schema.field(self._event_id)
        if id_field is None:
            raise ConnectException(f"Unable to find event-id field {self._event_id} in event; set {FIELD_EVENT_ID}")
        timestamp = self._timestamp(envelope, event)
        payload_schema: Schema | None = payload_field.schema
        payload = event.get(self._payload)
        headers = record.headers.duplicate()
        headers.add("id", event.get(self._event_id), id_field.schema)
        if self._expand_json:
            payload_schema, payload = self._expanded(payload_schema, payload)

        routed_value = event.get_without_default(self._route_by)
        value_schema: Schema | None = None
        value: Any = None
        if not self._only_payload:
            value_schema = self._value_schema(payload_schema, event, routed_value)
            value = Struct(value_schema).put(ENVELOPE_PAYLOAD, payload)
        partition: int | None = None
        for extra in self._additional:
            field = event_schema.field(extra.field)
            if field is None:
                if self._ignore_missing:
                    continue
                raise ConnectException(
                    f"Unable to find field {extra.field} in event; fix {FIELDS_ADDITIONAL_PLACEMENT} or set "
                    f"{FIELDS_ADDITIONAL_MISSING}=ignore"
                )
            if extra.placement == "envelope":
                value.put(extra.alias, event.get(extra.field))
            elif extra.placement == "header":
                headers.add(extra.alias, event.get(extra.field), field.schema)
            else:
                partition = event.get(extra.field)

        empty = payload is None or (isinstance(payload, str) and _java_blank(payload))
        if empty and self._tombstone_on_empty:
            value_schema, value = None, None
        elif self._only_payload:
            value_schema, value = payload_schema, payload

        if routed_value is None:
            raise DataException(
                f"The outbox event has no value in {self._route_by} (set by {ROUTE_BY_FIELD}) to route by"
            )
        key_field = event_schema.field(self._event_key) if self._event_key else None
        key = event.get(self._event_key) if self._event_key else None  # a missing column raises DataException
        return record.new_record(
            self._router.route(str(routed_value)),
            partition,
            key_field.schema if key_field is not None else Schema.STRING_SCHEMA,
            key,
            value_schema,
            value,
            timestamp,
            headers,
        )

    def _unexpected_update(self, record: R) -> None:
        if self._invalid_op == "fatal":
            raise ConnectException(
                f"Unexpected update message received {record.key}, fail; outbox rows are only inserted "
                f"(set {OPERATION_INVALID_BEHAVIOR}=warn to skip updates)"
            )
        level = logging.ERROR if self._invalid_op == "error" else logging.WARNING
        log.log(level, "Unexpected update message received %s and ignored", record.key)

    def _timestamp(self, envelope: Struct, event: Struct) -> int | None:
        ts_ms = envelope.get_without_default("ts_ms") if envelope.schema.field("ts_ms") else None
        if self._event_timestamp is None:
            return ts_ms
        field = event.schema.field(self._event_timestamp)
        if field is None:
            raise ConnectException(f"Unable to find timestamp field {self._event_timestamp} in event")
        value = event.get_without_default(self._event_timestamp)
        if value is None:
            return ts_ms
        name = field.schema.name
        if name in _TIMESTAMP_DIVISORS:
            return int(value) // _TIMESTAMP_DIVISORS[name]
        if name == _KAFKA_TIMESTAMP and isinstance(value, datetime.datetime):
            aware = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
            return int(aware.timestamp() * 1000)
        raise ConnectException(
            f"Unsupported field type {name or field.schema.type.name} for event timestamp "
            f"({FIELD_EVENT_TIMESTAMP}); use a Timestamp, MicroTimestamp or NanoTimestamp column"
        )

    def _expanded(self, schema: Schema | None, payload: Any) -> tuple[Schema | None, Any]:
        if not isinstance(payload, str):
            if payload is not None:
                log.warning("Expand JSON payload is turned on but payload is not a string")
            return schema, payload
        try:
            if not payload.startswith(("{", "[")):
                raise ValueError(f"Unable to parse payload starting with {payload[:1]!r}")
            document = json.loads(payload)
            inferred = self._json.to_connect_schema(self._payload, document)
            if inferred is None:
                return schema, payload
            return inferred, self._json.to_connect_data(document, inferred)
        except (ValueError, DataException) as e:
            log.warning("JSON expansion failed: %s", e)
            return schema, payload

    def _value_schema(self, payload_schema: Schema | None, event: Struct, routed: Any) -> Schema:
        version = event.get_without_default(self._schema_version) if self._schema_version else None
        key = (payload_schema, event.schema, routed, version)
        cached = self._schemas.get(key)
        if cached is not None:
            return cached
        builder = SchemaBuilder.struct().name(_schema_name(event.schema.name, str(routed)))
        if version is not None:
            builder.version(int(version))
        builder.field(ENVELOPE_PAYLOAD, payload_schema or Schema.OPTIONAL_BYTES_SCHEMA)
        for extra in self._additional:
            if extra.placement != "envelope":
                continue
            field = event.schema.field(extra.field)
            if field is None:
                if self._ignore_missing:
                    continue
                raise ConnectException(
                    f"Unable to find field {extra.field} in event; fix {FIELDS_ADDITIONAL_PLACEMENT} or set "
                    f"{FIELDS_ADDITIONAL_MISSING}=ignore"
                )
            builder.field(extra.alias, field.schema)
        return self._schemas.put(key, builder.build())

    def close(self) -> None:
        self._schemas = SchemaCache(10_000)


def _java_blank(text: str) -> bool:
    """Debezium's `payload.toString().trim().isEmpty()`: Java's trim() strips only chars up to
    U+0020, so a no-break or ideographic space is content (Python's strip() would remove it)."""
    return all(c <= " " for c in text)


def _schema_name(original: str | None, routed: str) -> str:
    """`db.outbox.Value` routed by `User` is `db.outbox.User.Value` (EventRouterDelegate.getSchemaName)."""
    if original is None:
        return routed
    head, dot, tail = original.rpartition(".")
    return f"{head}.{routed}.{tail}" if dot else f"{routed}.{original}"

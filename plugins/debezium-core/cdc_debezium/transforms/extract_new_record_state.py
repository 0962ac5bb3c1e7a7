"""io.debezium.transforms.ExtractNewRecordState ("unwrap"): the envelope's `after` row as the record value.

Debezium's ExtractNewRecordState (with its AbstractExtractNewRecordState, DefaultDeleteHandlingStrategy
and, for the older keys, LegacyDeleteHandlingStrategy):

- create/update/read: the value becomes `after`; `rewrite` modes add `__deleted="false"`;
- delete: by `delete.tombstone.handling.mode` dropped, a null value (`tombstone`, the value schema
  kept, as Debezium does for the JDBC sink), `before` plus `__deleted="true"` (`rewrite*`), or a
  real tombstone (`delete-to-tombstone`);
- tombstones: kept only by `rewrite-with-tombstone` (or the legacy `drop.tombstones=false`);
- truncate and message events (neither before nor after) are dropped;
- anything that is not an envelope (schema change, heartbeat, transaction metadata, schemaless)
  passes through unchanged, headers untouched.

`add.fields` / `add.headers` copy envelope metadata (`op`, `ts_ms`, `source.*`, `transaction.*`; a
bare name other than op/ts_* /id/total_order/data_collection_order means `source.<name>`) under
`<prefix><name>` or `<prefix><struct>_<name>`, or `<prefix><new>` for `name:new`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    Headers,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Transformation,
    Width,
)
from cdc.api.data import Type
from cdc_debezium.transforms._support import (
    R,
    SchemaCache,
    config_error,
    copy_schema_basics,
    drop_struct_fields,
    is_envelope,
    optional_copy,
    require_struct,
    struct_values,
    with_headers,
    with_key,
    with_topic,
    with_value,
)

log = logging.getLogger(__name__)

HANDLE_TOMBSTONE_DELETES = "delete.tombstone.handling.mode"
DROP_TOMBSTONES = "drop.tombstones"
HANDLE_DELETES = "delete.handling.mode"
ROUTE_BY_FIELD = "route.by.field"
ADD_FIELDS = "add.fields"
ADD_FIELDS_PREFIX = "add.fields.prefix"
ADD_HEADERS = "add.headers"
ADD_HEADERS_PREFIX = "add.headers.prefix"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
DROP_FIELDS_HEADER = "drop.fields.header.name"
DROP_FIELDS_FROM_KEY = "drop.fields.from.key"
DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE = "drop.fields.keep.schema.compatible"

DELETED_FIELD = "__deleted"
METADATA_FIELD_PREFIX = "__"
MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
LEGACY_MODES = ("drop", "rewrite", "none")

# Unqualified add.fields names that do not live in `source` (AbstractExtractNewRecordState.determineStruct).
_TRANSACTION_KEYS = frozenset({"id", "total_order", "data_collection_order"})
_ENVELOPE_KEYS = frozenset({"op", "ts_ms", "ts_us", "ts_ns"})


def _one_of(allowed: tuple[str, ...]) -> Any:
    def check(name: str, value: Any) -> None:
        if value is not None and str(value).strip().lower() not in allowed:
            raise config_error(name, value, f"must be one of {', '.join(allowed)}")

    return check


CONFIG_DEF = (
    ConfigDef()
    .define(
        HANDLE_TOMBSTONE_DELETES,
        ConfigType.STRING,
        None,
        _one_of(MODES),
        Importance.MEDIUM,
        "How to handle delete records: drop (remove the delete event and its tombstone), tombstone (the "
        "default: leave only a tombstone), rewrite (the before row with __deleted=true, tombstones removed), "
        "rewrite-with-tombstone (rewrite, keeping tombstones), delete-to-tombstone (the delete becomes a "
        "tombstone, tombstones removed).",
        width=Width.MEDIUM,
    )
    .define(
        DROP_TOMBSTONES,
        ConfigType.BOOLEAN,
        None,
        importance=Importance.LOW,
        documentation="Deprecated (used only when delete.tombstone.handling.mode is unset; default true): "
        "drop tombstone records.",
    )
    .define(
        HANDLE_DELETES,
        ConfigType.STRING,
        None,
        _one_of(LEGACY_MODES),
        Importance.LOW,
        "Deprecated (used only when delete.tombstone.handling.mode is unset): none (pass deletes on as null "
        "values), drop (the default), rewrite (add __deleted).",
    )
    .define(
        ROUTE_BY_FIELD,
        ConfigType.STRING,
        "",
        importance=Importance.LOW,
        documentation="The row field whose value replaces the topic name (the before row's for deletes).",
        width=Width.LONG,
    )
    .define(
        ADD_FIELDS_PREFIX,
        ConfigType.STRING,
        METADATA_FIELD_PREFIX,
        importance=Importance.LOW,
        documentation="Adds this prefix to each field listed.",
    )
    .define(
        ADD_FIELDS,
        ConfigType.LIST,
        "",
        importance=Importance.LOW,
        documentation="Envelope fields to add to the value, prefixed with __ (or __<struct>_ when the struct is "
        "given): 'op,table,source.ts_ms' adds __op, __table and __source_ts_ms; 'field:NEW' names it __NEW.",
        width=Width.LONG,
    )
    .define(
        ADD_HEADERS_PREFIX,
        ConfigType.STRING,
        METADATA_FIELD_PREFIX,
        importance=Importance.LOW,
        documentation="Adds this prefix to each header.",
    )
    .define(
        ADD_HEADERS,
        ConfigType.LIST,
        "",
        importance=Importance.LOW,
        documentation="Envelope fields to add as headers, named as for add.fields.",
        width=Width.LONG,
    )
    .define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="When rewriting the record (rewrite modes), replace null field values by the column default.",
    )
    .define(
        DROP_FIELDS_HEADER,
        ConfigType.STRING,
        None,
        importance=Importance.LOW,
        documentation="The header holding a list of field names to remove from the event value.",
    )
    .define(
        DROP_FIELDS_FROM_KEY,
        ConfigType.BOOLEAN,
        False,
        importance=Importance.LOW,
        documentation="Also remove the fields named by drop.fields.header.name from the key.",
    )
    .define(
        DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="true: drop only the optional fields of those named (schemas stay compatible); false: "
        "drop every named field.",
    )
)


@dataclass(frozen=True)
class FieldReference:
    """One `add.fields`/`add.headers` entry (AbstractExtractNewRecordState.FieldReference)."""

    struct: str | None
    field: str
    new_field: str

    @classmethod
    def parse(cls, key: str, prefix: str, entry: str) -> FieldReference:
        parts = entry.split(":")
        if len(parts) > 2 or not parts[0] or (len(parts) == 2 and not parts[1]):
            raise config_error(key, entry, "expected FIELD, STRUCT.FIELD, or either followed by :NEW_NAME")
        splits = parts[0].split(".")
        if len(splits) > 2 or not all(splits):
            raise config_error(key, entry, "expected FIELD or STRUCT.FIELD (one dot at most)")
        field = splits[-1]
        struct = splits[0] if len(splits) == 2 else _struct_of(field)
        if len(parts) == 2:
            new_field = prefix + parts[1]
        else:
            new_field = prefix + (field if len(splits) == 1 else f"{struct}_{field}")
        return cls(struct, field, new_field)

    def _parent_schema(self, envelope: Schema) -> Schema | None:
        if self.struct is None:
            return envelope
        holder = envelope.field(self.struct)
        return holder.schema if holder is not None and holder.schema.type is Type.STRUCT else None

    def schema(self, envelope: Schema) -> Schema | None:
        """The optional schema of the field, looked up in its struct and then in the envelope itself."""
        parent = self._parent_schema(envelope)
        found = parent.field(self.field) if parent is not None else None
        if found is None:
            found = envelope.field(self.field)
        return optional_copy(found.schema) if found is not None else None

    def value(self, envelope: Struct) -> Any:
        parent: Any = envelope
        if self.struct is not None:
            parent = envelope.get_without_default(self.struct) if envelope.schema.field(self.struct) else None
            if parent is None:
                return None  # e.g. no transaction block during a snapshot
        if isinstance(parent, Struct) and parent.schema.field(self.field) is not None:
            return parent.get_without_default(self.field)
        return envelope.get_without_default(self.field) if envelope.schema.field(self.field) else None


def _struct_of(field: str) -> str | None:
    if field in _TRANSACTION_KEYS:
        return "transaction"
    if field in _ENVELOPE_KEYS:
        return None
    return "source"


@dataclass(frozen=True)
class _Strategy:
    """What happens to tombstones and deletes, and whether rows get `__deleted`."""

    keep_tombstones: bool
    on_delete: str  # drop | null | tombstone | rewrite
    rewrite: bool


_MODE_STRATEGIES = {
    "drop": _Strategy(False, "drop", False),
    "tombstone": _Strategy(False, "null", False),
    "rewrite": _Strategy(False, "rewrite", True),
    "rewrite-with-tombstone": _Strategy(True, "rewrite", True),
    "delete-to-tombstone": _Strategy(False, "tombstone", False),
}


def _strategy(config: AbstractConfig) -> _Strategy:
    mode = config.get_string(HANDLE_TOMBSTONE_DELETES)
    legacy_tombstones = config.get_boolean(DROP_TOMBSTONES)
    legacy_deletes = config.get_string(HANDLE_DELETES)
    if mode is not None and mode.strip():
        if legacy_tombstones is not None or legacy_deletes is not None:
            log.warning(
                "%s is set, so the deprecated %s and %s are ignored; remove them",
                HANDLE_TOMBSTONE_DELETES,
                DROP_TOMBSTONES,
                HANDLE_DELETES,
            )
        return _MODE_STRATEGIES[mode.strip().lower()]
    if legacy_tombstones is None and legacy_deletes is None:
        return _MODE_STRATEGIES["tombstone"]
    log.warning(
        "The delete handling configs %s and %s are deprecated; use %s instead",
        DROP_TOMBSTONES,
        HANDLE_DELETES,
        HANDLE_TOMBSTONE_DELETES,
    )
    deletes = (legacy_deletes or "drop").strip().lower()
    on_delete = {"drop": "drop", "none": "null", "rewrite": "rewrite"}[deletes]
    return _Strategy(legacy_tombstones is False, on_delete, deletes == "rewrite")


class ExtractNewRecordState(Transformation[R]):
    """io.debezium.transforms.ExtractNewRecordState"""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._strategy = _strategy(config)
        fields_prefix = config.get_string(ADD_FIELDS_PREFIX) or ""
        headers_prefix = config.get_string(ADD_HEADERS_PREFIX) or ""
        self._add_fields = [
            FieldReference.parse(ADD_FIELDS, fields_prefix, f) for f in config.get_list(ADD_FIELDS) or []
        ]
        self._add_headers = [
            FieldReference.parse(ADD_HEADERS, headers_prefix, f) for f in config.get_list(ADD_HEADERS) or []
        ]
        route = config.get_string(ROUTE_BY_FIELD) or ""
        self._route_by_field = route or None
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))
        header = config.get_string(DROP_FIELDS_HEADER)
        self._drop_fields_header = header if header and header.strip() else None
        self._drop_fields_from_key = bool(config.get_boolean(DROP_FIELDS_FROM_KEY))
        self._keep_schema_compatible = bool(config.get_boolean(DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE))
        self._schemas = SchemaCache(64)
        self._present: dict[tuple[bool, Schema], list[tuple[FieldReference, Schema]]] = {}

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    # -- apply ------------------------------------------------------------------------------
    def apply(self, record: R) -> R | None:
        tombstone = record.value is None
        envelope = is_envelope(record.value_schema) and not tombstone
        if not envelope and not tombstone:
            return record  # schema change, heartbeat, transaction metadata, schemaless: unchanged
        if self._add_headers:
            record = with_headers(record, self._headers(record))
        if tombstone:
            return record if self._strategy.keep_tombstones else None

        value = require_struct(record.value, "record state extraction")
        after = value.get_without_default("after") if value.schema.field("after") else None
        before = value.get_without_default("before") if value.schema.field("before") else None
        if after is None and before is None:
            return None  # truncate (and logical decoding message) events are dropped
        if after is None:
            return self._deleted(record, value, before)
        return self._changed(record, value, after)

    def _changed(self, record: R, envelope: Struct, after: Struct) -> R:
        row: R = with_value(record, _field_schema(envelope, "after"), after)
        if self._strategy.rewrite:
            row = self._with_deleted_flag(row, "false")
        if self._route_by_field is not None:
            row = with_topic(row, require_struct(row.value, "topic routing").get_without_default(self._route_by_field))
        row = self._with_added_fields(row, envelope)
        return self._drop_fields(row)

    def _deleted(self, record: R, envelope: Struct, before: Struct | None) -> R | None:
        on_delete = self._strategy.on_delete
        if on_delete == "drop":
            return None
        if on_delete == "null":
            row: R = with_value(record, _field_schema(envelope, "after"), None)
        elif on_delete == "tombstone":
            row = with_value(record, None, None)
        else:
            row = self._with_deleted_flag(with_value(record, _field_schema(envelope, "before"), before), "true")
        if self._route_by_field is not None and isinstance(before, Struct):
            row = with_topic(row, before.get_without_default(self._route_by_field))
        row = self._drop_fields(row)
        if row.value is not None:
            row = self._with_added_fields(row, envelope)
        return row

    # -- pieces -----------------------------------------------------------------------------
    def _present_refs(self, headers: bool, envelope: Schema) -> list[tuple[FieldReference, Schema]]:
        """The add.fields (or add.headers) entries this envelope schema has, with their schemas."""
        key = (headers, envelope)
        found = self._present.get(key)
        if found is None:
            refs = self._add_headers if headers else self._add_fields
            found = [(ref, s) for ref in refs if (s := ref.schema(envelope)) is not None]
            if len(self._present) >= 256:
                self._present.clear()
            self._present[key] = found
        return found

    def _headers(self, record: R) -> Headers:
        headers = record.headers.duplicate()
        envelope = record.value
        if envelope is None:
            # A tombstone carries only the delete marker (Debezium adds op=d to tombstones).
            for ref in self._add_headers:
                if ref.struct is None and ref.field == "op":
                    headers.add(ref.new_field, "d", Schema.STRING_SCHEMA)
        else:
            for ref, schema in self._present_refs(True, envelope.schema):
                headers.add(ref.new_field, ref.value(envelope), schema)
        return headers

    def _with_deleted_flag(self, row: R, flag: str) -> R:
        """Kafka's InsertField$Value with static.field=__deleted, as Debezium delegates to it."""
        value = row.value
        if not isinstance(value, Struct):
            return row
        schema = self._schemas.get(("deleted", value.schema))
        if schema is None:
            builder = copy_schema_basics(value.schema, SchemaBuilder.struct())
            for field in value.schema.fields:
                builder.field(field.name, field.schema)
            builder.field(DELETED_FIELD, Schema.OPTIONAL_STRING_SCHEMA)
            schema = self._schemas.put(("deleted", value.schema), builder.build())
        names = [f.name for f in value.schema.fields]
        values = [value.get(n) for n in names] if self._replace_null_with_default else struct_values(value, names)
        return with_value(row, schema, Struct.from_values(schema, [*values, flag]))

    def _with_added_fields(self, row: R, envelope: Struct) -> R:
        if not self._add_fields:
            return row
        value = require_struct(row.value, "source field insertion")
        op = envelope.get_without_default("op") if envelope.schema.field("op") else None
        key = ("fields", value.schema, envelope.schema, op)
        schema = self._schemas.get(key)
        present = self._present_refs(False, envelope.schema)
        if schema is None:
            builder = copy_schema_basics(value.schema, SchemaBuilder.struct())
            for field in value.schema.fields:
                builder.field(field.name, field.schema)
            for ref, field_schema in present:
                builder.field(ref.new_field, field_schema)
            schema = self._schemas.put(key, builder.build())
        values = struct_values(value, [f.name for f in value.schema.fields])
        values += [ref.value(envelope) for ref, _ in present]
        return with_value(row, schema, Struct.from_values(schema, values))

    def _drop_fields(self, row: R) -> R:
        if self._drop_fields_header is None:
            return row
        header = next((h for h in row.headers if h.key == self._drop_fields_header), None)
        if header is None or not header.value:
            return row
        names = [str(n) for n in header.value]
        if self._drop_fields_from_key and isinstance(row.key, Struct):
            key_schema, key = drop_struct_fields(
                row.key, row.key_schema, self._droppable(row.key_schema, names), self._schemas
            )
            row = with_key(row, key_schema, key)
        if isinstance(row.value, Struct):
            schema, value = drop_struct_fields(
                row.value, row.value_schema, self._droppable(row.value_schema, names), self._schemas
            )
            row = with_value(row, schema, value)
        return row

    def _droppable(self, schema: Schema | None, names: list[str]) -> set[str]:
        if not self._keep_schema_compatible or schema is None:
            return set(names)
        return {f.name for f in schema.fields if f.schema.optional and f.name in names}

    def close(self) -> None:
        self._schemas = SchemaCache(64)


def _field_schema(envelope: Struct, name: str) -> Schema | None:
    field = envelope.schema.field(name)
    return field.schema if field is not None else None

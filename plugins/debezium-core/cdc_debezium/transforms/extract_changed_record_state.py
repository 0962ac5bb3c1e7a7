"""io.debezium.transforms.ExtractChangedRecordState: headers naming the columns an update changed.

Debezium's ExtractChangedRecordState: for a change event, `header.changed.name` gets the list of
`after` fields whose value differs from `before`, and `header.unchanged.name` those that do not
(both empty lists for creates, snapshot reads and deletes, so that a chain with HeaderToValue
and ExtractNewRecordState sees the same fields on every event). Tombstones and records that are
not change events pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api import AbstractConfig, ConfigDef, ConfigType, Importance, Schema, SchemaBuilder, Struct, Transformation
from cdc_debezium.transforms._support import R, is_envelope, require_struct, with_headers

HEADER_CHANGED_NAME = "header.changed.name"
HEADER_UNCHANGED_NAME = "header.unchanged.name"

CONFIG_DEF = (
    ConfigDef()
    .define(
        HEADER_CHANGED_NAME,
        ConfigType.STRING,
        None,
        importance=Importance.LOW,
        documentation="The header listing the changed fields; unset, no such header is added.",
    )
    .define(
        HEADER_UNCHANGED_NAME,
        ConfigType.STRING,
        None,
        importance=Importance.LOW,
        documentation="The header listing the unchanged fields; unset, no such header is added.",
    )
)


def _list_schema(name: str) -> Schema:
    return SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().name(name).build()


class ExtractChangedRecordState(Transformation[R]):
    """io.debezium.transforms.ExtractChangedRecordState"""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        changed = (config.get_string(HEADER_CHANGED_NAME) or "").strip()
        unchanged = (config.get_string(HEADER_UNCHANGED_NAME) or "").strip()
        self._changed = (changed, _list_schema(changed)) if changed else None
        self._unchanged = (unchanged, _list_schema(unchanged)) if unchanged else None

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def apply(self, record: R) -> R | None:
        if record.value is None or not is_envelope(record.value_schema):
            return record
        if self._changed is None and self._unchanged is None:
            return record
        value = require_struct(record.value, "Record value should be struct.")
        after = value.get_without_default("after") if value.schema.field("after") else None
        before = value.get_without_default("before") if value.schema.field("before") else None
        changed: list[str] = []
        unchanged: list[str] = []
        if isinstance(after, Struct) and isinstance(before, Struct):
            for field in after.schema.fields:
                old = before.get_without_default(field.name) if before.schema.field(field.name) else None
                (changed if after.get_without_default(field.name) != old else unchanged).append(field.name)
        headers = record.headers.duplicate()
        if self._changed is not None:
            headers.add(self._changed[0], changed, self._changed[1])
        if self._unchanged is not None:
            headers.add(self._unchanged[0], unchanged, self._unchanged[1])
        return with_headers(record, headers)

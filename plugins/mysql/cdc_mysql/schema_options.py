"""How field schemas are decorated and named: Debezium's source-type parameters and field name adjustment.

- `column.propagate.source.type` (regexes of `db.table.column`) and `datatype.propagate.source.type`
  (regexes of `db.table.TYPE`) add Debezium's PropagateSourceMetadataToSchemaParameter parameters to
  the matching value fields: `__debezium.source.column.type` (upper case), `…length` and `…scale`
  when the type has them, `…comment` when the column has one, and `…name` (the column's own name,
  kept when `field.name.adjustment.mode` renames the field). Key fields get none, as in Debezium.
- `include.schema.comments` (default off): table and column comments in schema change events, the
  schema history and the `…comment` parameter; off, they are null as in Debezium.
- `schema.name.adjustment.mode`: the same for the key, value and envelope schema names (`.` allowed).
- `field.name.adjustment.mode`: `none` (default), `avro` (invalid characters become `_`, a leading
  digit gets a `_` before it) or `avro_unicode` (invalid characters become `_uXXXX`), as Debezium's
  SchemaNameAdjuster field namers.

Type names, lengths and scales are the ColumnMeta's: the declared type where the connector read the DDL
text (declared_types.py: `NUMERIC(5,2)` is NUMERIC 5,2), else information_schema's (`DECIMAL`, `int(11)`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from cdc.api import Schema, name_adjustment
from cdc_debezium.filters import compile_list
from cdc_mysql.column_hash import HashMasks
from cdc_mysql.custom_converters import CustomConverters
from cdc_mysql.table import ColumnMeta, TableMeta

PROPAGATE_COLUMN_SOURCE_TYPE = "column.propagate.source.type"
PROPAGATE_DATATYPE_SOURCE_TYPE = "datatype.propagate.source.type"
FIELD_NAME_ADJUSTMENT_MODE = "field.name.adjustment.mode"
FIELD_NAME_MODES = ("none", "avro", "avro_unicode")

TYPE_NAME_PARAMETER = "__debezium.source.column.type"
TYPE_LENGTH_PARAMETER = "__debezium.source.column.length"
TYPE_SCALE_PARAMETER = "__debezium.source.column.scale"
COLUMN_COMMENT_PARAMETER = "__debezium.source.column.comment"
COLUMN_NAME_PARAMETER = "__debezium.source.column.name"

SCHEMA_NAME_ADJUSTMENT_MODE = "schema.name.adjustment.mode"


def regex_list(name: str, value: str | None) -> list[re.Pattern[str]]:
    return compile_list(name, [p.strip() for p in (value or "").split(",") if p.strip()])


def adjust_schema_name(name: str, mode: str) -> str:
    """`name` made a valid Avro full name under `schema.name.adjustment.mode` (cdc.api.name_adjustment)."""
    return name_adjustment.adjust(name, mode, full_name=True)


def adjust_field_name(name: str, mode: str) -> str:
    """`name` made a valid Avro field name under `field.name.adjustment.mode` (cdc.api.name_adjustment,
    shared with PostgreSQL and the Avro converter: one column gets one name whatever its source)."""
    return name_adjustment.adjust(name, mode)


@dataclass(frozen=True)
class SchemaOptions:
    """The config keys that shape field schemas and names beyond the type mapping."""

    column_patterns: list[re.Pattern[str]] = field(default_factory=list)
    datatype_patterns: list[re.Pattern[str]] = field(default_factory=list)
    field_name_mode: str = "none"
    converting_failure: str = "warn"
    hash_masks: HashMasks = field(default_factory=HashMasks)  # column.mask.hash.* (column_hash.py)
    include_comments: bool = False  # include.schema.comments (Debezium's default: off)
    schema_name_mode: str = "none"  # schema.name.adjustment.mode
    custom: CustomConverters = field(default_factory=CustomConverters)  # converters (custom_converters.py)

    @classmethod
    def from_config(cls, get: Callable[[str], object], props: Mapping[str, object] | None = None) -> SchemaOptions:
        return cls(
            regex_list(PROPAGATE_COLUMN_SOURCE_TYPE, _text(get(PROPAGATE_COLUMN_SOURCE_TYPE))),
            regex_list(PROPAGATE_DATATYPE_SOURCE_TYPE, _text(get(PROPAGATE_DATATYPE_SOURCE_TYPE))),
            str(get(FIELD_NAME_ADJUSTMENT_MODE) or "none").lower(),
            str(get("event.converting.failure.handling.mode") or "warn").lower(),
            HashMasks.from_config(props or {}),
            bool(get("include.schema.comments")),
            str(get(SCHEMA_NAME_ADJUSTMENT_MODE) or "none").lower(),
            CustomConverters.from_config(props or {}),
        )

    def table_meta(self, meta: TableMeta) -> TableMeta:
        """`meta` as Debezium keeps it: without comments unless include.schema.comments is on."""
        if self.include_comments:
            return meta
        return replace(
            meta,
            comment=None,
            columns={name: replace(c, comment=None) if c.comment else c for name, c in meta.columns.items()},
        )

    def schema_name(self, name: str) -> str:
        return adjust_schema_name(name, self.schema_name_mode)

    def field_name(self, column: str) -> str:
        return adjust_field_name(column, self.field_name_mode)

    def propagates(self, column_id: str, table_id: str, meta: ColumnMeta | None) -> bool:
        if any(p.fullmatch(column_id) for p in self.column_patterns):
            return True
        if meta is None or not self.datatype_patterns:
            return False
        datatype_id = f"{table_id}.{meta.type_name}"
        return any(p.fullmatch(datatype_id) for p in self.datatype_patterns)

    def source_parameters(self, column: str, meta: ColumnMeta | None) -> dict[str, str]:
        """Debezium's source-metadata schema parameters of `column`."""
        params: dict[str, str] = {}
        if meta is not None:
            params[TYPE_NAME_PARAMETER] = meta.type_name.upper()
            if meta.length is not None:
                params[TYPE_LENGTH_PARAMETER] = str(meta.length)
            if meta.scale is not None:
                params[TYPE_SCALE_PARAMETER] = str(meta.scale)
            if meta.comment:
                params[COLUMN_COMMENT_PARAMETER] = meta.comment
        params[COLUMN_NAME_PARAMETER] = column
        return params


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def with_parameters(schema: Schema, extra: Mapping[str, str]) -> Schema:
    """`schema` with `extra` added to its parameters."""
    return Schema(
        schema.type,
        optional=schema.optional,
        default_value=schema.default_value,
        name=schema.name,
        version=schema.version,
        doc=schema.doc,
        parameters={**(schema.parameters or {}), **extra},
        fields=schema.fields,
    )

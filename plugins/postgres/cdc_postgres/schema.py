"""PostgresSchema: per-table key/value schemas and envelopes, from pgoutput Relation messages.

pgoutput's Relation message gives column names, type OIDs and modifiers in publication
order; nullability and the primary key come from the catalog (the Relation's key flags
describe the replica identity, not the primary key Debezium uses for message keys).
"""

from __future__ import annotations

import decimal
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc.api import ConfigException, Schema, SchemaBuilder, Struct, Type
from cdc.api import Decimal as ConnectDecimal
from cdc_debezium.envelope import Envelope
from cdc_debezium.naming import TopicNamingStrategy
from cdc_postgres.pgoutput import UNCHANGED_TOAST, Relation
from cdc_postgres.source_info import SOURCE_SCHEMA
from cdc_postgres.toast import ToastPlaceholder
from cdc_postgres.types import PgColumn, TypeRegistry
from cdc_postgres.value_converters import PostgresValueConverters, UnsupportedTypeError

log = logging.getLogger(__name__)

_COLUMNS_SQL = """
SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull
FROM pg_attribute a WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
"""
_PK_SQL = """
SELECT a.attname FROM pg_index i
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indrelid = %s AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)
"""


# The columns an old row carries under the table's replica identity (DEFAULT: the primary key;
# INDEX: that index's); none for FULL (every column) and NOTHING (no old row).
_IDENTITY_SQL = """
SELECT c.relreplident, ARRAY(
    SELECT a.attname FROM pg_index i
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
    WHERE i.indrelid = c.oid AND CASE c.relreplident WHEN 'i' THEN i.indisreplident ELSE i.indisprimary END)
FROM pg_class c WHERE c.oid = %s
"""


def _fallback(schema: Schema) -> Any:
    """The value Debezium emits for a NOT NULL column whose value the WAL did not carry."""
    if schema.name == ConnectDecimal.LOGICAL_NAME:
        return decimal.Decimal(0).scaleb(-ConnectDecimal.scale(schema))
    return {
        Type.BOOLEAN: False,
        Type.STRING: "",
        Type.BYTES: b"",
        Type.FLOAT32: 0.0,
        Type.FLOAT64: 0.0,
        Type.ARRAY: [],
        Type.MAP: {},
    }.get(schema.type, 0)


@dataclass
class ColumnInfo:
    name: str
    index: int  # position in the Relation / SELECT column list
    schema: Schema
    convert: Callable[[str], Any]
    optional: bool
    toast: Any = None  # stands for an unchanged TOASTed value (None: no placeholder, use the null value)


_FRESH = object()  # stands for a fallback that must be built anew for each row ([] or {})


@dataclass
class TableSchema:
    schema_name: str
    table_name: str
    topic: str
    key_columns: list[ColumnInfo]
    value_columns: list[ColumnInfo]
    key_schema: Schema | None
    value_schema: Schema
    envelope: Envelope
    relation_id: int = 0
    key_names: set[str] = field(default_factory=set)
    primary_key: tuple[str, ...] = ()  # the table's own primary key (the message key may be message.key.columns)
    column_index: dict[str, int] = field(default_factory=dict)  # every column's position in the row tuples
    id: str = field(init=False, default="")  # schema.table

    def __post_init__(self) -> None:
        self.id = f"{self.schema_name}.{self.table_name}"
        self._key_plan = [self._plan(c) for c in self.key_columns]
        self._value_plan = [self._plan(c) for c in self.value_columns]
        self._width = max((c.index + 1 for c in (*self.key_columns, *self.value_columns)), default=0)

    def _plan(self, col: ColumnInfo) -> tuple[int, Any, Any, Any, ColumnInfo]:
        """(index, converter or None for text kept as is, value for null, value for unchanged TOAST, column)."""
        null = None if col.optional else _fallback(col.schema)
        if isinstance(null, (list, dict)):
            null = _FRESH  # a new empty list/map per row: records must not share a mutable value
        toast = null if col.toast is None else col.toast
        if isinstance(toast, (list, dict)):
            toast = _FRESH  # array and map placeholders are copied per row too
        return (col.index, None if col.convert is str else col.convert, null, toast, col)

    @staticmethod
    def _unchanged_toast(col: ColumnInfo) -> Any:
        if col.toast is None:
            return None if col.optional else _fallback(col.schema)
        return col.toast.copy() if isinstance(col.toast, (list, dict)) else col.toast

    def _get(self, col: ColumnInfo, values: tuple[object, ...]) -> Any:
        raw = values[col.index] if col.index < len(values) else None
        if raw is UNCHANGED_TOAST:
            return self._unchanged_toast(col)
        if raw is None:
            return None if col.optional else _fallback(col.schema)
        return col.convert(raw if isinstance(raw, str) else bytes(raw).decode())

    def _row(self, plan: list[tuple[int, Any, Any, Any, ColumnInfo]], values: tuple[object, ...]) -> list[Any]:
        """Converted values in field order: `_get` for every column, flattened (once per row and column)."""
        out: list[Any] = []
        append = out.append
        for index, convert, null, toast, col in plan:
            raw = values[index]
            if raw.__class__ is str:
                append(raw if convert is None else convert(raw))
            elif raw is None:
                append(null if null is not _FRESH else _fallback(col.schema))
            elif raw is UNCHANGED_TOAST:
                append(toast if toast is not _FRESH else self._unchanged_toast(col))
            else:
                append(self._get(col, values))
        return out

    def key(self, values: tuple[object, ...]) -> Struct | None:
        if self.key_schema is None:
            return None
        if len(values) < self._width:
            return Struct.from_values(self.key_schema, [self._get(col, values) for col in self.key_columns])
        return Struct.from_values(self.key_schema, self._row(self._key_plan, values))

    def value(self, values: tuple[object, ...], only_key: bool = False) -> Struct:
        """The row's Struct. A key-only old row ('K') holds the replica identity's columns (the primary key,
        or the index of REPLICA IDENTITY INDEX) and nulls for the rest, which `_get` turns into fallbacks."""
        if len(values) < self._width:
            return Struct.from_values(self.value_schema, [self._get(col, values) for col in self.value_columns])
        return Struct.from_values(self.value_schema, self._row(self._value_plan, values))


class PostgresSchema:
    def __init__(
        self,
        conn: Any,
        topics: TopicNamingStrategy,
        converters: PostgresValueConverters,
        placeholder: str,
        column_filter: Callable[[str], bool] = lambda _: True,
        key_overrides: list[tuple[re.Pattern[str], list[str]]] | None = None,
    ) -> None:
        self.conn = conn
        self.topics = topics
        self.converters = converters
        self.placeholder = ToastPlaceholder.parse(placeholder)
        self.column_filter = column_filter
        self.key_overrides = key_overrides or []
        self.types = TypeRegistry.load(conn)
        self.by_relation: dict[int, TableSchema] = {}
        self._identity_checked: set[int] = set()

    def on_relation(self, rel: Relation) -> TableSchema:
        columns = [(c.name, c.type_oid, c.type_modifier) for c in rel.columns]
        table = self.build(rel.relation_id, rel.namespace, rel.name, columns)
        self.by_relation[rel.relation_id] = table
        return table

    def for_table(self, oid: int, schema_name: str, table_name: str) -> TableSchema:
        rows = self.conn.execute(_COLUMNS_SQL, (oid,)).fetchall()
        return self.build(oid, schema_name, table_name, [(n, t, m) for n, t, m, _ in rows])

    def _warn_if_identity_lacks_key(self, oid: int, table_id: str, key: list[str]) -> None:
        """Say at start what would otherwise surface at the first DELETE: old rows will lack the key."""
        row = self.conn.execute(_IDENTITY_SQL, (oid,)).fetchone()
        if row is None or row[0] not in ("d", "i"):
            return
        missing = [k for k in key if k not in set(row[1] or [])]
        if missing:
            identity = "the primary key" if row[0] == "d" else f"the identity index ({', '.join(row[1] or [])})"
            log.warning(
                "%s: old rows carry only %s, not the message key column(s) %s; a DELETE on it will stop the "
                "task, since its key cannot be known. Use REPLICA IDENTITY FULL, an identity index containing "
                "%s, or a message.key.columns entry within the identity",
                table_id, identity, ", ".join(missing), ", ".join(missing),
            )  # fmt: skip

    def _key_override(self, table_id: str, names: list[str]) -> list[str] | None:
        """The first `message.key.columns` entry whose regex matches the whole `schema.table`, as Debezium."""
        for pattern, cols in self.key_overrides:
            if pattern.fullmatch(table_id):
                missing = [c for c in cols if c not in names]
                if missing:
                    raise ConfigException(
                        f"message.key.columns names column(s) {', '.join(missing)}, which table {table_id} does not "
                        f"have (its columns: {', '.join(names)}); fix the entry for {table_id}",
                        "message.key.columns",
                    )
                return cols
        return None

    def build(self, oid: int, schema_name: str, table_name: str, columns: list[tuple[str, int, int]]) -> TableSchema:
        notnull = {n: nn for n, _t, _m, nn in self.conn.execute(_COLUMNS_SQL, (oid,)).fetchall()}
        table_id = f"{schema_name}.{table_name}"
        primary_key = [r[0] for r in self.conn.execute(_PK_SQL, (oid,)).fetchall()]
        pk = self._key_override(table_id, [c[0] for c in columns]) or primary_key
        topic = self.topics.data_change_topic(schema_name, table_name)
        value_b = SchemaBuilder.struct().name(self.topics.value_schema_name(topic)).optional()
        key_b = SchemaBuilder.struct().name(self.topics.key_schema_name(topic))
        value_cols: list[ColumnInfo] = []
        key_cols: list[ColumnInfo] = []
        for index, (name, type_oid, typmod) in enumerate(columns):
            if not self.column_filter(f"{table_id}.{name}") and name not in pk:
                continue
            t = self.types.get(type_oid)
            if t is None:
                self.types.refresh(self.conn)
                t = self.types.get(type_oid)
            resolved = self.types.resolve(type_oid) if t is not None else None
            if resolved is None:
                log.warning("column %s.%s has unknown type oid %s; skipped", table_id, name, type_oid)
                continue
            optional = not notnull.get(name, False)
            col = PgColumn(name, resolved, typmod, optional)
            element = self.types.get(resolved.element_oid) if resolved.category == "A" else None
            try:
                if element is not None:
                    elem_schema = self.converters.schema_builder(PgColumn(name, element, typmod, True)).build()
                    b = SchemaBuilder.array(elem_schema)
                    field_schema = (b.optional() if optional else b).build()
                else:
                    field_schema = self.converters.schema_builder(col).build()
            except UnsupportedTypeError as e:
                log.warning("%s: %s", table_id, e)
                continue
            toast = self.placeholder.for_column(field_schema, is_hstore=resolved.name == "hstore")
            info = ColumnInfo(name, index, field_schema, self.converters.converter(col, element), optional, toast)
            value_b.field(name, field_schema)
            value_cols.append(info)
            if name in pk:
                key_schema = (
                    field_schema
                    if not optional
                    else self.converters.schema_builder(PgColumn(name, resolved, typmod, False)).build()
                )
                key_b.field(name, key_schema)
                key_cols.append(ColumnInfo(name, index, key_schema, info.convert, False))
        if key_cols and oid not in self._identity_checked:
            self._identity_checked.add(oid)
            self._warn_if_identity_lacks_key(oid, table_id, [c.name for c in key_cols])
        value_schema = value_b.build()
        envelope = Envelope.define(self.topics.envelope_schema_name(topic), value_schema, SOURCE_SCHEMA)
        return TableSchema(
            schema_name,
            table_name,
            topic,
            key_cols,
            value_cols,
            key_b.build() if key_cols else None,
            value_schema,
            envelope,
            oid,
            {c.name for c in key_cols},
            tuple(primary_key),
            {name: index for index, (name, _t, _m) in enumerate(columns)},
        )

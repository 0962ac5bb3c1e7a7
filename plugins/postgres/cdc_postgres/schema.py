"""PostgresSchema: per-table key/value schemas and envelopes, from pgoutput Relation messages.

pgoutput's Relation message gives column names, type OIDs and modifiers in publication
order; nullability, defaults and the primary key come from the catalog (the Relation's key flags
describe the replica identity, not the primary key Debezium uses for message keys). A table
without a primary key is keyed, as in Debezium, by its first unique index (by name), else has a
null key (message.key.columns can name key columns for any table).
"""

from __future__ import annotations

import decimal
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from cdc.api import ConfigException, Schema, SchemaBuilder, Struct, Type
from cdc.api import Decimal as ConnectDecimal
from cdc_debezium.envelope import Envelope
from cdc_debezium.key_columns import KeyColumns
from cdc_debezium.naming import TopicNamingStrategy
from cdc_postgres import defaults, source_type
from cdc_postgres.column_mappers import ColumnMappers
from cdc_postgres.names import adjuster
from cdc_postgres.pgoutput import UNCHANGED_TOAST, Relation
from cdc_postgres.source_info import SOURCE_SCHEMA
from cdc_postgres.toast import ToastPlaceholder
from cdc_postgres.types import PgColumn, PgType, TypeRegistry
from cdc_postgres.value_converters import PostgresValueConverters, UnsupportedTypeError, array_items_optional

log = logging.getLogger(__name__)

_COLUMNS_SQL = """
SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull, pg_get_expr(d.adbin, d.adrelid)
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
"""
_PK_SQL = """
SELECT a.attname FROM pg_index i
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indrelid = %s AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)
"""
# Unique indexes in pgjdbc's getIndexInfo order (by name); expression indexes cannot key a row.
_UNIQUE_SQL = """
SELECT c.relname, ARRAY(
    SELECT a.attname FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = %s AND i.indisunique AND i.indexprs IS NULL ORDER BY c.relname COLLATE "C"
"""


# Takes and at once drops an ACCESS SHARE lock on the table (pg_relation_size opens it so, and needs no
# privilege): it waits for any transaction holding a DDL lock on it to end, and be visible, first.
_WAIT_FOR_DDL_SQL = (
    "DO $$ BEGIN PERFORM set_config('lock_timeout', '{timeout_ms}', true); "
    "PERFORM pg_relation_size({oid}::oid::regclass); END $$"
)
CATALOG_LOCK_WAIT_MS = 5000  # how long a Relation message waits for a DDL lock on its table
CATALOG_AGREE_S = 1.0  # then, how long the catalog is re-read until it agrees with the Relation message

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
    mapper: Callable[[Any], Any] | None = None  # a column mapper's value function (column_mappers), if any

    def null_value(self) -> Any:
        """The field's value for a null (or a value the WAL did not carry): None, or a NOT NULL column's
        fallback; as in Debezium's TableSchemaBuilder the column mapper sees it too (a masked null is the mask)."""
        value = None if self.optional else _fallback(self.schema)
        return value if self.mapper is None else self.mapper(value)


# Debezium's PostgresValueConverter has no schema for arrays of these (DBZ-459): such columns are left out.
UNMAPPED_ARRAYS = frozenset({"money", "name", "interval", "varbit", "xml", "point", "refcursor"})

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
        self._build_key = _compile_row(self, "key") if self.key_schema is not None else None
        self._build_value = _compile_row(self, "value")

    def _plan(self, col: ColumnInfo) -> tuple[int, Any, Any, Any, ColumnInfo]:
        """(index, converter or None for text kept as is, value for null, value for unchanged TOAST, column)."""
        null = col.null_value()
        if isinstance(null, (list, dict)):
            null = _FRESH  # a new empty list/map per row: records must not share a mutable value
        toast = null if col.toast is None else col.toast
        if isinstance(toast, (list, dict)):
            toast = _FRESH  # array and map placeholders are copied per row too
        return (col.index, None if col.convert is str else col.convert, null, toast, col)

    @staticmethod
    def _unchanged_toast(col: ColumnInfo) -> Any:
        if col.toast is None:
            return col.null_value()
        return col.toast.copy() if isinstance(col.toast, (list, dict)) else col.toast

    def _get(self, col: ColumnInfo, values: tuple[object, ...]) -> Any:
        return self._raw(col, values[col.index] if col.index < len(values) else None)

    def _raw(self, col: ColumnInfo, raw: object) -> Any:
        """One column's value from its raw pgoutput value (None, UNCHANGED_TOAST, text or binary)."""
        if raw is UNCHANGED_TOAST:
            return self._unchanged_toast(col)
        if raw is None:
            return col.null_value()
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
                append(null if null is not _FRESH else col.null_value())
            elif raw is UNCHANGED_TOAST:
                append(toast if toast is not _FRESH else self._unchanged_toast(col))
            else:
                append(self._get(col, values))
        return out

    def key(self, values: tuple[object, ...]) -> Struct | None:
        build = self._build_key
        return None if build is None else build(values)

    def value(self, values: tuple[object, ...], only_key: bool = False) -> Struct:
        """The row's Struct. A key-only old row ('K') holds the replica identity's columns (the primary key,
        or the index of REPLICA IDENTITY INDEX) and nulls for the rest, which `_get` turns into fallbacks."""
        return self._build_value(values)

    def key_slow(self, values: tuple[object, ...]) -> Struct | None:
        """`key` through the column loop (`_row`/`_get`): the reference the compiled builder is tested against."""
        if self.key_schema is None:
            return None
        if len(values) < self._width:
            return Struct.from_values(self.key_schema, [self._get(col, values) for col in self.key_columns])
        return Struct.from_values(self.key_schema, self._row(self._key_plan, values))

    def value_slow(self, values: tuple[object, ...]) -> Struct:
        """`value` through the column loop: the reference the compiled builder is tested against."""
        if len(values) < self._width:
            return Struct.from_values(self.value_schema, [self._get(col, values) for col in self.value_columns])
        return Struct.from_values(self.value_schema, self._row(self._value_plan, values))


def row_expressions(table: TableSchema, kind: str, ns: dict[str, Any], tag: str) -> str:
    """The compiled builder's values of `table`'s key or value (`kind`) from a row tuple named `values`.

    Comma-separated expressions in field order, for a list display in generated code of at least
    `table._width` values; the names they use are added to `ns`, prefixed with `tag`. Each column, as
    `_row` does it: text goes straight to the column's converter (or is kept, for text columns), a
    null to the column's null value; anything else (an unchanged TOAST value, binary, a fresh [] or
    {}) takes `_raw`.
    """
    plan = table._value_plan if kind == "value" else table._key_plan
    parts = []
    for i, (index, convert, null, _toast, col) in enumerate(plan):
        ns[f"{tag}g{i}"] = lambda raw, col=col: table._raw(col, raw)
        text = "v" if convert is None else f"{tag}c{i}(v)"
        if convert is not None:
            ns[f"{tag}c{i}"] = convert
        if null is _FRESH:
            other = f"{tag}g{i}(v)"
        else:
            ns[f"{tag}n{i}"] = null
            other = f"({tag}n{i} if v is None else {tag}g{i}(v))"
        parts.append(f"({text} if (v := values[{index}]).__class__ is str else {other})")
    return ", ".join(parts)


def _compile_row(table: TableSchema, kind: str) -> Callable[[tuple[object, ...]], Struct]:
    """A function building the key's or value's Struct from a pgoutput row tuple, compiled once per table schema.

    The same values as `_row`, column by column unrolled (as cdc_mysql's row_builder compiles per
    table), without re-validation; a row shorter than the table's columns takes the column loop.
    """
    schema = table.value_schema if kind == "value" else table.key_schema
    ns: dict[str, Any] = {"new": object.__new__, "Struct": Struct, "schema": schema, "width": table._width}
    ns["slow"] = table.value_slow if kind == "value" else table.key_slow
    source = (
        "def build(values):\n"
        "    if len(values) < width:\n"
        "        return slow(values)\n"
        "    s = new(Struct)\n"
        "    s.schema = schema\n"
        f"    s._values = [{row_expressions(table, kind, ns, '')}]\n"
        "    return s\n"
    )
    exec(compile(source, f"<pg {kind} builder {table.id}>", "exec"), ns)
    build: Callable[[tuple[object, ...]], Struct] = ns["build"]
    return build


@dataclass(frozen=True)
class SchemaOptions:
    """How columns become fields, beyond the type mapping: Debezium's column mappers and name adjusters."""

    mappers: ColumnMappers = field(default_factory=lambda: ColumnMappers([]))
    field_names: str = "none"  # field.name.adjustment.mode
    schema_names: str = "none"  # schema.name.adjustment.mode


class PostgresSchema:
    def __init__(
        self,
        conn: Any,
        topics: TopicNamingStrategy,
        converters: PostgresValueConverters,
        placeholder: str,
        column_filter: Callable[[str], bool] = lambda _: True,
        key_overrides: KeyColumns | None = None,
        options: SchemaOptions | None = None,
    ) -> None:
        self.conn = conn
        self.topics = topics
        self.converters = converters
        self.placeholder = ToastPlaceholder.parse(placeholder)
        self.column_filter = column_filter
        self.key_overrides = key_overrides or KeyColumns()
        self.options = options or SchemaOptions()
        self._field_name = adjuster(self.options.field_names)
        self._schema_name = adjuster(self.options.schema_names, full_names=True)
        self.types = TypeRegistry.load(conn)
        self.by_relation: dict[int, TableSchema] = {}
        self._identity_checked: set[int] = set()
        self._told: set[tuple[str, ...]] = set()  # what was logged once: skipped columns, unparsable defaults

    def _once(self, *what: str) -> bool:
        """True the first time `what` is seen: one line per column, not one per Relation message."""
        if what in self._told:
            return False
        self._told.add(what)
        return True

    def on_relation(self, rel: Relation) -> TableSchema:
        columns = [(c.name, c.type_oid, c.type_modifier) for c in rel.columns]
        self._await_catalog(rel.relation_id, rel.namespace, rel.name, columns)
        table = self.build(rel.relation_id, rel.namespace, rel.name, columns)
        self.by_relation[rel.relation_id] = table
        return table

    def _await_catalog(self, oid: int, schema_name: str, table_name: str, columns: list[tuple[str, int, int]]) -> None:
        """Wait until the catalog shows the table as the Relation message's transaction left it.

        pgoutput decodes a transaction once its commit record is flushed, which is a moment before the
        committing backend makes the transaction visible to other sessions: a catalog read right then misses
        what that transaction changed (a column it added reads as unknown, so nullable). Every DDL that changes
        a table's columns holds a lock on it that the committing backend releases only after the transaction
        is visible; taking (and dropping) a lock on the table therefore waits for exactly that, and the catalog
        reads after it see the transaction. A lock held longer (a later DDL still running) is not waited for
        past CATALOG_LOCK_WAIT_MS: the catalog is then re-read until it names the Relation's columns with the
        same types, within CATALOG_AGREE_S (it may never agree when a later DDL already committed).
        """
        table_id = f"{schema_name}.{table_name}"
        try:
            self.conn.execute(_WAIT_FOR_DDL_SQL.format(timeout_ms=CATALOG_LOCK_WAIT_MS, oid=int(oid)))
        except psycopg.errors.LockNotAvailable:
            log.info("table %s is locked by a running DDL: its catalog is read without waiting for it", table_id)
        deadline = time.monotonic() + CATALOG_AGREE_S
        while True:
            catalog = {n: (t, m) for n, t, m, _nn, _d in self.conn.execute(_COLUMNS_SQL, (oid,)).fetchall()}
            stale = [n for n, t, _m in columns if catalog.get(n, (None, None))[0] != t]
            if not stale:
                return
            if time.monotonic() >= deadline:
                if self._once("catalog disagrees", table_id, *stale):
                    log.warning(
                        "the catalog of table %s does not show column(s) %s as its change events name them (a "
                        "later DDL changed them?): their nullability and default are not known and taken as "
                        "nullable without default",
                        table_id, ", ".join(stale),
                    )  # fmt: skip
                return
            time.sleep(0.02)

    def for_table(self, oid: int, schema_name: str, table_name: str) -> TableSchema:
        rows = self.conn.execute(_COLUMNS_SQL, (oid,)).fetchall()
        return self.build(oid, schema_name, table_name, [(n, t, m) for n, t, m, _, _ in rows])

    def _unique_key(self, oid: int, table_id: str) -> list[str]:
        """Debezium's key for a table without a primary key: its first unique index (pgjdbc's order)."""
        for index, columns in self.conn.execute(_UNIQUE_SQL, (oid,)).fetchall():
            if columns:
                if self._once("unique key", table_id):
                    log.info("table %s has no primary key: its message key is unique index %s", table_id, index)
                return list(columns)
        return []

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
        cols = self.key_overrides.for_table(table_id)
        if cols is not None:
            missing = [c for c in cols if c not in names]
            if missing:
                raise ConfigException(
                    f"message.key.columns names column(s) {', '.join(missing)}, which table {table_id} does not "
                    f"have (its columns: {', '.join(names)}); fix the entry for {table_id}",
                    "message.key.columns",
                )
            return list(cols)
        return None

    def build(self, oid: int, schema_name: str, table_name: str, columns: list[tuple[str, int, int]]) -> TableSchema:
        catalog = {n: (nn, default) for n, _t, _m, nn, default in self.conn.execute(_COLUMNS_SQL, (oid,)).fetchall()}
        table_id = f"{schema_name}.{table_name}"
        primary_key = [r[0] for r in self.conn.execute(_PK_SQL, (oid,)).fetchall()]
        override = self._key_override(table_id, [c[0] for c in columns])
        pk = override or primary_key or self._unique_key(oid, table_id)
        topic = self.topics.data_change_topic(schema_name, table_name)
        value_b = SchemaBuilder.struct().name(self._schema_name(self.topics.value_schema_name(topic))).optional()
        key_b = SchemaBuilder.struct().name(self._schema_name(self.topics.key_schema_name(topic)))
        value_cols: list[ColumnInfo] = []
        keyed: dict[str, tuple[str, ColumnInfo]] = {}
        for index, (name, type_oid, typmod) in enumerate(columns):
            if not self.column_filter(f"{table_id}.{name}") and name not in pk:
                continue
            own = self.types.get(type_oid)
            if own is None:
                self.types.refresh(self.conn)
                own = self.types.get(type_oid)
            resolved = self.types.resolve(type_oid) if own is not None else None
            if resolved is None or own is None:
                if self._once("unknown oid", table_id, name):
                    log.warning("column %s.%s has unknown type oid %s; skipped", table_id, name, type_oid)
                continue
            if typmod == -1:
                typmod = self.types.domain_modifier(type_oid)  # a domain's numeric(8,3), varbit(3), ...
            notnull, default_expr = catalog.get(name, (False, None))
            optional = not notnull
            col = PgColumn(name, resolved, typmod, optional)
            element = self.types.get(resolved.element_oid) if resolved.category == "A" else None
            if element is not None and element.name in UNMAPPED_ARRAYS:
                if self._once("skipped", table_id, name):
                    log.warning(
                        "column %s.%s is an array of %s, which Debezium does not map (whatever "
                        "include.unknown.datatypes says): it is left out of the events, as in Debezium",
                        table_id, name, element.name,
                    )  # fmt: skip
                continue
            try:
                builder = self._field_builder(col, element)
            except UnsupportedTypeError:
                if self._once("skipped", table_id, name):
                    log.warning(
                        "column %s.%s has type %s, which Debezium does not map: it is left out of the events. Set "
                        "include.unknown.datatypes=true to capture its text as binary, or exclude it with "
                        "column.exclude.list",
                        table_id, name, own.name,
                    )  # fmt: skip
                continue
            convert = self.converters.converter(col, element)
            default = self._default(table_id, name, own, default_expr, convert)
            params, value_convert, mapper = self._mapped(table_id, own, typmod, name, convert)
            field_schema = _finish(builder, optional, params, default)
            field_name = self._field_name(name)
            toast = self.placeholder.for_column(field_schema, is_hstore=resolved.name == "hstore")
            info = ColumnInfo(name, index, field_schema, value_convert, optional, toast, mapper)
            value_b.field(field_name, field_schema)
            value_cols.append(info)
            if name in pk:
                # A primary key column is NOT NULL; a unique index's or message.key.columns' may not be,
                # and Debezium's key field then is optional too.
                key_optional = optional and name not in primary_key
                # Debezium's key fields get the default but no column mapper (no source-type parameters).
                key_schema = _finish(self._field_builder(col, element), key_optional, {}, default)
                keyed[name] = (field_name, ColumnInfo(name, index, key_schema, convert, key_optional))
        # Key fields in the key's own order (the primary key's, the index's, message.key.columns'), as Debezium.
        key_cols = [keyed[name][1] for name in pk if name in keyed]
        for name in pk:
            if name in keyed:
                key_b.field(keyed[name][0], keyed[name][1].schema)
        if key_cols and oid not in self._identity_checked:
            self._identity_checked.add(oid)
            self._warn_if_identity_lacks_key(oid, table_id, [c.name for c in key_cols])
        value_schema = value_b.build()
        envelope = Envelope.define(
            self._schema_name(self.topics.envelope_schema_name(topic)), value_schema, SOURCE_SCHEMA
        )
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

    def _field_builder(self, col: PgColumn, element: PgType | None) -> SchemaBuilder:
        """The field's schema builder, required; `_finish` sets optionality, parameters and default."""
        required = PgColumn(col.name, col.type, col.type_modifier, False)
        if element is not None:
            # Optional items for the arrays Debezium lists one by one (int[], text[], ...), required ones for
            # the rest (an enum's, tsvector's, ...), as its PostgresValueConverter builds them.
            items_optional = array_items_optional(element)
            item = PgColumn(col.name, element, col.type_modifier, items_optional)
            elem_schema = self.converters.schema_builder(item).build()
            return SchemaBuilder.array(elem_schema)
        return self.converters.schema_builder(required)

    def _mapped(
        self, table_id: str, own: PgType, typmod: int, name: str, convert: Callable[[str], Any]
    ) -> tuple[dict[str, str], Callable[[str], Any], Callable[[Any], Any] | None]:
        """Debezium's column mappers (truncate, mask, hash, propagate.source.type): the field's extra schema
        parameters, its value converter and the mapper alone (None: none), which nulls go through too. Key
        fields are left as they are, as in Debezium."""
        mappers = self.options.mappers
        if not mappers:
            return {}, convert, None
        length, _scale = source_type.length_and_scale(self.types, own, typmod)
        mapping = mappers.mapping(table_id, name, own.name, source_type.base_name(self.types, own), length)
        if mapping is None:
            return {}, convert, None
        if mapping.propagate:
            return source_type.parameters(self.types, own, typmod, name), convert, None
        mapper = mapping.mapper
        if mapper is None:
            return mapping.parameters, convert, None
        return mapping.parameters, lambda text: mapper(convert(text)), mapper

    def _default(self, table_id: str, name: str, own: PgType, expression: str | None, convert: Any) -> Any:
        """The column's default as the field's value (None: none), as Debezium's PostgresDefaultValueConverter."""
        if expression is None:
            return None
        if not defaults.has_mapper(own):
            if self._once("no default mapper", table_id, name):
                log.debug("column %s.%s: no default value mapping for type %s", table_id, name, own.name)
            return None
        try:
            return defaults.default_value(own, expression, convert)
        except (defaults.UnparsableDefault, ValueError) as e:
            if self._once("default", table_id, name):
                log.warning(
                    "column %s.%s: default %s is not a literal of type %s, so the schema carries no default "
                    "(as in Debezium: expression evaluation is not supported): %s",
                    table_id, name, expression, own.name, e,
                )  # fmt: skip
            return None


def _finish(builder: SchemaBuilder, optional: bool, params: dict[str, str], default: Any) -> Schema:
    """Optionality, Debezium's source-type parameters and the default, on a fresh builder."""
    if optional:
        builder.optional()
    for key, value in params.items():
        builder.parameter(key, value)
    if default is not None:
        builder.default_value(default)
    return builder.build()

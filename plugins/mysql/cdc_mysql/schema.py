"""MySqlSchema: table schemas from TableMapEvent metadata (streaming) or information_schema (snapshot).

Decoding relies on the TABLE_MAP event written with each transaction (`binlog_row_metadata=FULL`),
never on the server's current schema, so a reader that lags behind an ALTER still decodes
every row with the columns it was written with.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE

from cdc.api import ConfigException, Schema, SchemaBuilder, Struct
from cdc_debezium.envelope import Envelope
from cdc_debezium.filters import ColumnMappers
from cdc_debezium.naming import TopicNamingStrategy
from cdc_mysql.column_hash import STRING_TYPES
from cdc_mysql.declared_types import DeclaredTypes
from cdc_mysql.defaults import raw_default
from cdc_mysql.row_builder import RowBuilder, compile_row_builder
from cdc_mysql.schema_options import SchemaOptions, with_parameters
from cdc_mysql.table import ColumnDef, TableDef, TableMeta
from cdc_mysql.value_converters import GEOMETRY_TYPES, Converter, MySqlValueConverters

log = logging.getLogger(__name__)

_INT_TYPES = {
    FIELD_TYPE.TINY: "tinyint",
    FIELD_TYPE.SHORT: "smallint",
    FIELD_TYPE.INT24: "mediumint",
    FIELD_TYPE.LONG: "int",
    FIELD_TYPE.LONGLONG: "bigint",
}
_SIMPLE_TYPES = {
    FIELD_TYPE.FLOAT: "float",
    FIELD_TYPE.DOUBLE: "double",
    FIELD_TYPE.JSON: "json",
    FIELD_TYPE.DATE: "date",
    FIELD_TYPE.NEWDATE: "date",
    FIELD_TYPE.YEAR: "year",
    FIELD_TYPE.GEOMETRY: "geometry",
    FIELD_TYPE.ENUM: "enum",
    FIELD_TYPE.SET: "set",
}
_TEMPORAL = {
    FIELD_TYPE.TIME: "time",
    FIELD_TYPE.TIME2: "time",
    FIELD_TYPE.DATETIME: "datetime",
    FIELD_TYPE.DATETIME2: "datetime",
    FIELD_TYPE.TIMESTAMP: "timestamp",
    FIELD_TYPE.TIMESTAMP2: "timestamp",
}


def _is_binary(charset: str | None) -> bool:
    return charset is not None and charset.lower() == "binary"


def table_def_from_table_map(event: Any) -> TableDef:
    """A TableDef from a TableMapEvent parsed with FULL optional metadata."""
    nulls: bytes = event.null_bitmask
    columns: list[ColumnDef] = []
    for i, c in enumerate(event.columns):
        nullable = bool(nulls[i // 8] & (1 << (i % 8)))
        t = c.type
        charset = getattr(c, "character_set_name", None)
        kw: dict[str, Any] = {}
        if t in _INT_TYPES:
            name = _INT_TYPES[t]
        elif t in _SIMPLE_TYPES:
            name = _SIMPLE_TYPES[t]
            if t == FIELD_TYPE.ENUM:
                kw["values"] = tuple((c.enum_values or [""])[1:])
            elif t == FIELD_TYPE.SET:
                kw["values"] = tuple(c.set_values or ())
        elif t in _TEMPORAL:
            name = _TEMPORAL[t]
            kw["fsp"] = getattr(c, "fsp", 0) or 0
        elif t == FIELD_TYPE.NEWDECIMAL:
            name = "decimal"
            kw["length"], kw["scale"] = c.precision, c.decimals
        elif t == FIELD_TYPE.BIT:
            name = "bit"
            kw["length"] = c.bits
        elif t == FIELD_TYPE.STRING:
            name = "binary" if _is_binary(charset) else "char"
            kw["length"] = c.max_length
        elif t in (FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING):
            name = "varbinary" if _is_binary(charset) else "varchar"
        elif t in (FIELD_TYPE.BLOB, FIELD_TYPE.TINY_BLOB, FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB):
            name = "blob" if _is_binary(charset) else "text"
        else:
            name = f"binlog type {t}"
        columns.append(ColumnDef(c.name, name, nullable, bool(c.unsigned), charset=charset, **kw))
    om = event.optional_metadata
    if om.simple_primary_key_list:
        pk = tuple(columns[i].name for i in om.simple_primary_key_list)
    elif om.primary_keys_with_prefix:
        pk = tuple(columns[i].name for i in om.primary_keys_with_prefix)
    else:
        pk = ()
    return TableDef(event.schema, event.table, tuple(columns), pk)


_COLUMN_TYPE_VALUES = re.compile(r"'((?:[^']|'')*)'")


def table_def_from_information_schema(db: str, table: str, rows: list[dict[str, Any]], pk: list[str]) -> TableDef:
    """A TableDef from information_schema.COLUMNS rows (ORDER BY ORDINAL_POSITION)."""
    columns: list[ColumnDef] = []
    for r in rows:
        data_type = str(r["DATA_TYPE"]).lower()
        column_type = str(r["COLUMN_TYPE"]).lower()
        kw: dict[str, Any] = {}
        name = data_type
        if data_type in ("tinytext", "text", "mediumtext", "longtext"):
            name = "text"
        elif data_type in ("tinyblob", "blob", "mediumblob", "longblob"):
            name = "blob"
        elif data_type == "decimal":
            kw["length"], kw["scale"] = r["NUMERIC_PRECISION"], r["NUMERIC_SCALE"]
        elif data_type == "bit":
            kw["length"] = int(r["NUMERIC_PRECISION"] or 1)
        elif data_type == "binary":
            kw["length"] = int(r["CHARACTER_OCTET_LENGTH"] or 0)
        elif data_type in ("time", "datetime", "timestamp"):
            kw["fsp"] = int(r["DATETIME_PRECISION"] or 0)
        elif data_type in ("enum", "set"):
            kw["values"] = tuple(m.replace("''", "'") for m in _COLUMN_TYPE_VALUES.findall(str(r["COLUMN_TYPE"])))
        columns.append(
            ColumnDef(
                str(r["COLUMN_NAME"]),
                name,
                r["IS_NULLABLE"] == "YES",
                "unsigned" in column_type,
                charset=r["CHARACTER_SET_NAME"],
                **kw,
            )
        )
    return TableDef(db, table, tuple(columns), tuple(pk))


@dataclass(slots=True)
class TableSchema:
    """Everything needed to turn one row of one table version into key and value structs."""

    table: TableDef
    topic: str
    key_schema: Schema | None
    value_schema: Schema
    envelope: Envelope
    # (column name, converter) for each value field, in field order
    value_columns: list[tuple[str, Converter]]
    key_columns: list[tuple[str, Converter]]
    # Debezium's event.converting.failure.handling.mode for values that cannot be converted
    converting_failure: str = "warn"
    value: RowBuilder = field(init=False, repr=False)
    key: Callable[[dict[str, Any]], Struct | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.value = compile_row_builder(self.value_schema, self.value_columns, self.converting_failure)
        self.key = (
            compile_row_builder(self.key_schema, self.key_columns, self.converting_failure)
            if self.key_schema
            else _no_key
        )


def _no_key(row: dict[str, Any]) -> None:
    return None


class MySqlSchema:
    """Caches a TableSchema per table definition; a changed definition builds a new one.

    A rebuilt table (after any DDL naming it, or a TableDef of the snapshot's and then of the
    binlog's) whose key, value and envelope schemas come out equal to the last ones built for
    the table keeps those schema objects: records of one table version share their schemas, so
    converters find their cached encoders by identity instead of comparing schemas per record
    (Debezium's TableSchemaBuilder builds one schema per table version, as here).
    """

    def __init__(
        self,
        topics: TopicNamingStrategy,
        converters: MySqlValueConverters,
        source_schema: Schema,
        column_filter: Callable[[str, str, str], bool],
        mappers: ColumnMappers,
        key_columns: Callable[[str], tuple[str, ...] | None],
        options: SchemaOptions | None = None,
    ) -> None:
        self.options = options if options is not None else SchemaOptions()
        self.topics = topics
        self.converters = converters
        self.source_schema = source_schema
        self.column_filter = column_filter
        self.mappers = mappers
        self.key_columns = key_columns
        self._by_def: dict[TableDef, TableSchema] = {}
        self._last_built: dict[str, TableSchema] = {}  # by table id: the schemas a rebuild reuses when equal
        self.current: dict[str, TableDef] = {}
        # information_schema facts per table id (defaults, comments), from the snapshot and each DDL,
        # with the declared types of the DDL text seen laid over them
        self.meta: dict[str, TableMeta] = {}
        self.declared = DeclaredTypes()

    def observe_ddl(self, db: str | None, sql: str) -> None:
        """A DDL statement the schema history records (a streamed DDL, the snapshot's SHOW CREATE TABLE):
        the column types it declares (declared_types.py). Called before the tables it names are read
        from information_schema (set_meta)."""
        self.declared.observe(db, sql)

    def recover(self, history: list[dict[str, Any]]) -> None:
        """A restarted task: the declared types of the DDL in the schema history, as the task that wrote
        it had them, so its tables get the schemas the live run gave them."""
        self.declared.replay(history)

    def set_meta(self, table: TableDef, meta: TableMeta | None) -> None:
        """Records what information_schema says of `table` now; schemas built before are rebuilt on use."""
        if meta is None:
            self.meta.pop(table.id, None)
        else:
            self.meta[table.id] = self.options.table_meta(self.declared.table_meta(table.id, meta))
        for known in [d for d in self._by_def if d.id == table.id]:
            del self._by_def[known]

    def schema_for(self, table: TableDef) -> TableSchema:
        ts = self._by_def.get(table)
        if ts is None:
            ts = self._build(table)
            self._by_def[table] = ts
            self._last_built[table.id] = ts
        self.current[table.id] = table
        return ts

    def _build(self, table: TableDef) -> TableSchema:
        topic = self.topics.data_change_topic(table.db, table.name)
        value_name = self.options.schema_name(TopicNamingStrategy.value_schema_name(topic))
        value_builder = SchemaBuilder.struct().name(value_name).optional()
        value_columns: list[tuple[str, Converter]] = []
        by_name: dict[str, tuple[Schema, Converter]] = {}
        meta = self.meta.get(table.id)
        options = self.options
        for col in table.columns:
            column_id = f"{table.id}.{col.name}"
            column_meta = meta.columns.get(col.name) if meta is not None else None
            if column_meta is not None and column_meta.type != col.type and not _spatial(column_meta.type, col.type):
                column_meta = None  # written for another type: the reader lags behind an ALTER
            # The declared type (REAL, NUMERIC(5,2), FLOAT(10)) where DDL text declared it; a restarted
            # task that has not read information_schema yet has only that.
            column_meta = self.declared.column_meta(table.id, col, column_meta)
            custom = options.custom.column(column_id, col, column_meta)
            if custom is not None:  # a Debezium custom converter (TinyIntOneToBooleanConverter) takes the column
                builder, convert = custom
                schema = (builder.optional() if col.nullable else builder).build()
            else:
                schema, convert = self.converters.column(col, column_id, column_meta)
            if meta is not None:
                schema = _with_default(schema, convert, col, meta, column_id)
            by_name[col.name] = (schema, convert)
            if not self.column_filter(table.db, table.name, col.name):
                continue
            mapper = self.mappers.mapper_for(column_id)
            if mapper is not None:
                if self.mappers.is_mask(column_id):
                    schema = Schema.OPTIONAL_STRING_SCHEMA if col.nullable else Schema.STRING_SCHEMA
                convert = _compose(convert, mapper)
            hashing = options.hash_masks.rule_for(column_id)
            if hashing is not None:
                # Debezium's MaskStrings: character columns hold the salted hash; every match is marked.
                if col.type in STRING_TYPES:
                    length = column_meta.length if column_meta is not None else None
                    convert = _compose(convert, hashing.hasher(length))
                    schema = with_parameters(
                        Schema.OPTIONAL_STRING_SCHEMA if col.nullable else Schema.STRING_SCHEMA, {"masked": "true"}
                    )
                else:
                    schema = with_parameters(schema, {"masked": "true"})
            if options.propagates(column_id, table.id, column_meta):
                schema = with_parameters(schema, options.source_parameters(col.name, column_meta))
            value_builder.field(options.field_name(col.name), schema)
            value_columns.append((col.name, convert))
        value_schema = value_builder.build()
        key_names = self.key_columns(table.id) or table.primary_key
        key_schema: Schema | None = None
        key_columns: list[tuple[str, Converter]] = []
        if key_names:
            kb = SchemaBuilder.struct().name(options.schema_name(TopicNamingStrategy.key_schema_name(topic)))
            for name in key_names:
                if name not in by_name:
                    raise ConfigException(
                        f"message.key.columns names column {name!r}, which table {table.id} does not have "
                        f"(its columns: {', '.join(by_name)}); fix the entry for {table.id}",
                        "message.key.columns",
                    )
                schema, convert = by_name[name]
                if schema.optional:
                    schema = _required(schema)
                kb.field(options.field_name(name), schema)
                key_columns.append((name, convert))
            key_schema = kb.build()
        envelope_name = options.schema_name(TopicNamingStrategy.envelope_schema_name(topic))
        envelope: Envelope | None = None
        last = self._last_built.get(table.id)
        if last is not None:  # one compare per rebuild keeps the schema objects records already carry
            if last.value_schema == value_schema:
                value_schema = last.value_schema
                if last.envelope.source_schema is self.source_schema and last.envelope.schema.name == envelope_name:
                    envelope = last.envelope
            if key_schema is not None and last.key_schema == key_schema:
                key_schema = last.key_schema
        if envelope is None:
            envelope = Envelope.define(envelope_name, value_schema, self.source_schema)
        return TableSchema(
            table, topic, key_schema, value_schema, envelope, value_columns, key_columns, options.converting_failure
        )


def _spatial(*types: str) -> bool:
    """All spatial: the binlog's table map says GEOMETRY for POINT, LINESTRING, … alike."""
    return all(t in GEOMETRY_TYPES for t in types)


def _compose(first: Converter, second: Callable[[Any], Any]) -> Converter:
    return lambda v: second(first(v))


def _with_default(schema: Schema, convert: Converter, col: ColumnDef, meta: TableMeta, where: str) -> Schema:
    """`schema` carrying the column's default (Debezium's schema `default`); unchanged if there is none.

    A default that does not convert to the field's type is left out: it is metadata, never worth
    failing the task for.
    """
    column = meta.columns.get(col.name)
    if column is None or column.default is None or column.type != col.type:
        return schema
    try:
        value = convert(raw_default(col, column.default))
        if value is None:
            return schema
        return _copy(schema, schema.optional, value)
    except Exception as e:  # any parse or validation error: leave the default out
        log.debug("column %s: default %r left out of the schema (%s)", where, column.default, e)
        return schema


def _required(schema: Schema) -> Schema:
    return _copy(schema, False, schema.default_value)


def _copy(schema: Schema, optional: bool, default: object) -> Schema:
    return Schema(
        schema.type,
        optional=optional,
        default_value=default,
        name=schema.name,
        version=schema.version,
        doc=schema.doc,
        parameters=schema.parameters,
        fields=schema.fields,
    )

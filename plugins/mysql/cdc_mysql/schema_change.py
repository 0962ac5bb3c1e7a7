"""Schema change events on `<topic.prefix>` and the DDL classification they need."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cdc.api import Schema, SchemaBuilder, Struct
from cdc_mysql.catalog import JDBC_TYPES
from cdc_mysql.table import TableDef, TableMeta

KEY_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.mysql.SchemaChangeKey")
    .version(1)
    .field("databaseName", Schema.STRING_SCHEMA)
    .build()
)
COLUMN_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.schema.Column")
    .version(1)
    .field("name", Schema.STRING_SCHEMA)
    .field("jdbcType", Schema.INT32_SCHEMA)
    .field("nativeType", Schema.OPTIONAL_INT32_SCHEMA)
    .field("typeName", Schema.STRING_SCHEMA)
    .field("typeExpression", Schema.OPTIONAL_STRING_SCHEMA)
    .field("charsetName", Schema.OPTIONAL_STRING_SCHEMA)
    .field("length", Schema.OPTIONAL_INT32_SCHEMA)
    .field("scale", Schema.OPTIONAL_INT32_SCHEMA)
    .field("position", Schema.INT32_SCHEMA)
    .field("optional", Schema.OPTIONAL_BOOLEAN_SCHEMA)
    .field("autoIncremented", Schema.OPTIONAL_BOOLEAN_SCHEMA)
    .field("generated", Schema.OPTIONAL_BOOLEAN_SCHEMA)
    .field("comment", Schema.OPTIONAL_STRING_SCHEMA)
    .field("defaultValueExpression", Schema.OPTIONAL_STRING_SCHEMA)
    .field("enumValues", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
    .build()
)
TABLE_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.schema.Table")
    .version(1)
    .optional()
    .field("defaultCharsetName", Schema.OPTIONAL_STRING_SCHEMA)
    .field("primaryKeyColumnNames", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
    .field("columns", SchemaBuilder.array(COLUMN_SCHEMA).build())
    .field("comment", Schema.OPTIONAL_STRING_SCHEMA)
    .build()
)
CHANGE_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.schema.Change")
    .version(1)
    .field("type", Schema.STRING_SCHEMA)
    .field("id", Schema.STRING_SCHEMA)
    .field("table", TABLE_SCHEMA)
    .build()
)


def value_schema(source_schema: Schema) -> Schema:
    return (
        SchemaBuilder.struct()
        .name("io.debezium.connector.mysql.SchemaChangeValue")
        .version(1)
        .field("source", source_schema)
        .field("ts_ms", Schema.INT64_SCHEMA)
        .field("databaseName", Schema.OPTIONAL_STRING_SCHEMA)
        .field("schemaName", Schema.OPTIONAL_STRING_SCHEMA)
        .field("ddl", Schema.OPTIONAL_STRING_SCHEMA)
        .field("tableChanges", SchemaBuilder.array(CHANGE_SCHEMA).build())
        .build()
    )


def table_document(table: TableDef, meta: TableMeta | None) -> dict[str, Any]:
    """Debezium's table document (JsonTableChangeSerializer), for history records and change events.

    `meta` (information_schema) gives type names, defaults, comments; without it (a table known
    only from binlog metadata) the decoding definition alone fills what it can.
    """
    columns = []
    for i, c in enumerate(table.columns, 1):
        m = meta.columns.get(c.name) if meta is not None else None
        if m is not None and m.type != c.type:
            m = None  # information_schema describes a later version of this column
        type_name = m.type_name if m else c.type.upper() + (" UNSIGNED" if c.unsigned else "")
        doc: dict[str, Any] = {
            "name": c.name,
            "jdbcType": m.jdbc_type if m else JDBC_TYPES.get(c.type, 1111),
            "typeName": type_name,
            "typeExpression": type_name,
            "charsetName": c.charset,
            "length": m.length if m else c.length,
            "scale": m.scale if m else c.scale,
            "position": i,
            "optional": c.nullable,
            "autoIncremented": m.auto_incremented if m else False,
            "generated": m.generated if m else False,
            "comment": m.comment if m else None,
        }
        if doc["length"] is None:
            del doc["length"]
        if doc["scale"] is None:
            del doc["scale"]
        if m is not None and m.default is not None:
            doc["defaultValueExpression"] = m.default
        if c.values:
            doc["enumValues"] = list(c.values)
        columns.append(doc)
    return {
        "defaultCharsetName": meta.default_charset if meta else None,
        "primaryKeyColumnNames": list(table.primary_key),
        "columns": columns,
        "comment": meta.comment if meta else None,
    }


def table_struct(document: dict[str, Any]) -> Struct:
    """The `table` struct of a schema change event from `table_document`'s output."""
    names = [f.name for f in COLUMN_SCHEMA.fields]
    columns = [Struct.from_values(COLUMN_SCHEMA, [c.get(n) for n in names]) for c in document["columns"]]
    return Struct.from_values(
        TABLE_SCHEMA,
        [document["defaultCharsetName"], document["primaryKeyColumnNames"], columns, document["comment"]],
    )


@dataclass(frozen=True)
class DdlStatement:
    """What a DDL statement does, as far as events and filters need to know."""

    kind: str  # CREATE | ALTER | DROP | TRUNCATE | DATABASE | OTHER
    tables: tuple[tuple[str | None, str], ...]  # (db or None for the session db, table)
    # RENAME TABLE a TO b, c TO d / ALTER TABLE a RENAME TO b: the new name of each of `tables`
    renamed_to: tuple[tuple[str | None, str], ...] = ()


_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QNAME = rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?"
_PATTERNS = [
    (
        "CREATE",
        re.compile(
            rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{_QNAME}", re.I
        ),
    ),
    ("ALTER", re.compile(rf"^\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+(?:IF\s+EXISTS\s+)?{_QNAME}", re.I)),
    ("DROP", re.compile(rf"^\s*DROP\s+(?:TEMPORARY\s+)?TABLES?\s+(?:IF\s+EXISTS\s+)?{_QNAME}", re.I)),
    ("TRUNCATE", re.compile(rf"^\s*TRUNCATE\s+(?:TABLE\s+)?{_QNAME}", re.I)),
]  # fmt: skip
_RENAME_TABLE = re.compile(r"^\s*RENAME\s+TABLES?\s+", re.I)
_RENAME_PAIR = re.compile(rf"\s*,?\s*{_QNAME}\s+TO\s+{_QNAME}", re.I)
# ALTER TABLE a RENAME [TO|AS] b (not RENAME COLUMN/INDEX/KEY)
_ALTER_RENAME = re.compile(rf"(?:^|,)\s*RENAME\s+(?:(?:TO|AS)\s+)?(?!(?:COLUMN|INDEX|KEY)\b){_QNAME}", re.I)
_STRING = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"", re.S)
_DROP_MORE = re.compile(rf"\s*,\s*{_QNAME}", re.I)
_DATABASE = re.compile(r"^\s*(CREATE|DROP|ALTER)\s+(DATABASE|SCHEMA)\b", re.I)
_COMMENT = re.compile(r"/\*.*?\*/|--[^\n]*\n|#[^\n]*\n", re.S)


def _unquote(ident: str) -> str:
    return ident[1:-1].replace("``", "`") if ident.startswith("`") else ident


def _name(a: str, b: str | None) -> tuple[str | None, str]:
    return (_unquote(a), _unquote(b)) if b else (None, _unquote(a))


def classify(sql: str) -> DdlStatement:
    text = _COMMENT.sub(" ", sql)
    m = _RENAME_TABLE.match(text)
    if m:
        # RENAME TABLE a TO b, c TO d: each old name with its new one.
        olds, news = [], []
        pos = m.end()
        while pair := _RENAME_PAIR.match(text, pos):
            olds.append(_name(pair.group(1), pair.group(2)))
            news.append(_name(pair.group(3), pair.group(4)))
            pos = pair.end()
        return DdlStatement("ALTER", tuple(olds), tuple(news)) if olds else DdlStatement("OTHER", ())
    for kind, pattern in _PATTERNS:
        m = pattern.match(text)
        if m:
            tables = [_name(m.group(1), m.group(2))]
            if kind == "DROP":
                pos = m.end()
                while more := _DROP_MORE.match(text, pos):
                    tables.append(_name(more.group(1), more.group(2)))
                    pos = more.end()
            if kind == "ALTER" and (r := _ALTER_RENAME.search(_STRING.sub("''", text[m.end() :]))):
                return DdlStatement(kind, tuple(tables), (_name(r.group(1), r.group(2)),))
            return DdlStatement(kind, tuple(tables))
    if _DATABASE.match(text):
        return DdlStatement("DATABASE", ())
    return DdlStatement("OTHER", ())


def source_table(stmt: DdlStatement) -> str | None:
    """`source.table` of the statement's schema change event, as Debezium's BinlogSourceInfo.table() writes
    it: every table the statement changes, comma-separated without database (`DROP TABLE t1,t2` is
    "t1,t2"); a rename names the new tables (`RENAME TABLE a TO b, c TO d` is "b,d"), as Debezium's
    TableAlteredEvent does. Debezium joins a hash set (any order); here it is the statement's order,
    each name once. None for a statement naming no table (CREATE DATABASE)."""
    names = dict.fromkeys(t for _, t in (stmt.renamed_to or stmt.tables))
    return ",".join(names) or None


_NOT_DDL = re.compile(
    r"^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE\s+SAVEPOINT|XA\s|SET\s|FLUSH\s|ANALYZE\s|OPTIMIZE\s|GRANT\s|"
    r"REVOKE\s|CREATE\s+USER|DROP\s+USER|ALTER\s+USER|RENAME\s+USER|INSERT\s|UPDATE\s|DELETE\s|REPLACE\s)",
    re.I,
)


def is_ddl(sql: str) -> bool:
    """Statements that reach the binlog as QUERY events but change no table structure are not DDL."""
    return not _NOT_DDL.match(_COMMENT.sub(" ", sql))

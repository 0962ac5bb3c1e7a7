"""information_schema reads: table definitions with the metadata Debezium's schema history carries.

Used by the snapshot (every captured table) and after each DDL read from the binlog (the
tables it names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pymysql.cursors

from cdc_mysql.defaults import default_expression
from cdc_mysql.schema import table_def_from_information_schema
from cdc_mysql.table import ColumnDef, ColumnMeta, TableDef, TableMeta

# java.sql.Types codes Debezium puts in `jdbcType`, by information_schema DATA_TYPE.
JDBC_TYPES = {
    "bool": 16, "boolean": 16, "bit": -7, "tinyint": 5, "smallint": 5, "mediumint": 4, "int": 4,
    "integer": 4, "bigint": -5, "decimal": 3, "numeric": 2, "float": 6, "double": 8, "real": 7, "char": 1,
    "varchar": 12, "tinytext": 12, "text": 12, "mediumtext": 12, "longtext": 12, "binary": -2,
    "varbinary": -3, "tinyblob": 2004, "blob": 2004, "mediumblob": 2004, "longblob": 2004, "enum": 1,
    "set": 1, "json": 1111, "date": 91, "time": 92, "datetime": 93, "timestamp": 2014, "year": 4,
    "geometry": 1111, "point": 1111, "linestring": 1111, "polygon": 1111, "multipoint": 1111,
    "multilinestring": 1111, "multipolygon": 1111, "geometrycollection": 1111, "uuid": 1,
}  # fmt: skip
_ARGS = re.compile(r"^[a-z ]+\((\d+)(?:\s*,\s*(\d+))?\)")


def _column_meta(r: dict[str, Any], col: ColumnDef, is_mariadb: bool) -> ColumnMeta:
    data_type = str(r["DATA_TYPE"]).lower()
    column_type = str(r["COLUMN_TYPE"]).lower()
    extra = str(r.get("EXTRA") or "")
    type_name = data_type.upper() + (" UNSIGNED" if "unsigned" in column_type else "")
    length = scale = None
    m = _ARGS.match(column_type)
    if m and data_type not in ("enum", "set"):
        length = int(m.group(1))
        scale = int(m.group(2)) if m.group(2) is not None else None
    if data_type in ("enum", "set"):
        length = 1
    auto = "auto_increment" in extra.lower()
    generated = auto or "GENERATED" in extra.upper() or bool(r.get("GENERATION_EXPRESSION"))
    return ColumnMeta(
        type=col.type,
        type_name=type_name,
        jdbc_type=JDBC_TYPES.get(data_type, 1111),
        length=length,
        scale=scale,
        auto_incremented=auto,
        generated=generated,
        comment=str(r.get("COLUMN_COMMENT") or "") or None,
        default=None if auto else default_expression(r.get("COLUMN_DEFAULT"), extra, col.nullable, is_mariadb),
    )


def read_tables(
    conn: pymysql.connections.Connection, names: Iterable[tuple[str, str]], is_mariadb: bool
) -> list[tuple[TableDef, TableMeta]]:
    """Definitions and metadata of `names` (db, table), in that order; tables that do not exist are left out."""
    out: list[tuple[TableDef, TableMeta]] = []
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        for db, name in names:
            cur.execute(
                "SELECT t.TABLE_COMMENT, c.CHARACTER_SET_NAME FROM information_schema.TABLES t "
                "LEFT JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = t.TABLE_COLLATION "
                "WHERE t.TABLE_SCHEMA = %s AND t.TABLE_NAME = %s",
                (db, name),
            )
            table_row = cur.fetchone()
            if table_row is None:
                continue
            cur.execute(
                "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                "ORDER BY ORDINAL_POSITION",
                (db, name),
            )
            rows = list(cur.fetchall())
            cur.execute(
                "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
                "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
                (db, name),
            )
            pk = [str(r["COLUMN_NAME"]) for r in cur.fetchall()]
            table = table_def_from_information_schema(db, name, rows, pk)
            columns = {c.name: _column_meta(r, c, is_mariadb) for r, c in zip(rows, table.columns, strict=True)}
            meta = TableMeta(
                default_charset=table_row["CHARACTER_SET_NAME"],
                comment=str(table_row["TABLE_COMMENT"] or "") or None,
                columns=columns,
            )
            out.append((table, meta))
    return out

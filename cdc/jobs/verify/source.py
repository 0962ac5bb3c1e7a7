"""Reading the source database: captured tables, their columns (as `Column` kinds), keys and rows.

Rows stream through server-side cursors, so a table of any size reads in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from cdc.api.errors import ConfigException
from cdc.jobs.source_db import first_line, mysql_params, postgres_params, tls_fix
from cdc.jobs.spec import source_family
from cdc.jobs.verify.normalize import Column, literal_default

if TYPE_CHECKING:
    from cdc.jobs.verify.scope import TableScope, Where

FETCH = 5000
_MYSQL_SYSTEM = {"mysql", "information_schema", "performance_schema", "sys"}
_PG_SYSTEM = {"pg_catalog", "information_schema", "pg_toast"}


@dataclass(frozen=True)
class SourceTable:
    schema: str  # the MySQL database or the PostgreSQL schema
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


class SourceReader(Protocol):
    family: str

    def tables(self) -> list[SourceTable]: ...

    def columns(self, table: SourceTable) -> list[Column]: ...

    def primary_key(self, table: SourceTable) -> list[str]: ...

    def rows(
        self, table: SourceTable, columns: list[Column], scope: TableScope | None = None
    ) -> Iterator[tuple[Any, ...]]:
        """The table's rows of `columns`; with a `scope`, those its range and sample select (as much of
        them as the database can select, scope.py: the caller applies the scope itself too)."""
        ...

    def sql_expr(self, column: Column) -> str:
        """How a query with parameters reads the column (quoted, its `%` doubled)."""
        ...

    def nth_smallest(self, table: SourceTable, expr: Where, where: Where | None, n: int) -> list[Any]:
        """The `n`-th and `n+1`-th smallest values of `expr` over the table's rows (fewer if it has fewer)."""
        ...

    def has_rows(self, table: SourceTable) -> bool: ...

    def close(self) -> None: ...


def _list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(i).strip() for i in items if str(i).strip()]


def filters(source: Mapping[str, Any]) -> dict[str, Any]:
    """The job's include/exclude lists as predicates (Debezium's anchored, case-insensitive regexes)."""
    from cdc_debezium.filters import include_exclude

    props = {
        k: _list(source.get(k))
        for k in (
            "database.include.list",
            "database.exclude.list",
            "schema.include.list",
            "schema.exclude.list",
            "table.include.list",
            "table.exclude.list",
            "column.include.list",
            "column.exclude.list",
        )
    }
    return {
        "database": include_exclude(props, "database.include.list", "database.exclude.list"),
        "schema": include_exclude(props, "schema.include.list", "schema.exclude.list"),
        "table": include_exclude(props, "table.include.list", "table.exclude.list"),
        "column": include_exclude(props, "column.include.list", "column.exclude.list"),
    }


def family(connector_class: str) -> str:
    if (found := source_family(connector_class)) is not None:
        return found
    raise ConfigException(
        f"cdc verify reads MySQL/MariaDB and PostgreSQL sources, not {connector_class!r}", "source.connector.class"
    )


def _refused(family: str, source: Mapping[str, Any], params: Mapping[str, Any], e: Exception) -> ConfigException:
    """A refused connection as one line: the TLS keys to fix when TLS refused it, else the login keys."""
    where = f"{params['host']}:{params['port']}"
    if fix := tls_fix(family, source, e):
        return ConfigException(f"cannot connect to the source database at {where} ({first_line(e)}); {fix}", None)
    keys = "hostname/port/user/password" + ("/dbname" if family == "postgres" else "")
    return ConfigException(
        f"cannot connect to the source database at {where} ({first_line(e)}); check source.database.{keys} and that "
        "the server is running",
        "source.database.hostname",
    )


def _q(name: str, quote: str) -> str:
    return quote + name.replace(quote, quote * 2) + quote


def _select(columns: str, ref: str, where: Where | None) -> tuple[str, list[Any] | None]:
    """`SELECT columns FROM ref [WHERE …]` and its parameters; `columns` and `ref` are written with their
    `%` doubled, as a query with parameters needs them (undone when there are none)."""
    if where is None:
        return f"SELECT {columns} FROM {ref}".replace("%%", "%"), None
    return f"SELECT {columns} FROM {ref} WHERE {where[0]}", where[1]


def _nth(ranked: Where, ref: str, where: Where | None, n: int) -> tuple[str, list[Any]]:
    """The query of `nth_smallest`: ORDER BY … LIMIT, which both databases run as a bounded top-N sort."""
    clause = f" WHERE {where[0]}" if where is not None else ""
    params = [*ranked[1], *(where[1] if where is not None else []), max(n - 1, 0)]
    return f"SELECT r FROM (SELECT {ranked[0]} AS r FROM {ref}{clause}) ranked ORDER BY r LIMIT 2 OFFSET %s", params


# -- MySQL / MariaDB ------------------------------------------------------------------------------
class MySqlSource:
    family = "mysql"

    def __init__(self, source: Mapping[str, Any]) -> None:
        import pymysql

        self.source = source
        self.time_mode = str(source.get("time.precision.mode", "adaptive_time_microseconds")).lower()
        self.decimal_mode = str(source.get("decimal.handling.mode", "precise")).lower()
        self.binary_mode = str(source.get("binary.handling.mode", "bytes")).lower()
        self.bigint_mode = str(source.get("bigint.unsigned.handling.mode", "long")).lower()
        params = mysql_params(
            source,
            charset="utf8mb4",
            connect_timeout=10,
            init_command="SET time_zone = '+00:00'",  # TIMESTAMP values in UTC, as Debezium emits them
        )
        try:
            self.conn = pymysql.connect(**params)  # TLS as the connector's (database.ssl.*)
        except pymysql.Error as e:
            raise _refused("mysql", source, params, e) from None

    def _query(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def tables(self) -> list[SourceTable]:
        f = filters(self.source)
        rows = self._query(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' ORDER BY table_schema, table_name"
        )
        return [
            SourceTable(db, t)
            for db, t in rows
            if db.lower() not in _MYSQL_SYSTEM and f["database"](db) and f["table"](f"{db}.{t}")
        ]

    def columns(self, table: SourceTable) -> list[Column]:
        rows = self._query(
            "SELECT column_name, data_type, column_type, is_nullable, numeric_precision, datetime_precision, "
            "column_default, extra FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position",
            (table.schema, table.name),
        )
        return [self._column(*r) for r in rows]

    def _column(
        self, name: str, dtype: str, ctype: str, nullable: str, precision: Any, fsp: Any, default: Any, extra: Any
    ) -> Column:
        dtype = dtype.lower()
        kind: str | None
        unit = "us"
        if dtype == "bigint" and "unsigned" in ctype.lower() and self.bigint_mode == "long":
            kind = "uint64"  # compared as the connector emits it (see normalize._wrapped64)
        elif dtype in ("tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year"):
            kind = "int"
        elif dtype in ("decimal", "numeric"):
            kind = "decimal"
        elif dtype == "float":
            kind = "float32"
        elif dtype in ("double", "real"):
            kind = "float"
        elif dtype == "bit":
            kind = "bool" if int(precision or 1) == 1 else "bits"
        elif dtype in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum"):
            kind = "text"
        elif dtype == "set":
            kind = "set"
        elif dtype in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
            kind = "bytes"
        elif dtype == "json":
            kind = "json"
        elif dtype == "date":
            kind = "date"
        elif dtype == "datetime":
            kind = "datetime"
            if self.time_mode == "connect" or (self.time_mode != "isostring" and int(fsp or 0) <= 3):
                unit = "ms"
        elif dtype == "timestamp":
            kind = "timestamptz"
        elif dtype == "time":
            kind = "time"
            unit = "ms" if self.time_mode == "connect" else "us"
        else:
            kind = None  # geometry and friends
        generated = "DEFAULT_GENERATED" in str(extra or "").upper()
        return Column(
            name,
            kind,
            ctype,
            nullable == "YES",
            unit,
            self.decimal_mode,
            self.binary_mode,
            default=literal_default(default, generated),
        )

    def primary_key(self, table: SourceTable) -> list[str]:
        rows = self._query(
            "SELECT column_name FROM information_schema.key_column_usage WHERE table_schema = %s "
            "AND table_name = %s AND constraint_name = 'PRIMARY' ORDER BY ordinal_position",
            (table.schema, table.name),
        )
        return [r[0] for r in rows]

    def sql_expr(self, column: Column) -> str:
        return _q(column.name, "`").replace("%", "%%")

    def _ref(self, table: SourceTable) -> str:
        return f"{_q(table.schema, '`')}.{_q(table.name, '`')}".replace("%", "%%")

    def rows(
        self, table: SourceTable, columns: list[Column], scope: TableScope | None = None
    ) -> Iterator[tuple[Any, ...]]:
        import pymysql.cursors

        where = scope.source_where(self.family, self.sql_expr) if scope is not None else None
        query, params = _select(", ".join(self.sql_expr(c) for c in columns), self._ref(table), where)
        with self.conn.cursor(pymysql.cursors.SSCursor) as cur:
            cur.execute(query, params)
            while batch := cur.fetchmany(FETCH):
                yield from batch

    def nth_smallest(self, table: SourceTable, expr: Where, where: Where | None, n: int) -> list[Any]:
        return [r[0] for r in self._query(*_nth(expr, self._ref(table), where, n))]

    def has_rows(self, table: SourceTable) -> bool:
        return bool(self._query(f"SELECT 1 FROM {_q(table.schema, '`')}.{_q(table.name, '`')} LIMIT 1"))

    def wraps(self, table: SourceTable, column: str) -> bool:
        """Whether a BIGINT UNSIGNED column holds values the connector's long mode wraps."""
        ref = f"{_q(table.schema, '`')}.{_q(table.name, '`')}"
        return bool(self._query(f"SELECT 1 FROM {ref} WHERE {_q(column, '`')} > 9223372036854775807 LIMIT 1"))

    def close(self) -> None:
        self.conn.close()


# -- PostgreSQL -------------------------------------------------------------------------------------
_PG_TEXT = {"bpchar", "varchar", "text", "name", "char"}  # not cast: char(n)::text drops the padding
_PG_AS_TEXT = {
    "citext",
    "xml",
    "uuid",
    "ltree",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "int4range",
    "int8range",
    "numrange",
    "tsrange",
    "tstzrange",
    "daterange",
}


class PostgresSource:
    family = "postgres"

    def __init__(self, source: Mapping[str, Any]) -> None:
        import psycopg

        self.source = source
        self.time_mode = str(source.get("time.precision.mode", "adaptive")).lower()
        self.decimal_mode = str(source.get("decimal.handling.mode", "precise")).lower()
        self.binary_mode = str(source.get("binary.handling.mode", "bytes")).lower()
        params = postgres_params(source, connect_timeout=10, autocommit=True)
        try:
            self.conn = psycopg.connect(**params)  # TLS as the connector's (database.ssl*)
        except psycopg.Error as e:
            raise _refused("postgres", source, params, e) from None

    def tables(self) -> list[SourceTable]:
        f = filters(self.source)
        rows = self.conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' ORDER BY 1, 2"
        ).fetchall()
        return [
            SourceTable(s, t)
            for s, t in rows
            if s not in _PG_SYSTEM and not s.startswith("pg_") and f["schema"](s) and f["table"](f"{s}.{t}")
        ]

    def _regclass(self, table: SourceTable) -> str:
        return f"{_q(table.schema, chr(34))}.{_q(table.name, chr(34))}"

    def columns(self, table: SourceTable) -> list[Column]:
        rows = self.conn.execute(
            "SELECT a.attname, t.typname, t.typtype, t.typcategory, a.atttypmod, NOT a.attnotnull, "
            "format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a "
            "JOIN pg_type t ON t.oid = a.atttypid "
            "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            (self._regclass(table),),
        ).fetchall()
        return [self._column(*r) for r in rows]

    def _column(
        self, name: str, typ: str, typtype: str, cat: str, typmod: int, nullable: bool, fmt: str, default: str | None
    ) -> Column:
        kind: str | None
        unit = "us"
        select = None
        ident = _q(name, '"')
        fsp = typmod if typmod is not None and typmod >= 0 else 6
        if typtype == "e":
            kind, select = "text", f"{ident}::text"
        elif cat == "A":
            kind = "array"
        elif typ in ("int2", "int4", "int8", "oid"):
            kind = "int"
        elif typ == "float4":
            kind = "float32"
        elif typ == "float8":
            kind = "float"
        elif typ == "numeric":
            kind = "decimal"
        elif typ == "money":
            kind, select = "decimal", f"{ident}::numeric"
        elif typ == "bool":
            kind = "bool"
        elif typ in ("bit", "varbit"):
            kind = "bool" if typ == "bit" and typmod == 1 else "bits"
            select = f"{ident}::text"
        elif typ in _PG_TEXT:
            kind = "text"
        elif typ in _PG_AS_TEXT:
            kind, select = "text", f"{ident}::text"
        elif typ == "bytea":
            kind = "bytes"
        elif typ in ("json", "jsonb"):
            kind, select = "json", f"{ident}::text"
        elif typ == "date":
            kind = "date"
        elif typ == "time":
            kind = "time"
            unit = "ms" if self.time_mode == "connect" or (self.time_mode == "adaptive" and fsp <= 3) else "us"
        elif typ == "timestamp":
            kind = "datetime"
            unit = "ms" if self.time_mode == "connect" or fsp <= 3 else "us"
        elif typ == "timestamptz":
            kind = "timestamptz"
        elif typ == "timetz":
            kind = "timetz"
        else:
            kind = None  # interval, point, hstore, domains...
        return Column(
            name, kind, fmt, bool(nullable), unit, self.decimal_mode, self.binary_mode, select, literal_default(default)
        )

    def primary_key(self, table: SourceTable) -> list[str]:
        rows = self.conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(%s) AND i.indisprimary "
            "ORDER BY array_position(i.indkey::int2[], a.attnum)",
            (self._regclass(table),),
        ).fetchall()
        return [r[0] for r in rows]

    def sql_expr(self, column: Column) -> str:
        return (column.select or _q(column.name, '"')).replace("%", "%%")

    def rows(
        self, table: SourceTable, columns: list[Column], scope: TableScope | None = None
    ) -> Iterator[tuple[Any, ...]]:
        _infinite_dates(self.conn)
        where = scope.source_where(self.family, self.sql_expr) if scope is not None else None
        ref = self._regclass(table).replace("%", "%%")
        query, params = _select(", ".join(self.sql_expr(c) for c in columns), ref, where)
        with self.conn.transaction(), self.conn.cursor(name="cdc_verify") as cur:
            cur.itersize = FETCH
            cur.execute(query, params)  # type: ignore[arg-type]
            yield from cur

    def nth_smallest(self, table: SourceTable, expr: Where, where: Where | None, n: int) -> list[Any]:
        query, params = _nth(expr, self._regclass(table).replace("%", "%%"), where, n)
        return [r[0] for r in self.conn.execute(query, params).fetchall()]  # type: ignore[arg-type]

    def has_rows(self, table: SourceTable) -> bool:
        return self.conn.execute(f"SELECT 1 FROM {self._regclass(table)} LIMIT 1").fetchone() is not None  # type: ignore[arg-type]

    def close(self) -> None:
        self.conn.close()


def _infinite_dates(conn: Any) -> None:
    """Read PostgreSQL's ±infinity dates and timestamps as the text 'infinity' / '-infinity'
    (psycopg cannot make Python dates of them and would fail the whole table)."""
    from psycopg.types.datetime import DateLoader, TimestampLoader, TimestamptzLoader

    for name, base in (("date", DateLoader), ("timestamp", TimestampLoader), ("timestamptz", TimestamptzLoader)):

        class Loader(base):  # type: ignore[valid-type, misc]
            def load(self, data: Any) -> Any:
                text = bytes(data)
                return text.decode() if text in (b"infinity", b"-infinity") else super().load(data)

        conn.adapters.register_loader(name, Loader)


def open_source(source: Mapping[str, Any]) -> SourceReader:
    fam = family(str(source.get("connector.class", "")))
    return MySqlSource(source) if fam == "mysql" else PostgresSource(source)

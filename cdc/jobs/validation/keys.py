"""Every table the sink applies has a record key, and `keys` name real columns (online checks).

The sink upserts and deletes by the change event's record key: the table's primary key, or
the columns `message.key.columns` names (a job's `sink.tables.<t>.keys` become that setting,
cdc/jobs/run.py). A table without either gets events with no key, and the run stopped ~30 s
in with "no record key"; `keys` naming a column the table lacks stopped it at the connector's
start. Both are questions for the source database, so they are asked when `cdc validate`
reaches it (not under `--offline`), with the connector's rule for a key: MySQL/MariaDB the
primary key (cdc_mysql/schema.py reads it from the binlog's metadata); PostgreSQL the primary
key or else a unique index without expressions (Debezium's, cdc_postgres/schema.py).
(`cdc verify`'s reader asks the same catalogs, but the job layer's import order keeps
validation from importing verify.) The same pass looks up the columns a table's AUTO CDC
options name (validation/table_options.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.jobs.source_db import mysql_params, postgres_params
from cdc.jobs.spec import source_family
from cdc.jobs.validation.problems import Collector, did_you_mean
from cdc.jobs.validation.sink import routes_topics
from cdc.jobs.validation.source import debezium_source
from cdc.jobs.validation.table_options import check_option_columns

_KEYLESS_SINKS = ("parquet",)  # a changelog appends every event: no key needed
_LISTED = 8  # columns named in a message


def check_table_keys(job: dict[str, Any], out: Collector) -> None:
    """For each `sink.tables` entry of a keyed sink: its `keys` are columns of the table, and the
    table has a key at all (a primary key, `keys`, or a `message.key.columns` entry)."""
    sink = job.get("sink") or {}
    tables = sink.get("tables") or {}
    if not tables or sink.get("type") in _KEYLESS_SINKS or not debezium_source(job) or routes_topics(job):
        return
    from cdc_debezium.key_columns import KeyColumns

    source = job["source"]
    family = source_family(str(source.get("connector.class", "")))
    postgres = family == "postgres"
    try:
        configured = KeyColumns.parse(source.get("message.key.columns"), case_sensitive=postgres)
        catalog = _PostgresCatalog(source) if postgres else _MySqlCatalog(source)
    except Exception:  # a malformed setting or a refused login: the connector's own checks reported it
        return
    try:
        for name, options in tables.items():
            schema, _, table = str(name).partition(".")
            columns = catalog.columns(schema, table)
            if not columns:
                continue  # check_sink_tables names a table the source does not capture
            keys = [str(k) for k in (options or {}).get("keys") or []]
            if not _keys_exist(name, keys, columns, postgres, out):
                continue
            if "message.key.columns" in source:  # it wins over keys (run.py passes keys only without it)
                keys = list(configured.for_table(str(name)) or ())
            key_columns = _spelled(keys, columns, postgres) if keys else catalog.primary_key(schema, table)
            check_option_columns(job, name, columns, key_columns, out)  # column_list & co. name real columns
            if not keys and not catalog.has_key(schema, table):
                keyless = "no primary key or unique index" if postgres else "no primary key"
                out.add(
                    ("sink", "tables", name),
                    f"table {name} has {keyless}, so its change events carry no record key and the sink "
                    f"cannot apply them; give sink.tables['{name}'].keys: [columns that identify a row] "
                    f"(of {_listed(columns)}), or add a primary key to the table",
                )
    finally:
        catalog.close()


class _MySqlCatalog:
    """A table's columns and whether it has a primary key, from information_schema."""

    def __init__(self, source: Mapping[str, Any]) -> None:
        import pymysql

        self.conn = pymysql.connect(**mysql_params(source, connect_timeout=5))

    def _rows(self, sql: str, args: tuple[str, ...]) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def columns(self, schema: str, table: str) -> list[str]:
        return [
            str(r[0])
            for r in self._rows(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                "ORDER BY ordinal_position",
                (schema, table),
            )
        ]

    def primary_key(self, schema: str, table: str) -> list[str]:
        return [
            str(r[0])
            for r in self._rows(
                "SELECT column_name FROM information_schema.key_column_usage WHERE table_schema = %s "
                "AND table_name = %s AND constraint_name = 'PRIMARY' ORDER BY ordinal_position",
                (schema, table),
            )
        ]

    def has_key(self, schema: str, table: str) -> bool:
        return bool(
            self._rows(
                # key_column_usage, not table_constraints: MariaDB shows a user with SELECT only the former
                "SELECT 1 FROM information_schema.key_column_usage WHERE table_schema = %s AND table_name = %s "
                "AND constraint_name = 'PRIMARY' LIMIT 1",
                (schema, table),
            )
        )

    def close(self) -> None:
        self.conn.close()


class _PostgresCatalog:
    """A table's columns and whether it has a primary key or a unique index without expressions."""

    def __init__(self, source: Mapping[str, Any]) -> None:
        import psycopg

        self.conn = psycopg.connect(**postgres_params(source, connect_timeout=5, autocommit=True))

    @staticmethod
    def _regclass(schema: str, table: str) -> str:
        return ".".join('"' + part.replace('"', '""') + '"' for part in (schema, table))

    def columns(self, schema: str, table: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped "
            "ORDER BY attnum",
            (self._regclass(schema, table),),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def primary_key(self, schema: str, table: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey::int2[]) WHERE i.indrelid = to_regclass(%s) AND i.indisprimary "
            "ORDER BY array_position(i.indkey::int2[], a.attnum)",
            (self._regclass(schema, table),),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def has_key(self, schema: str, table: str) -> bool:
        return (
            self.conn.execute(
                "SELECT 1 FROM pg_index WHERE indrelid = to_regclass(%s) AND indisunique AND indexprs IS NULL",
                (self._regclass(schema, table),),
            ).fetchone()
            is not None
        )

    def close(self) -> None:
        self.conn.close()


def _keys_exist(name: Any, keys: list[str], columns: list[str], case_sensitive: bool, out: Collector) -> bool:
    """Each of `keys` is a column of the table (MySQL compares column names case-insensitively)."""
    known = set(columns) if case_sensitive else {c.lower() for c in columns}
    ok = True
    for i, key in enumerate(keys):
        if (key if case_sensitive else key.lower()) not in known:
            out.add(
                ("sink", "tables", name, "keys", i),
                f"table {name} has no column {key!r}{did_you_mean(key, columns)}; name columns of the table "
                f"({_listed(columns)})",
            )
            ok = False
    return ok


def _spelled(keys: list[str], columns: list[str], case_sensitive: bool) -> list[str]:
    """`keys` as the table spells its columns (MySQL matches column names case-insensitively)."""
    if case_sensitive:
        return keys
    by_lower = {c.lower(): c for c in columns}
    return [by_lower.get(k.lower(), k) for k in keys]


def _listed(columns: list[str]) -> str:
    more = f" and {len(columns) - _LISTED} more" if len(columns) > _LISTED else ""
    return ", ".join(columns[:_LISTED]) + more

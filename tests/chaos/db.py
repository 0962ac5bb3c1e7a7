"""The two source dialects behind one small interface: connect, adapt values, classify errors.

The writer and the comparison talk to MariaDB (pymysql) and PostgreSQL (psycopg) through
this, so the workload and the checks are written once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg
import pymysql
from psycopg.types.json import Jsonb

from tests.chaos.schema import JSON, Column
from tests.rig import MariaDbServer, PostgresServer

# pymysql codes after which a new connection (and a retry) is the answer: the server went away,
# was shut down or killed us, a lock wait gave up, or a deadlock chose this transaction.
_MYSQL_TRANSIENT = {1053, 1205, 1213, 1927, 2003, 2006, 2013, 2055, 4031}


@dataclass(frozen=True)
class SourceDb:
    """A source database of the chaos run: `dialect` is "mysql" or "pg"."""

    server: MariaDbServer | PostgresServer

    @property
    def dialect(self) -> str:
        return "mysql" if isinstance(self.server, MariaDbServer) else "pg"

    def connect(self, *, autocommit: bool = False, timeout: int = 5) -> Any:
        if isinstance(self.server, MariaDbServer):
            return self.server.connect(autocommit=autocommit, connect_timeout=timeout, read_timeout=120)
        return self.server.connect(autocommit=autocommit, connect_timeout=timeout)

    def adapt(self, col: Column, value: Any) -> Any:
        """A Python value as a query parameter of this column."""
        if col.kind != JSON or value is None:
            return value
        if self.dialect == "pg":
            return Jsonb(value)
        return json.dumps(value, ensure_ascii=False)

    def transient(self, e: BaseException) -> bool:
        """The connection is gone or the transaction lost a lock: reconnect and carry on."""
        if isinstance(e, (ConnectionError, TimeoutError)):
            return True
        if self.dialect == "pg":
            return isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError))
        if isinstance(e, pymysql.err.InterfaceError):
            return True
        return isinstance(e, pymysql.err.OperationalError) and bool(e.args) and e.args[0] in _MYSQL_TRANSIENT

    def conflict(self, e: BaseException) -> bool:
        """A duplicate key: the writer's idea of which keys exist went stale (after a crash)."""
        return isinstance(e, (pymysql.err.IntegrityError, psycopg.IntegrityError))

    def column_defaults(self, conn: Any, table: str) -> dict[str, str | None]:
        """Column name → its DEFAULT expression as the catalog shows it (None: no default)."""
        schema = "DATABASE()" if self.dialect == "mysql" else "'public'"
        sql = (
            "SELECT column_name, column_default FROM information_schema.columns"
            f" WHERE table_schema = {schema} AND table_name = %s"
        )
        with conn.cursor() as cur:
            cur.execute(sql, (table,))
            # MariaDB shows a nullable column without a DEFAULT as the text 'NULL'.
            return {
                str(name).lower(): None if d is None or str(d).upper() == "NULL" else str(d)
                for name, d in cur.fetchall()
            }

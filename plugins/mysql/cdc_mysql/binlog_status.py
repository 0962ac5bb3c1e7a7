"""The server's current binlog position: the one place that knows how to ask for it.

MySQL 8.2 renamed `SHOW MASTER STATUS` to `SHOW BINARY LOG STATUS` and 8.4 removed the old
name (it is a syntax error there, ER_PARSE_ERROR 1064); MariaDB and MySQL before 8.2 know only
the old one. Both answer with `File` and `Position` as their first two columns. The connector
(`MySqlConnection.master_status`) and `cdc run --until-caught-up` (cdc.jobs.run) read the
position through `current_binlog_position`, so neither misses a server version the other handles.

This module imports only PyMySQL's error classes: callers pass any DB-API cursor (plain or
dict rows) on a connection they opened themselves.
"""

from __future__ import annotations

from typing import Any, Protocol

import pymysql

# Newest first would warn on MySQL 8.2/8.3 less, but MariaDB (every version) and MySQL < 8.2
# know only the old name: asking it first costs those servers no failed statement.
STATEMENTS = ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS")

BINLOG_OFF = (
    "The server reports no binary log position: binary logging is off. Add log-bin=mysql-bin and "
    "binlog_format=ROW to the [mysqld] section of my.cnf and restart the server"
)


class Cursor(Protocol):
    """What is used of a DB-API cursor (PyMySQL's Cursor or DictCursor)."""

    def execute(self, query: str, args: Any = None) -> Any: ...

    def fetchone(self) -> Any: ...


def current_binlog_position(cursor: Cursor) -> tuple[str, int] | None:
    """The server's current binlog (file, position), or None when binary logging is off.

    A statement the server does not know (PyMySQL raises ProgrammingError for ER_PARSE_ERROR)
    moves on to the other name; when no name is known, the last refusal is raised as it is,
    because that is no proof that the binlog is off. Other errors (a missing privilege is an
    OperationalError) are raised at once.
    """
    refused: pymysql.err.ProgrammingError | None = None
    for statement in STATEMENTS:
        try:
            cursor.execute(statement)
        except pymysql.err.ProgrammingError as e:
            refused = e
            continue
        row = cursor.fetchone()
        if not row:
            return None
        if isinstance(row, dict):
            return str(row["File"]), int(row["Position"])
        return str(row[0]), int(row[1])
    assert refused is not None
    raise refused

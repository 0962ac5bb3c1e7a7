"""The job tools' own connections to the source database and the PostgreSQL warehouse, TLS included.

`cdc run --until-caught-up` (the source position), `cdc verify` (both sides) and `cdc validate`
(the connectivity check) open connections of their own. They take the same TLS keys as the
connector (`database.ssl.*` for MySQL/MariaDB, `database.ssl*` for PostgreSQL, read by the
plugins' own `tls` modules) and the sink's libpq keys, so a server that accepts only TLS is
reached by these tools exactly as by the connector, and a refusal says which key to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api import libpq_tls
from cdc.api.errors import ConfigException


def uses_tls(source: Mapping[str, Any]) -> bool:
    """Whether the source sets any TLS key (then `cdc validate` logs in to check the handshake)."""
    return any(str(k).startswith(("database.ssl", "database.sslmode")) for k in source)


def mysql_params(source: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """`pymysql.connect` arguments of a job's MySQL/MariaDB source, its `database.ssl.*` included.

    A bad TLS setting (a JKS store, an unreadable file) raises ConfigException naming its key."""
    from cdc_mysql.tls import MySqlTls

    return {
        "host": str(source.get("database.hostname", "localhost")),
        "port": int(source.get("database.port") or 3306),
        "user": str(source.get("database.user", "")),
        "password": str(source.get("database.password") or ""),
        **MySqlTls.from_props(source).pymysql_kwargs(),
        **extra,
    }


def postgres_params(source: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """`psycopg.connect` keyword arguments of a job's PostgreSQL source, its `database.ssl*` included."""
    from cdc_postgres.tls import libpq_params

    return {
        "host": str(source.get("database.hostname", "localhost")),
        "port": int(source.get("database.port") or 5432),
        "user": str(source.get("database.user", "")),
        "password": str(source.get("database.password") or "") or None,
        "dbname": str(source.get("database.dbname", "")),
        **libpq_params(source),
        **extra,
    }


def sink_conninfo(sink: Mapping[str, Any]) -> str:
    """The warehouse's libpq connection string: `dsn` with the sink's TLS keys over its own parameters."""
    from psycopg import conninfo

    return conninfo.make_conninfo(str(sink.get("dsn") or ""), **libpq_tls.params(sink, ""))


def tls_fix(family: str, source: Mapping[str, Any], error: BaseException) -> str | None:
    """The fix, naming the source's TLS keys, when `error` is a refusal over TLS; else None.

    For MySQL an "Access denied" also gets the REQUIRE SSL/X509 hint of the TLS settings."""
    if family == "mysql":
        from cdc_mysql.tls import MySqlTls

        tls = MySqlTls.from_props(source)
        text = str(error.args[-1]) if error.args else str(error)
        if fix := tls.refusal(str(source.get("database.hostname", "")), text):
            return fix
        code = error.args[0] if error.args else None
        hint = tls.access_denied_hint() if code in (1044, 1045) else ""
        return hint.removeprefix("; ") or None
    from cdc_postgres.tls import advice

    return advice(str(error))


def first_line(error: BaseException) -> str:
    """The driver's message on one line: PyMySQL's `(code, text)` text, libpq's first line without
    the 'connection to server at … failed:' prefix."""
    text = error.args[-1] if len(error.args) > 1 and isinstance(error.args[-1], str) else str(error)
    if "[SSL: " in text:  # PyMySQL's wrapping of an ssl error: its words only
        from cdc_mysql.tls import short_reason

        return short_reason(text)
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = lines[0] if lines else type(error).__name__
    return line.rsplit(" failed: ", 1)[-1] if "connection to server" in line else line


def source_tls_problem(source: Mapping[str, Any]) -> tuple[str, str] | None:
    """`cdc validate`: log in to a reachable source that sets TLS keys, as the connector will.

    Returns (key, message) when that fails (a certificate the CA does not sign, a server that
    requires TLS under `disabled`, a JKS store), else None."""
    from cdc.jobs.spec import source_family

    family = source_family(str(source.get("connector.class", "")))
    if family is None or not uses_tls(source):
        return None
    mode_key = "database.ssl.mode" if family == "mysql" else "database.sslmode"
    try:
        if family == "mysql":
            import pymysql

            pymysql.connect(**mysql_params(source, connect_timeout=5)).close()
        else:
            import psycopg

            psycopg.connect(**postgres_params(source, connect_timeout=5)).close()
    except ConfigException as e:
        return e.name or mode_key, str(e)
    except Exception as e:  # the driver's error (pymysql, psycopg, ssl), as one line
        fix = tls_fix(family, source, e)
        where = f"{source.get('database.hostname')}:{source.get('database.port') or 'default port'}"
        if fix:
            return mode_key, f"cannot connect to {where} ({first_line(e)}); {fix}"
        return "database.user", (
            f"cannot log in to {where} ({first_line(e)}); check database.user, database.password and the TLS keys"
        )
    return None


def sink_problem(sink: Mapping[str, Any]) -> tuple[str, str] | None:
    """`cdc validate`: connect to the PostgreSQL warehouse with the sink's dsn and TLS keys."""
    import psycopg

    try:
        psycopg.connect(sink_conninfo(sink), connect_timeout=3).close()
    except ConfigException as e:
        return e.name or "sslmode", str(e)
    except psycopg.Error as e:
        fix = libpq_tls.advice(str(e), "sink.")
        return ("sslmode" if fix else "dsn"), f"cannot connect: {libpq_tls.first_line(e)}" + (f"; {fix}" if fix else "")
    return None

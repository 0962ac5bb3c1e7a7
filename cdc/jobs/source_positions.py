"""Where a job's source database stands, per connector family: its current position (where an
`--until-caught-up` run stops and an online verify waits), whether a stored offset reached it, and
the position as people read it. Below `run`, `status` and `verify`, which all ask these questions.
"""

from __future__ import annotations

from typing import Any

from cdc.api.errors import ConfigException, ConnectException
from cdc.jobs.source_db import first_line, mysql_params, postgres_params, tls_fix
from cdc.jobs.spec import source_family


def _mysql_position(source: dict[str, str]) -> Any:
    """A `cdc_mysql.lineage.CaughtUpTarget`: the position on its server's binlog lineage."""
    import pymysql

    from cdc_mysql.binlog_status import BINLOG_OFF  # the connector's own reading
    from cdc_mysql.lineage import read_target

    conn = pymysql.connect(**mysql_params(source, connect_timeout=10))  # database.ssl.* as the connector
    try:
        with conn.cursor() as cur:
            target = read_target(cur)
    finally:
        conn.close()
    if target is None:
        raise ConfigException(BINLOG_OFF, "source.database.hostname")
    return target


def _mysql_reached(offset: dict[str, Any], target: Any) -> bool:
    return bool(target.reached_by(offset))


def _postgres_position(source: dict[str, str]) -> int:
    import psycopg

    with psycopg.connect(**postgres_params(source, connect_timeout=10)) as conn:  # database.ssl* too
        lsn = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def _postgres_reached(offset: dict[str, Any], target: int) -> bool:
    return not offset.get("snapshot") and int(offset.get("lsn", 0) or 0) >= target


def _family(connector_class: str) -> str:
    if (family := source_family(connector_class)) is not None:
        return family
    raise ConfigException(
        f"--until-caught-up knows the source position of MySQL/MariaDB and PostgreSQL connectors, "
        f"not {connector_class!r}; run without it",
        "source.connector.class",
    )


def source_position(family: str, source: dict[str, str]) -> Any:
    """The database's current position, where an --until-caught-up run stops."""
    probe = _mysql_position if family == "mysql" else _postgres_position
    try:
        return probe(source)
    except ConfigException:
        raise
    except Exception as e:  # the driver's own errors (pymysql, psycopg, socket): one line, not a traceback
        where = f"{source.get('database.hostname')}:{source.get('database.port', 'default port')}"
        fix = tls_fix(family, source, e) or (
            "check database.hostname, database.port, database.user and database.password, and that the server is "
            "running"
        )
        raise ConnectException(
            f"--until-caught-up cannot read the source position at {where} ({first_line(e)}); {fix}"
        ) from None


def position_text(family: str, value: Any) -> str:
    """A source position as people read it: `mysql-bin.000001:6180` (from a MySQL offset or target)
    or `0/16B3748` (a PostgreSQL LSN or offset); `none yet` for no offset."""
    if value is None or value == {}:
        return "none yet"
    if family == "postgres":
        from cdc_postgres.lsn import format_lsn

        lsn = value.get("lsn_commit") or value.get("lsn") if isinstance(value, dict) else value
        return format_lsn(int(lsn or 0))
    if isinstance(value, dict) and "file" in value:
        return f"{value['file']}:{value.get('pos', 0)}" + (" (snapshot)" if value.get("snapshot") else "")
    return str(value)

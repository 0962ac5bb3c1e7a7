"""Writes one signal row into the MySQL/MariaDB signal table, with the connector's own connection settings.

The `cdc.signal_tables` entry point of MySqlConnector (cdc.runtime.signal_delivery): what a
user's `INSERT INTO <signal.data.collection> VALUES (id, type, data)` does in Debezium, done for
`cdc signal` and `POST /connectors/{name}/signals` with database.hostname/port/user/password
and database.ssl.* as the connector connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection


def _q(ident: str) -> str:
    return "`" + ident.replace("`", "``") + "`"


def write_signal(config: Mapping[str, str], schema: str, table: str, values: tuple[Any, ...]) -> None:
    conn = MySqlConnection(MySqlConnectorConfig(dict(config))).connect(autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {_q(schema)}.{_q(table)} VALUES (%s, %s, %s)", values)
    finally:
        conn.close()

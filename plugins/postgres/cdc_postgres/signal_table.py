"""Writes one signal row into the PostgreSQL signal table, with the connector's own connection settings.

The `cdc.signal_tables` entry point of PostgresConnector (cdc.runtime.signal_delivery): what a
user's `INSERT INTO <signal.data.collection> VALUES (id, type, data)` does in Debezium, done for
`cdc signal` and `POST /connectors/{name}/signals` with the connector's libpq settings (TLS included).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql

from cdc_postgres.config import PostgresConnectorConfig


def write_signal(config: Mapping[str, str], schema: str, table: str, values: tuple[Any, ...]) -> None:
    dsn = PostgresConnectorConfig.parse(dict(config)).dsn()
    with psycopg.connect(autocommit=True, connect_timeout=10, **dsn) as conn:
        conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(sql.Identifier(schema, table)), values)

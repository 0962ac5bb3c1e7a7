"""Fixtures of the MySQL connector tests: a private MariaDB for tests that change globals or restart it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.rig import MariaDbServer
from tests.rig import mariadb as mariadb_rig


@pytest.fixture(scope="module")
def private_mariadb() -> Iterator[MariaDbServer]:
    """A MariaDB of this module's own: guards flip globals, restarts kill it."""
    with mariadb_rig.provide() as server:
        with server.connect() as conn, conn.cursor() as cur:
            # SHOW SLAVE HOSTS needs REPLICATION MASTER ADMIN on MariaDB 10.5+ (server_id clash guard).
            cur.execute(f"GRANT REPLICATION MASTER ADMIN ON *.* TO '{server.cdc_user}'@'%'")
        yield server


@pytest.fixture
def private_db(private_mariadb: MariaDbServer) -> Iterator[MariaDbServer]:
    with private_mariadb.fresh_database() as server:
        yield server


@pytest.fixture(scope="session")
def debezium_loaded() -> Iterator[Any]:
    """Debezium's binlog test scripts, each in its own database of a private MariaDB (issue 19)."""
    from tests.mysql.debezium_scripts import load_all

    with mariadb_rig.provide() as server:
        yield load_all(server)


@pytest.fixture(scope="session")
def debezium_runs(debezium_loaded: Any) -> dict[str, Any]:
    """One connector run over every loaded script per config, made on first use and shared."""
    from tests.mysql.debezium_scripts import RunCache

    return RunCache(debezium_loaded)

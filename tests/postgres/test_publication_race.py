"""Connectors starting together on one database create their shared publication once.

Seen in the Debezium-material acceptance run: one task per knob, all on one database and
publication, and the second CREATE PUBLICATION failed the task with a unique violation.
"""

from __future__ import annotations

import threading

import pytest

from cdc_postgres.connection import PostgresConnection
from tests.rig.postgres import PostgresServer


@pytest.mark.parametrize("mode", ["all_tables", "filtered"])
def test_concurrent_creates_of_one_publication_all_succeed(postgres_db: PostgresServer, mode: str) -> None:
    with postgres_db.connect(autocommit=True) as admin:
        admin.execute("CREATE TABLE t (id int PRIMARY KEY)")
    dsn = {"host": postgres_db.host, "port": postgres_db.port, "user": postgres_db.user, "dbname": postgres_db.dbname}
    conns = [PostgresConnection(dsn) for _ in range(8)]
    start = threading.Barrier(len(conns))
    errors: list[BaseException] = []

    def create(conn: PostgresConnection) -> None:
        start.wait()
        try:
            conn.ensure_publication("dbz_publication", mode, [("public", "t")])
        except BaseException as e:  # collected: the test names every failure
            errors.append(e)

    threads = [threading.Thread(target=create, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for c in conns:
        c.close()
    assert not errors, errors
    with postgres_db.connect() as check:
        assert check.execute("SELECT count(*) FROM pg_publication WHERE pubname = 'dbz_publication'").fetchone() == (1,)

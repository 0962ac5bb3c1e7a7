"""How far the WAL is ahead of a stored offset, read with the job stopped (issue 31, item 3)."""

from __future__ import annotations

from cdc_postgres.connector import PostgresConnector
from cdc_postgres.lsn import parse_lsn
from tests.postgres.harness import connector_props


def test_the_wal_past_a_stored_lsn_is_counted(postgres_db) -> None:
    props = connector_props(postgres_db)
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
    lsn = parse_lsn(sql.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
    stored = {"lsn": lsn, "lsn_proc": lsn, "lsn_commit": lsn}
    connector = PostgresConnector()
    sql.execute("INSERT INTO t SELECT g, repeat('v', 50) FROM generate_series(1, 24) g")
    after = connector.source_backlog(props, stored)
    assert after.unread_bytes is not None and after.unread_bytes >= 24 * 50
    assert parse_lsn(after.position) >= lsn + after.unread_bytes
    now = parse_lsn(after.position)
    caught_up = connector.source_backlog(props, {"lsn": now, "lsn_proc": now, "lsn_commit": now})
    assert caught_up.unread_bytes is not None and caught_up.unread_bytes < after.unread_bytes
    assert connector.source_backlog(props, None).unread_bytes is None

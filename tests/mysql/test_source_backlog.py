"""How far the database's binlog is ahead of a stored offset, read with the job stopped (issue 31, item 3).

`cdc status` said "0 (caught up)" for every table while the source held 24 changes the stopped
job never read: its lag counted only what reached the log. MySqlConnector.source_backlog reads
the server's binlog position and measures the stored offset against it, read-only.
"""

from __future__ import annotations

from cdc_mysql.connector import MySqlConnector
from tests.mysql.harness import TaskRunner, connector_props, execute


def test_the_binlog_past_a_stored_offset_is_counted_and_a_caught_up_offset_is_zero(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(100))", "INSERT INTO t VALUES (0, 'x')")
    props = connector_props(mariadb_db)
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
    connector = MySqlConnector()
    stored = dict(run.records[-1].source_offset)
    before = connector.source_backlog(props, stored)
    assert before is not None and before.unread_bytes is not None
    execute(mariadb_db, *(f"INSERT INTO t VALUES ({i}, '{'v' * 50}')" for i in range(1, 25)))
    after = connector.source_backlog(props, stored)
    assert after.unread_bytes is not None and after.unread_bytes >= before.unread_bytes + 24 * 50
    assert after.position.startswith("mysql-bin.")
    # An offset at the server's position now: nothing unread.
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    caught_up = {**stored, "file": file, "pos": pos, "event": 0, "row": 0}
    assert connector.source_backlog(props, caught_up).unread_bytes == 0


def test_no_offset_or_an_offset_of_another_history_is_not_called_caught_up(mariadb_db) -> None:
    props = connector_props(mariadb_db)
    connector = MySqlConnector()
    none = connector.source_backlog(props, None)
    assert none.unread_bytes is None and "no offset is stored" in none.note
    beyond = connector.source_backlog(props, {"file": "mysql-bin.999999", "pos": 4})
    assert beyond.unread_bytes is None and "below the stored position" in beyond.note
    other = connector.source_backlog(props, {"file": "mysql-bin.000001", "pos": 4, "server_identity": "server_id=77"})
    assert other.unread_bytes is None and "another server" in other.note

"""`cdc validate`'s live checks run beside the job they validate and the job never notices (issue 31).

Validating the running job is the most natural thing to do. The binlog access check used to
open its dump with the job's own database.server.id, and the server disconnected the running
reader (MariaDB then refused its reconnect with error 4052 while the check's dump was open).
"""

from __future__ import annotations

from cdc_mysql.validation import preflight
from tests.mysql.harness import TaskRunner, connector_props, execute


def test_validate_in_a_loop_beside_a_streaming_task_disturbs_nothing(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    props = connector_props(mariadb_db, **{"errors.retry.delay.initial.ms": 100})
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        for i in range(1, 11):
            assert preflight(props) == [], "the job's own config validates"
            execute(mariadb_db, f"INSERT INTO t VALUES ({i})")
            run.poll_once()
        records = run.wait_data(11, timeout=40)
        assert run.task.streaming is not None and run.task.streaming.reconnects == 0, "the job was disconnected"
    assert [r.value.get("after").get("id") for r in records] == list(range(11))


def test_the_check_dump_never_takes_an_id_in_use(mariadb_db) -> None:
    from cdc_mysql.config import MySqlConnectorConfig
    from cdc_mysql.connection import THROWAWAY_SERVER_IDS, MySqlConnection

    props = connector_props(mariadb_db)
    connection = MySqlConnection(MySqlConnectorConfig(props))
    try:
        ids = {connection.throwaway_server_id() for _ in range(20)}
        server_own = int(connection.variable("server_id"))
    finally:
        connection.close()
    assert int(props["database.server.id"]) not in ids and server_own not in ids
    assert all(THROWAWAY_SERVER_IDS[0] <= i <= THROWAWAY_SERVER_IDS[1] for i in ids) and len(ids) > 1

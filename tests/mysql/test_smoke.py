from tests.mysql.harness import TaskRunner, after, connector_props, execute, op


def test_snapshot_then_streaming_crud(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))", "INSERT INTO t VALUES (1, 'a')")
    with TaskRunner(connector_props(mariadb_db)) as run:
        recs = run.wait_data(1)
        assert op(recs[0]) == "r" and after(recs[0]) == {"id": 1, "name": "a"}
        execute(
            mariadb_db, "INSERT INTO t VALUES (2, 'b')", "UPDATE t SET name='c' WHERE id=2", "DELETE FROM t WHERE id=1"
        )
        recs = run.wait_data(4)
        assert [op(r) for r in recs] == ["r", "c", "u", "d"]
        # No Kafka timestamp, as Debezium: the producer stamps the send time, so a catch-up of an
        # old binlog is not written with event times that a broker's time retention expires.
        assert all(r.timestamp is None for r in recs)

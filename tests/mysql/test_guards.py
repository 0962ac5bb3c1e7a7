"""Each guard against python-mysql-replication's silent losses fails with a message that says what to do."""

from __future__ import annotations

import threading
import time

import pytest

from cdc.api import ConfigException, ConnectException
from tests.mysql.harness import MemoryOffsets, TaskRunner, connector_props, execute, op


def _set_global(server, name: str, value: str) -> None:
    execute(server, f"SET GLOBAL {name} = '{value}'")


@pytest.mark.parametrize(
    ("name", "bad", "good"),
    [("binlog_format", "STATEMENT", "ROW"), ("binlog_row_image", "MINIMAL", "FULL"),
     ("binlog_row_metadata", "MINIMAL", "FULL")],
)  # fmt: skip
def test_binlog_settings_fail_at_start_with_the_exact_fix(private_db, name: str, bad: str, good: str) -> None:
    _set_global(private_db, name, bad)
    try:
        with pytest.raises(ConnectException) as e, TaskRunner(connector_props(private_db)):
            pass
    finally:
        _set_global(private_db, name, good)
    message = str(e.value)
    assert f"{name} is {bad}" in message
    assert f"SET GLOBAL {name} = '{good}'" in message and f"{name}={good}" in message and "my.cnf" in message


def test_server_id_of_the_server_itself_is_rejected(private_db) -> None:
    props = connector_props(private_db, database__server__id=1)
    with (
        pytest.raises(ConnectException, match=r"database.server.id=1 is the server_id of the database server"),
        TaskRunner(props),
    ):
        pass


def test_server_id_clash_with_a_connected_reader(private_db) -> None:
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    props = connector_props(private_db)
    with TaskRunner(props) as first:
        first.wait_data(1)
        first.poll_once()
        clash = r"already used by another replica.*unique database.server.id"
        with pytest.raises(ConnectException, match=clash), TaskRunner(dict(props)):
            pass


def test_purged_binlog_names_the_file_and_when_needed_resnapshots(private_db) -> None:
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    offsets = MemoryOffsets()
    props = connector_props(private_db)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        execute(private_db, "INSERT INTO t VALUES (2)")
        run.wait_data(2)
    stored_file = next(iter(offsets.stored.values()))["file"]
    # Changes the connector never saw, then their binlog is purged.
    execute(private_db, "INSERT INTO t VALUES (3)", "FLUSH BINARY LOGS")
    with private_db.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        current = cur.fetchone()[0]
        # A file still open by the stopped reader's dump thread is kept until that thread ends.
        deadline = time.monotonic() + 20
        while True:
            cur.execute(f"PURGE BINARY LOGS TO '{current}'")
            cur.execute("SHOW BINARY LOGS")
            if stored_file not in [r[0] for r in cur.fetchall()] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    with pytest.raises(ConnectException) as e, TaskRunner(dict(props), offsets) as again:
        again.poll_until(lambda _: False, timeout=15, what="the purge error")
    assert stored_file in str(e.value) and "purged" in str(e.value) and "snapshot.mode=when_needed" in str(e.value)

    with TaskRunner({**props, "snapshot.mode": "when_needed"}, offsets) as resnap:
        recs = resnap.wait_data(3)
    assert [op(r) for r in recs] == ["r", "r", "r"]


def test_compressed_binlog_events_fail_the_task(private_db) -> None:
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, payload TEXT)", "INSERT INTO t VALUES (1, 'x')")
    with TaskRunner(connector_props(private_db)) as run:
        run.wait_data(1)
        _set_global(private_db, "log_bin_compress", "ON")
        try:
            execute(private_db, f"INSERT INTO t VALUES (2, '{'y' * 2000}')")
        finally:
            _set_global(private_db, "log_bin_compress", "OFF")
        with pytest.raises(ConnectException) as e:
            run.poll_until(lambda _: False, timeout=15, what="the compression error")
    message = str(e.value)
    assert "COMPRESSED" in message and "log_bin_compress=OFF" in message and "lost" in message
    assert len(run.data()) == 1  # nothing after the compressed event was emitted


def test_server_restart_mid_stream_reconnects_and_loses_nothing(private_db) -> None:
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    props = connector_props(private_db, **{"errors.retry.delay.initial.ms": 100})
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        execute(private_db, *(f"INSERT INTO t VALUES ({i})" for i in range(1, 51)))
        private_db.kill()
        private_db.restart()
        execute(private_db, *(f"INSERT INTO t VALUES ({i})" for i in range(51, 101)))
        recs = run.wait_data(101, timeout=40)
        assert run.task.streaming is not None and run.task.streaming.reconnects >= 1
    ids = [r.value.get("after").get("id") for r in recs]
    assert ids == list(range(101))


def test_server_down_for_a_while_mid_stream_is_waited_for(private_db) -> None:
    """The server is killed and comes back only after several reconnect attempts (the chaos test's
    database kill): each attempt, including the check that it is still the same server
    (cdc_mysql/lineage.py), must back off and retry, not fail the task."""
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    props = connector_props(private_db, **{"errors.retry.delay.initial.ms": 100})
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        private_db.kill()
        restart = threading.Timer(2.5, private_db.restart)
        restart.start()
        try:
            run.poll_until(lambda _: run.task.streaming is not None and run.task.streaming.reconnects >= 3, timeout=30)
        finally:
            restart.join()
        execute(private_db, *(f"INSERT INTO t VALUES ({i})" for i in range(1, 11)))
        recs = run.wait_data(11, timeout=40)
    assert [r.value.get("after").get("id") for r in recs] == list(range(11))
    assert {r.value.get("source").get("sequence") for r in recs} == {None}  # the same server: epoch 0


def test_max_retries_counts_consecutive_failures_not_every_loss_in_the_tasks_life(private_db) -> None:
    """errors.max.retries=1 and three separate losses, each followed by a reconnect that works: the
    task streams on (Debezium counts consecutive failed attempts). The counter never reset before,
    so the second routine blip of a long-lived task failed it."""
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    props = connector_props(private_db, **{"errors.retry.delay.initial.ms": 100, "errors.max.retries": 1})
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        for loss in range(1, 4):
            private_db.kill()
            private_db.restart()
            execute(private_db, f"INSERT INTO t VALUES ({loss})")
            run.wait_data(loss + 1, timeout=40)
            assert run.task.streaming is not None and run.task.streaming.reconnects >= loss
    assert [r.value.get("after").get("id") for r in run.data()] == [0, 1, 2, 3]


def test_server_restart_in_the_middle_of_a_transaction_resumes_at_its_start(private_db) -> None:
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(1000))", "INSERT INTO t VALUES (0, '')")
    props = connector_props(
        private_db, max__batch__size=100, max__queue__size=200, **{"errors.retry.delay.initial.ms": 100}
    )
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        pad = "p" * 1000
        # ~20 MB of row events: more than the socket buffers hold, so the server is still sending
        # the transaction when it dies, and the reader has to resume at the transaction's start.
        inserts = [
            "INSERT INTO t VALUES " + ",".join(f"({i}, '{pad}')" for i in range(start, start + 2000))
            for start in range(1, 20_001, 2000)
        ]
        execute(private_db, "START TRANSACTION", *inserts, "COMMIT")
        # The small queue holds the reader back: it is inside the transaction when the server dies.
        run.poll_until(lambda _: len(run.data()) >= 1000, what="1000 rows of the transaction")
        assert run.task.streaming is not None and run.task.streaming.offset.row > 0
        private_db.kill()
        private_db.restart()
        run.wait_data(20_001, timeout=60)
        run.poll_once()
        assert run.task.streaming.reconnects >= 1
    assert [r.value.get("after").get("id") for r in run.data()] == list(range(20_001))


def test_user_without_replication_slave_is_told_the_grant(private_db, monkeypatch) -> None:
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    grants = "SELECT, RELOAD, SHOW DATABASES, BINLOG MONITOR, REPLICA MONITOR, LOCK TABLES"
    execute(private_db, "CREATE USER 'norepl'@'%' IDENTIFIED BY 'pw'", f"GRANT {grants} ON *.* TO 'norepl'@'%'")
    try:
        props = connector_props(private_db, database__user="norepl", database__password="pw")
        runner = TaskRunner(props)
        # At start, before the snapshot: not after hours of it, when streaming begins.
        with pytest.raises(ConnectException) as e:
            runner.task.start(dict(props))
        # Past the check (say the grant is revoked after the start), streaming says the same.
        from cdc_mysql.connection import MySqlConnection

        monkeypatch.setattr(MySqlConnection, "check_binlog_access", lambda self: None)
        with pytest.raises(ConnectException) as streaming, TaskRunner(props) as run:
            run.poll_until(lambda _: False, timeout=15, what="the privilege error")
    finally:
        execute(private_db, "DROP USER 'norepl'@'%'")
    # MariaDB words it "Access denied ... (using password: YES)": the advice must name the privilege.
    assert "lacks the REPLICATION SLAVE privilege" in str(e.value) and "GRANT REPLICATION SLAVE" in str(e.value)
    assert "lacks the REPLICATION SLAVE privilege" in str(streaming.value)


def test_message_key_column_missing_from_the_table_names_the_key(private_db) -> None:
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    props = connector_props(private_db, message__key__columns=f"{private_db.database}.t:nosuch")
    with pytest.raises(ConfigException) as e, TaskRunner(props) as run:
        run.poll_until(lambda _: False, timeout=15, what="the key column error")
    assert e.value.name == "message.key.columns" and "'nosuch', which table" in str(e.value)


def test_server_killed_during_the_snapshot_fails_the_task_with_what_a_restart_does(private_db) -> None:
    """A lost connection mid-snapshot is one line saying what to do (restart: the snapshot resumes),
    not PyMySQL's bare "Lost connection to MySQL server during query"."""
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(200))")
    execute(private_db, "INSERT INTO t SELECT seq, REPEAT('p', 200) FROM seq_1_to_60000")
    with TaskRunner(connector_props(private_db, max__batch__size=500)) as run:
        run.wait_data(1)
        assert run.task.streaming is None, "the snapshot ended before the kill: make the table larger"
        private_db.kill()
        try:
            with pytest.raises(ConnectException) as e:
                run.poll_until(lambda _: False, timeout=30, what="the snapshot's failure")
        finally:
            private_db.restart()
    message = str(e.value)
    assert "snapshot lost its connection" in message and "Restart the task" in message, message
    assert "\n" not in message

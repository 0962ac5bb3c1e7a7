"""database.server.id may be omitted (issue 37 item 4), against the session MariaDB.

The connector chooses an id no listed replica uses, keeps it in its offsets so a restart
registers as the same reader, and a given id still wins. Two connectors without ids stream side
by side (with one id, the server disconnects the older reader: error 4052, which now stops the
task with one line of advice). `cdc validate` warns about a given id another replica uses.
The choice's rules without a server are in test_server_ids.py.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pymysql
import pytest
from click.testing import CliRunner
from pymysqlreplication import BinLogStreamReader

from cdc.api import ConnectException
from cdc.cli.jobs import validate
from cdc_mysql.server_ids import CHOSEN, CHOSEN_SERVER_IDS, FROM_CONFIG, FROM_OFFSET, OFFSET_KEY, reader_host
from cdc_mysql.validation import preflight, preflight_warnings
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.rig import MariaDbServer
from tests.support.task_context import MemoryOffsets

pytestmark = pytest.mark.integration


def _without_id(server: MariaDbServer, prefix: str) -> dict[str, str]:
    props = connector_props(server, topic__prefix=prefix)
    del props["database.server.id"]
    return props


def _replicas(server: MariaDbServer) -> dict[int, str]:
    """SHOW SLAVE HOSTS: server id → reported host."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW SLAVE HOSTS")
        return {int(row[0]): str(row[1]) for row in cur.fetchall()}


def _await(cond: Any, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class _Connections:
    """python-mysql-replication's connection factory (`pymysql_wrapper`) that refuses to reconnect
    once `closing` is set: the library reconnects a lost stream on its own."""

    def __init__(self) -> None:
        self.closing = threading.Event()

    def __call__(self, **settings: Any) -> pymysql.connections.Connection:
        if self.closing.is_set():
            raise RuntimeError("closed by the test")
        return pymysql.connections.Connection(**settings)


@contextmanager
def registered_reader(server: MariaDbServer, server_id: int, host: str) -> Iterator[None]:
    """Another binlog reader (a replica, as the server sees it) streaming with `server_id` and
    reporting `host` until the block ends, when the server no longer lists it."""
    settings = {"host": server.host, "port": server.port, "user": server.user, "password": server.password}
    connections = _Connections()
    reader = BinLogStreamReader(
        connection_settings=settings, server_id=server_id, blocking=True, resume_stream=True,
        slave_heartbeat=1, report_slave=host, enable_logging=False, pymysql_wrapper=connections,
    )  # fmt: skip

    def stream() -> None:
        try:
            for _ in reader:
                pass
        except Exception:  # the socket shut down below, or the server ended the dump
            pass

    thread = threading.Thread(target=stream, name=f"replica-{server_id}", daemon=True)
    thread.start()
    try:
        _await(lambda: _replicas(server).get(server_id) == host, f"{host} in SHOW SLAVE HOSTS")
        yield
    finally:
        connections.closing.set()
        sock = getattr(getattr(reader, "_stream_connection", None), "_sock", None)
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        thread.join(10)
        reader.close()
        _await(lambda: _replicas(server).get(server_id) != host, f"{host} gone from SHOW SLAVE HOSTS")


def test_a_connector_without_an_id_chooses_one_keeps_it_across_restarts_and_a_given_one_wins(
    mariadb_db: MariaDbServer,
) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    props, offsets = _without_id(mariadb_db, "chooser"), MemoryOffsets()
    partition = {"server": "chooser"}
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        run.wait_streaming()
        chosen = run.task.reader_id
        assert chosen.origin == CHOSEN and CHOSEN_SERVER_IDS[0] <= chosen.server_id <= CHOSEN_SERVER_IDS[1]
        execute(mariadb_db, "INSERT INTO t VALUES (1)")
        run.wait_data(2)
        assert _replicas(mariadb_db).get(chosen.server_id) == reader_host("chooser")
        assert {r.source_offset[OFFSET_KEY] for r in run.records} == {chosen.server_id}  # snapshot and stream
    assert (offsets.offset(partition) or {})[OFFSET_KEY] == chosen.server_id

    with TaskRunner(props, offsets) as run:  # a restart, as `cdc run` of the same job again
        run.wait_streaming()
        assert (run.task.reader_id.server_id, run.task.reader_id.origin) == (chosen.server_id, FROM_OFFSET)
        execute(mariadb_db, "INSERT INTO t VALUES (2)")
        assert [r.value.get("after").get("id") for r in run.wait_data(1)] == [2]
        assert run.task.streaming is not None and run.task.streaming.reconnects == 0
    assert (offsets.offset(partition) or {})[OFFSET_KEY] == chosen.server_id

    given = connector_props(mariadb_db)["database.server.id"]  # the harness's next unique id
    with TaskRunner({**props, "database.server.id": given}, offsets) as run:
        run.wait_streaming()
        assert (run.task.reader_id.server_id, run.task.reader_id.origin) == (int(given), FROM_CONFIG)
        execute(mariadb_db, "INSERT INTO t VALUES (3)")
        assert [r.value.get("after").get("id") for r in run.wait_data(1)] == [3]
    assert OFFSET_KEY not in (offsets.offset(partition) or {})  # a given id is the config's: not stored


def test_two_connectors_without_ids_stream_at_once(mariadb_db: MariaDbServer) -> None:
    """Before, the two needed distinct ids by hand; one id for both made the server disconnect one."""
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    with TaskRunner(_without_id(mariadb_db, "one")) as one, TaskRunner(_without_id(mariadb_db, "two")) as two:
        for run in (one, two):
            run.wait_data(1)
            run.wait_streaming()
        ids = {one.task.reader_id.server_id, two.task.reader_id.server_id}
        assert len(ids) == 2
        execute(mariadb_db, "INSERT INTO t VALUES (1), (2)", "INSERT INTO t VALUES (3)")
        for run in (one, two):
            assert [r.value.get("after").get("id") for r in run.wait_data(4)] == [0, 1, 2, 3]
        listed = _replicas(mariadb_db)
        assert {listed.get(i) for i in ids} == {reader_host("one"), reader_host("two")}
        for run in (one, two):
            assert run.task.streaming is not None and run.task.streaming.reconnects == 0


def test_a_reader_taking_the_connectors_id_stops_it_with_one_line_of_advice(mariadb_db: MariaDbServer) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    props = connector_props(mariadb_db, topic__prefix="taken")
    server_id = int(props["database.server.id"])
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        with registered_reader(mariadb_db, server_id, "intruder"), pytest.raises(ConnectException) as e:
            run.poll_until(lambda _: False, timeout=15, what="the server to disconnect the reader")
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(
        "The server disconnected the binlog reader: another replica or binlog reader connected with the same "
        f"database.server.id={server_id} (MySQL error 4052: A slave with the same server_uuid/server_id"
    )
    assert message.endswith(
        "set database.server.id to an id no other replica uses, or omit it to let the connector choose one"
    )


def test_validate_warns_about_a_given_id_another_replica_uses(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    execute(mariadb_db, "CREATE TABLE orders (id INT PRIMARY KEY)")
    props = connector_props(mariadb_db, topic__prefix="shop")
    server_id = int(props["database.server.id"])
    with registered_reader(mariadb_db, server_id, "replica-7"):
        (warning,) = preflight_warnings(props)
        assert preflight(props) == [], "a warning, not an error"
        job = mysql_delta_job(tmp_path, "shop", props, {f"{mariadb_db.database}.orders": "keys: [id]"})
        res = CliRunner().invoke(validate, [str(job)], catch_exceptions=False)
    assert warning.name == "database.server.id" and len(warning.errors) == 1
    assert (
        f"database.server.id={server_id} is the id of a replica already connected to the server (host "
        in (warning.errors[0])
    )
    assert "'replica-7'" in warning.errors[0] and "omit it to let the connector choose one" in warning.errors[0]
    assert res.exit_code == 0, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert any(
        line.startswith("warning: ") and "source['database.server.id']" in line and "'replica-7'" in line
        for line in lines
    ), lines
    # The job's own reader, running, reports cdc-<topic.prefix>: no warning; nor without a given id.
    with registered_reader(mariadb_db, server_id, reader_host("shop")):
        assert preflight_warnings(props) == []
    assert preflight_warnings({k: v for k, v in props.items() if k != "database.server.id"}) == []


def test_a_stored_id_another_replica_took_refuses_the_start_naming_where_the_id_came_from(
    mariadb_db: MariaDbServer,
) -> None:
    """A kept id is checked like a given one: it may be a second copy of the connector, which a new id
    would let run beside the first."""
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)")
    offsets = MemoryOffsets()
    taken = CHOSEN_SERVER_IDS[0] + 37
    offsets.put({"server": "kept"}, {"file": "mysql-bin.000001", "pos": 4, OFFSET_KEY: taken})
    runner = TaskRunner(_without_id(mariadb_db, "kept"), offsets)
    with registered_reader(mariadb_db, taken, "copy"), pytest.raises(ConnectException) as e:
        runner.task.start(dict(runner.props))
    assert str(e.value).startswith(
        f"server id {taken} (chosen by the connector at its first start, as database.server.id is not set, and "
        f"kept in its offsets as {OFFSET_KEY}) is already used by another replica or binlog reader connected to "
        "this server (host 'copy', port 0)"
    )

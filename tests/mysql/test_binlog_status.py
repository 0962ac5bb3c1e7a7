"""The server's current binlog position, read by one helper for the connector and `cdc run`.

There is no MySQL 8.4 server on this machine (the rig spawns MariaDB only), so 8.4 is a
stand-in cursor here: it refuses `SHOW MASTER STATUS` with the error packet MySQL 8.4 sends
(ER_PARSE_ERROR 1064, SQLSTATE 42000), turned into an exception by PyMySQL's own
`raise_mysql_exception`, and answers `SHOW BINARY LOG STATUS` with 8.4's columns (File,
Position, Binlog_Do_DB, Binlog_Ignore_DB, Executed_Gtid_Set). The real MariaDB tests check
that MariaDB (which knows only the old name) reads the same position as before.
"""

from __future__ import annotations

import struct
from typing import Any

import pymysql
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import ConnectException
from cdc.api.errors import ConfigException
from cdc.jobs import run as job_run
from cdc_mysql.binlog_status import BINLOG_OFF, current_binlog_position
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection
from tests.mysql.harness import connector_props
from tests.support.examples import examples

_PARSE_ERROR_84 = (
    "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version "
    "for the right syntax to use near 'MASTER STATUS' at line 1"
)


IDENTITY = {"SELECT VERSION()": "8.4.3", "SELECT @@server_uuid": "3e11fa47-71ca-11e1-9e33-c80aa9429562"}


def _server_error(code: int, state: str, message: str) -> None:
    """Raise what PyMySQL raises for this server error packet."""
    pymysql.err.raise_mysql_exception(b"\xff" + struct.pack("<H", code) + b"#" + state.encode() + message.encode())


class Mysql84Cursor:
    """A cursor on MySQL 8.4 (or on 8.4 with `answer=None`: binary logging off)."""

    def __init__(self, answer: tuple[str, int] | None, dict_rows: bool = False) -> None:
        self.answer, self.dict_rows = answer, dict_rows
        self.statements: list[str] = []
        self._row: Any = None

    def execute(self, query: str, args: Any = None) -> int:
        self.statements.append(query)
        if query in IDENTITY:  # cdc_mysql.lineage.server_identity
            self._row = {"v": IDENTITY[query]} if self.dict_rows else (IDENTITY[query],)
            return 1
        if query == "SHOW MASTER STATUS":
            _server_error(1064, "42000", _PARSE_ERROR_84)
        assert query == "SHOW BINARY LOG STATUS", query
        if self.answer is None:
            self._row = None
            return 0
        file, pos = self.answer
        row = (file, pos, "", "", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
        columns = ("File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set")
        self._row = dict(zip(columns, row, strict=True)) if self.dict_rows else row
        return 1

    def fetchone(self) -> Any:
        return self._row

    def __enter__(self) -> Mysql84Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class Mysql84Connection:
    """Just enough of a PyMySQL connection for MySqlConnection and cdc.jobs.run."""

    open = True

    def __init__(self, answer: tuple[str, int] | None) -> None:
        self.answer = answer
        self.cursors: list[Mysql84Cursor] = []

    def cursor(self, cursor_class: Any = None) -> Mysql84Cursor:
        dict_rows = cursor_class is not None and issubclass(cursor_class, pymysql.cursors.DictCursor)
        self.cursors.append(Mysql84Cursor(self.answer, dict_rows))
        return self.cursors[-1]

    def close(self) -> None:
        self.open = False


binlog_files = st.builds(
    lambda base, n: f"{base}.{n:06d}", st.sampled_from(["binlog", "mysql-bin", "host-1-bin"]), st.integers(1, 999_999)
)
positions = st.integers(4, 2**40)


@settings(max_examples=examples(50), deadline=None)
@given(file=binlog_files, pos=positions, dict_rows=st.booleans())
def test_mysql_84_falls_back_to_show_binary_log_status(file: str, pos: int, dict_rows: bool) -> None:
    cur = Mysql84Cursor((file, pos), dict_rows)
    assert current_binlog_position(cur) == (file, pos)
    assert cur.statements == ["SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"]


def test_mysql_84_without_a_binlog_is_reported_as_off_not_as_a_syntax_error() -> None:
    assert current_binlog_position(Mysql84Cursor(None)) is None


class _Refuses:
    """A server that knows neither statement, or refuses the first for another reason."""

    def __init__(self, code: int, state: str, message: str) -> None:
        self.error = (code, state, message)
        self.statements: list[str] = []

    def execute(self, query: str, args: Any = None) -> int:
        self.statements.append(query)
        _server_error(*self.error)
        return 0

    def fetchone(self) -> Any:
        raise AssertionError("nothing was executed")


def test_a_server_that_knows_neither_statement_gets_its_own_error_not_binlog_off() -> None:
    cur = _Refuses(1064, "42000", "You have an error in your SQL syntax")
    with pytest.raises(pymysql.err.ProgrammingError) as e:
        current_binlog_position(cur)
    assert e.value.args[0] == 1064 and cur.statements == ["SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"]


def test_a_missing_privilege_is_raised_at_once() -> None:
    message = "Access denied; you need (at least one of) the SUPER, REPLICATION CLIENT privilege(s) for this operation"
    cur = _Refuses(1227, "42000", message)
    with pytest.raises(pymysql.err.OperationalError) as e:
        current_binlog_position(cur)
    assert e.value.args[0] == 1227 and cur.statements == ["SHOW MASTER STATUS"]


def _config() -> MySqlConnectorConfig:
    return MySqlConnectorConfig(
        {
            "database.hostname": "mysql84.invalid",
            "database.user": "cdc",
            "database.server.id": "5400",
            "topic.prefix": "shop",
        }
    )


def test_the_connector_reads_mysql_84_through_the_helper() -> None:
    connection = MySqlConnection(_config())
    connection._conn = Mysql84Connection(("binlog.000012", 4711))  # type: ignore[assignment]
    assert connection.master_status() == ("binlog.000012", 4711)
    connection._conn = Mysql84Connection(None)  # type: ignore[assignment]
    with pytest.raises(ConnectException) as e:
        connection.master_status()
    assert str(e.value) == BINLOG_OFF


def test_until_caught_up_reads_mysql_84_through_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """`cdc run --until-caught-up` on MySQL 8.4 read only SHOW MASTER STATUS and stopped with the syntax error."""
    server = Mysql84Connection(("binlog.000003", 197))
    monkeypatch.setattr(pymysql, "connect", lambda **kw: server)
    source = {"database.hostname": "mysql84.invalid", "database.port": "3306", "database.user": "cdc"}
    target = job_run.source_position("mysql", source)
    assert (target.file, target.pos, target.identity) == (
        "binlog.000003",
        197,
        f"uuid={IDENTITY['SELECT @@server_uuid']}",
    )
    assert server.cursors[0].statements[:2] == ["SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"] and not server.open

    monkeypatch.setattr(pymysql, "connect", lambda **kw: Mysql84Connection(None))
    with pytest.raises(ConfigException) as e:
        job_run.source_position("mysql", source)
    assert str(e.value).startswith(BINLOG_OFF)


# -- real MariaDB (knows only SHOW MASTER STATUS) -----------------------------------------------
def _show_master_status(server) -> tuple[str, int]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    return str(row[0]), int(row[1])


def test_mariadb_position_through_every_reader(mariadb_db) -> None:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
    props = connector_props(mariadb_db)
    connection = MySqlConnection(MySqlConnectorConfig(props))
    try:
        for i in range(3):
            expected = _show_master_status(mariadb_db)
            with mariadb_db.connect_cdc() as conn:
                with conn.cursor() as cur:
                    assert current_binlog_position(cur) == expected
                with conn.cursor(pymysql.cursors.DictCursor) as cur:
                    assert current_binlog_position(cur) == expected
            assert connection.master_status() == expected
            file, pos = expected
            target = job_run.source_position("mysql", props)
            assert (target.file, target.pos) == (file, pos) and target.identity.startswith("server_id=")
            with mariadb_db.connect() as conn, conn.cursor() as cur:
                cur.execute("INSERT INTO t VALUES (%s, %s)", (i, "x" * i))
            assert _show_master_status(mariadb_db)[1] > pos  # the next round reads a new position
    finally:
        connection.close()

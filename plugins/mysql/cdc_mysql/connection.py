"""MySqlConnection: JDBC-like helper over PyMySQL, plus the start-up guards with exact fixes."""

from __future__ import annotations

import contextlib
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

import pymysql
import pymysql.cursors

from cdc.api import ConnectException
from cdc_mysql.binlog_status import BINLOG_OFF, current_binlog_position
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.lineage import server_identity
from cdc_mysql.server_ids import CHOSEN_SERVER_IDS, THROWAWAY_SERVER_IDS, draw_unused
from cdc_mysql.tls import short_reason

log = logging.getLogger(__name__)


ACCESS_DENIED = {1044, 1045, 1227}  # ER_DBACCESS_DENIED, ER_ACCESS_DENIED, ER_SPECIFIC_ACCESS_DENIED
# CR_CONN_HOST_ERROR, CR_SERVER_GONE_ERROR, CR_SERVER_LOST, CR_SERVER_LOST_EXTENDED: the server went away.
CONNECTION_LOST = {2003, 2006, 2013, 2055}


def replication_grant_advice(user: str, code: int, message: str) -> str:
    """A refused binlog dump after a login that worked means a missing grant, even when the
    server words it as "Access denied ... (using password: YES)"."""
    return (
        f"The server refused to send the binlog to {user!r} (MySQL error {code}: {message}): the user "
        "lacks the REPLICATION SLAVE privilege (or its password changed since the start). Run "
        f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'%'; (MariaDB 10.5+: "
        f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{user}'@'%';) or set database.user "
        "to a user that has it"
    )


def error_text(e: BaseException) -> str:
    """A PyMySQL error's message (its args are `(code, message)`)."""
    return str(e.args[-1]) if e.args else str(e)


def tls_refusal(config: MySqlConnectorConfig, message: str) -> str | None:
    """The fix when TLS refused the connection (the certificate check, a server without TLS), else None."""
    return config.tls.refusal(config.hostname, message)


# The key a refused login points at, by MySQL error code, and the fix the message gives.
_ANY_KEY = "Check database.hostname, database.port, database.user and database.password"
LOGIN_FIXES = {
    "database.password": "Check database.password (and database.user)",
    "database.user": "Check database.user: it has no access to that database",
    "database.hostname": "Check database.hostname and database.port, and that the server is running",
}
_LOGIN_KEYS = {1045: "database.password", 1044: "database.user", 2003: "database.hostname", 2005: "database.hostname"}


def login_key(config: MySqlConnectorConfig, e: pymysql.err.OperationalError) -> str:
    """The config key a refused login points at: the TLS mode when TLS refused it, else by error code."""
    if tls_refusal(config, error_text(e)):
        return "database.ssl.mode"
    code = e.args[0] if e.args else None
    return _LOGIN_KEYS.get(code, "database.hostname") if isinstance(code, int) else "database.hostname"


def binlog_status_grant_advice(user: str, code: int, message: str) -> str:
    """SHOW MASTER STATUS refused: the REPLICATION CLIENT (MariaDB 10.5+: BINLOG MONITOR) grant is missing."""
    return (
        f"The server refused to report its binlog position to {user!r} (MySQL error {code}: {message}): the user "
        f"lacks the REPLICATION CLIENT privilege. Run GRANT REPLICATION CLIENT ON *.* TO '{user}'@'%'; (MariaDB "
        f"10.5+: GRANT BINLOG MONITOR ON *.* TO '{user}'@'%';) or set database.user to a user that has it"
    )


@dataclass(frozen=True)
class Replica:
    """A replica (or binlog reader) registered with the server, as SHOW SLAVE HOSTS lists it."""

    host: str  # its report_host; this connector's streams report `cdc-<topic.prefix>` (server_ids.reader_host)
    port: Any

    def described(self) -> str:
        return f"host {self.host!r}, port {self.port}"


class MySqlConnection:
    def __init__(self, config: MySqlConnectorConfig, server_id: int | None = None) -> None:
        """`server_id`: the id of the connector's own binlog reader when it is not the config's (the
        one the task chose or found in its offsets, server_ids.py); None with neither."""
        self.config = config
        # The id this connection's own binlog dumps register with; the task sets it once it is resolved.
        self.server_id: int | None = config.server_id if server_id is None else server_id
        self._conn: pymysql.connections.Connection | None = None

    def settings(self) -> dict[str, Any]:
        """PyMySQL's connection arguments, TLS included (database.ssl.*): the snapshot's and the binlog's."""
        c = self.config
        return {
            "host": c.hostname,
            "port": c.port,
            "user": c.user,
            "password": c.password,
            "connect_timeout": max(1, int(c.connect_timeout_s)),
            "charset": "utf8mb4",
            **c.tls.pymysql_kwargs(),
        }

    def connect(self, **extra: Any) -> pymysql.connections.Connection:
        s = self.settings()
        s.update(extra)
        try:
            return pymysql.connect(**s)
        except pymysql.err.OperationalError as e:
            raise self.refused(e) from e

    def refused(self, e: pymysql.err.OperationalError) -> ConnectException:
        """A failed login as one line naming the keys to fix (the TLS ones when TLS refused it)."""
        c = self.config
        code = e.args[0] if e.args else None
        message = error_text(e)
        where = f"Cannot connect to {c.hostname}:{c.port} as {c.user!r}"
        if advice := tls_refusal(c, message):
            return ConnectException(f"{where} ({short_reason(message)}): {advice}")
        hint = c.tls.access_denied_hint() if code in ACCESS_DENIED else ""
        return ConnectException(f"{where}: {e}. {LOGIN_FIXES.get(login_key(c, e), _ANY_KEY)}{hint}")

    @property
    def conn(self) -> pymysql.connections.Connection:
        if self._conn is None or not self._conn.open:
            self._conn = self.connect(autocommit=True)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def query(self, sql: str, args: Any = None) -> list[dict[str, Any]]:
        with self.conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def variable(self, name: str) -> str | None:
        rows = self.query("SHOW GLOBAL VARIABLES LIKE %s", (name,))
        return str(rows[0]["Value"]) if rows else None

    # -- facts -----------------------------------------------------------------------------
    def is_mariadb(self) -> bool:
        return "mariadb" in self.conn.get_server_info().lower()

    def master_status(self) -> tuple[str, int]:
        """The server's current binlog (file, position), on MySQL 8.4+ too (binlog_status)."""
        with self.conn.cursor() as cur:
            position = current_binlog_position(cur)
        if position is None:
            raise ConnectException(BINLOG_OFF)
        return position

    def bytes_after(self, file: str, pos: int) -> int:
        """Bytes of binlog the server has written after `file:pos` (its end minus the position, across
        files by SHOW BINARY LOGS): what a reader at that position has not read yet."""
        head_file, head_pos = self.master_status()
        if head_file == file:
            return max(0, head_pos - int(pos))
        sizes = {str(r["Log_name"]): int(r["File_size"]) for r in self.query("SHOW BINARY LOGS")}
        between = sum(size for name, size in sizes.items() if file < name < head_file)
        return max(0, sizes.get(file, int(pos)) - int(pos)) + between + head_pos

    def server_identity(self) -> str:
        """Which server this is (lineage.server_identity): `server_id=<n>` on MariaDB, `uuid=<uuid>` on MySQL."""
        with self.conn.cursor() as cur:
            return server_identity(cur)

    def executed_gtids(self, is_mariadb: bool) -> str | None:
        if is_mariadb:
            return self.variable("gtid_binlog_pos") or None
        if (self.variable("gtid_mode") or "OFF").upper() != "ON":
            return None
        value = self.variable("gtid_executed")
        return value.replace("\n", "") if value else None

    def mariadb_gtid_pos_at(self, file: str, pos: int) -> str | None:
        """MariaDB's GTID position (last GTID per domain) just before `file:pos`; None if that is no
        event boundary of this server's binlog (a file of another server, or a position past its end)."""
        rows = self.query("SELECT BINLOG_GTID_POS(%s, %s) AS p", (file, pos))
        value = rows[0]["p"] if rows else None
        return None if value is None else str(value)

    def binlog_files(self) -> list[str]:
        return [str(r["Log_name"]) for r in self.query("SHOW BINARY LOGS")]

    # -- guards ----------------------------------------------------------------------------
    def check_binlog_settings(self) -> None:
        """Fail at start, with the exact fix, when the binlog cannot give complete row events."""
        log_bin = (self.variable("log_bin") or "OFF").upper()
        if log_bin not in ("ON", "1"):
            raise ConnectException(
                "Binary logging is disabled on the server (log_bin=OFF). Add log-bin=mysql-bin, "
                "binlog_format=ROW, binlog_row_image=FULL and binlog_row_metadata=FULL to the [mysqld] "
                "section of my.cnf and restart the server"
            )
        expected = {"binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}
        for name, want in expected.items():
            value = self.variable(name)
            if value is None:
                raise ConnectException(
                    f"The server has no {name} variable: this connector needs MySQL 8.0.1+ or MariaDB 10.5+, "
                    f"which write column names and types into the binlog ({name}={want})"
                )
            if value.upper() != want:
                raise ConnectException(
                    f"{name} is {value} but the connector needs {want}: run SET GLOBAL {name} = '{want}'; "
                    f"and add {name}={want} to the [mysqld] section of my.cnf so it survives a restart "
                    f"(sessions already open keep the old value until they reconnect)"
                )

    def check_binlog_access(self, server_id: int | None = None) -> None:
        """Ask for the binlog once, at start: a missing REPLICATION SLAVE grant would otherwise
        surface only when streaming begins, after a snapshot that may take hours.

        `server_id` is the id the short dump connects with (default: the connector's own). A check
        run beside the job (`cdc validate`) passes `throwaway_server_id()`: the server disconnects
        a reader whose id a new dump takes, so the job's own id would stop the running job."""
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import RotateEvent

        dump_id = self.server_id if server_id is None else server_id
        if dump_id is None:
            raise ValueError("check_binlog_access needs a server id: the task's own (resolved) or a throwaway one")
        try:
            file, pos = self.master_status()
        except pymysql.err.OperationalError as e:
            code = e.args[0] if e.args else None
            if code in ACCESS_DENIED:
                raise ConnectException(binlog_status_grant_advice(self.config.user, code, error_text(e))) from None
            raise
        reader = BinLogStreamReader(
            connection_settings=self.settings(),
            server_id=dump_id,
            blocking=False,  # the dump ends at the binlog's end: nothing is waited for
            resume_stream=True,
            log_file=file,
            log_pos=pos,
            only_events=[RotateEvent],
            enable_logging=False,
        )
        try:
            next(iter(reader), None)
        except pymysql.err.OperationalError as e:
            code = e.args[0] if e.args else None
            if tls_refusal(self.config, error_text(e)):
                raise self.refused(e) from None
            if code in ACCESS_DENIED:
                raise ConnectException(replication_grant_advice(self.config.user, code, str(e.args[-1]))) from None
            raise
        finally:
            reader.close()

    def check_server_id(self, described: str | None = None, wait_s: float = 4.0) -> None:
        """The reader's id (`self.server_id`) must differ from the server's and from every connected replica's.

        `described` names the id in the errors (server_ids.ServerIdChoice.described; default: the key).
        A registration of our own killed predecessor disappears within a heartbeat or two,
        so a clash is only reported if it persists for `wait_s`. Only replicas that registered
        are seen (`replicas`).
        """
        ours = self.server_id
        if ours is None:
            raise ValueError("check_server_id needs the task's server id (set database.server.id or resolve one)")
        what = described or f"database.server.id={ours}"
        server_own = int(self.variable("server_id") or 0)
        if ours == server_own:
            raise ConnectException(
                f"{what} is the server_id of the database server itself; "
                "choose a unique database.server.id for the connector"
            )
        deadline = time.monotonic() + wait_s
        while True:
            clash = self._replica_with_id(ours)
            if clash is None:
                return
            if time.monotonic() >= deadline:
                raise ConnectException(
                    f"{what} is already used by another replica or binlog reader "
                    f"connected to this server ({clash}); two readers with one server_id disconnect "
                    "each other. Choose a unique database.server.id"
                )
            time.sleep(0.25)

    def throwaway_server_id(self) -> int:
        """A server id that neither the server, the connector nor a connected replica uses: for a
        check's short binlog dump that must not disconnect anyone (MySQL/MariaDB end the older
        connection of two with one server id). Drawn from the top of the id range (server_ids.py),
        where people rarely number their replicas and the connector never chooses its own."""
        taken = {int(self.variable("server_id") or 0)}
        if self.server_id is not None:
            taken.add(self.server_id)
        replicas = self.replicas() or {}
        return draw_unused(THROWAWAY_SERVER_IDS, lambda c: c in taken or c in replicas)

    def choose_server_id(self, rng: random.Random | None = None) -> int:
        """An id for the task's own binlog reader when database.server.id is omitted (server_ids.py):
        from CHOSEN_SERVER_IDS, not the server's own `server_id`, not any replica's it lists.

        The limit: the server lists only the replicas and binlog readers that registered with it
        (COM_REGISTER_SLAVE; on MySQL 5.7 and MariaDB only those started with `report_host`). A
        plain binlog client (mysqlbinlog --read-from-remote-server, Debezium's binlog client, a
        reader of this connector still taking its snapshot) is not listed, and the ids of the
        other connectors of this worker are not known to a task (the plugin API shows a task only
        its own config and offsets). The range's width makes meeting one of them unlikely (about
        one in 2.7 billion per reader); this connector's streams register (`report_slave`), so
        they are seen."""
        taken = {int(self.variable("server_id") or 0)}
        replicas = self.replicas() or {}
        return draw_unused(CHOSEN_SERVER_IDS, lambda c: c in taken or c in replicas, rng)

    def _replica_with_id(self, server_id: int) -> str | None:
        replica = (self.replicas() or {}).get(server_id)
        return None if replica is None else replica.described()

    def replicas(self) -> dict[int, Replica] | None:
        """The registered replicas by server id: SHOW SLAVE HOSTS, or MySQL 8.4's SHOW REPLICAS; None,
        with a warning, when the user may not list them. Only replicas that registered are listed
        (choose_server_id)."""
        for stmt in ("SHOW SLAVE HOSTS", "SHOW REPLICAS"):
            try:
                rows = self.query(stmt)
            except pymysql.err.MySQLError:
                continue
            return {
                int(r.get("Server_id") or r.get("Server_Id") or 0): Replica(str(r.get("Host") or "?"), r.get("Port"))
                for r in rows
            }
        log.warning(
            "Cannot list the server's replicas (SHOW SLAVE HOSTS needs REPLICATION MASTER ADMIN on MariaDB 10.5+, "
            "REPLICATION SLAVE on MySQL): the server id checks cannot see the ids other replicas use"
        )
        return None

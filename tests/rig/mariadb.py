"""A MariaDB server with the binlog configured the way a CDC source needs it.

Resolution order: ``CDC_TEST_MYSQL_URL`` (``mysql://user:pass@host:port``), then a
private ``mariadbd`` spawned from the local binaries, then a testcontainers
container if a Docker engine answers.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

import pymysql

from ._common import Daemon, docker_available, run_checked, start_on_free_port, temp_dir, unavailable, unique_name

if TYPE_CHECKING:
    from .tls import Pki

ENV_URL = "CDC_TEST_MYSQL_URL"

# binlog_row_metadata=FULL puts column names and types into TABLE_MAP events, so
# the reader needs no information_schema lookups racing concurrent DDL.
SERVER_FLAGS = [
    "--log-bin=mysql-bin",
    "--binlog-format=ROW",
    "--binlog-row-metadata=FULL",
    "--binlog-row-image=FULL",
    "--server-id=1",
    "--gtid-strict-mode=ON",
    "--log-slave-updates",
]

CDC_USER, CDC_PASSWORD = "cdc", "cdc"
# On 10.5+ REPLICATION CLIENT is only an alias of BINLOG MONITOR, and SHOW SLAVE
# STATUS moved to REPLICA MONITOR; naming the new privileges keeps SHOW GRANTS honest.
# REPLICATION MASTER ADMIN lets the connector read SHOW SLAVE HOSTS (its server_id clash check).
CDC_GRANTS = (
    "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR, REPLICA MONITOR, LOCK TABLES,"
    " REPLICATION MASTER ADMIN"
)


@dataclass(frozen=True)
class MariaDbServer:
    """Connection facts for a MariaDB server; ``user`` is an admin, ``cdc_user`` is not.

    ``database`` is None for the server itself; the ``mariadb_db`` fixture hands out
    copies bound to a fresh database.
    """

    host: str
    port: int
    user: str
    password: str
    cdc_user: str
    cdc_password: str
    database: str | None = None
    socket: Path | None = None
    datadir: Path | None = None
    _daemon: Daemon | None = field(default=None, repr=False, compare=False)

    @property
    def url(self) -> str:
        return self._url(self.user, self.password)

    @property
    def cdc_url(self) -> str:
        return self._url(self.cdc_user, self.cdc_password)

    def _url(self, user: str, password: str) -> str:
        db = f"/{self.database}" if self.database else ""
        return f"mysql://{quote(user, safe='')}:{quote(password, safe='')}@{self.host}:{self.port}{db}"

    def connect(self, **kw: Any) -> pymysql.connections.Connection:
        """Autocommit by default: a forgotten commit() means no binlog event, a silent
        and confusing failure in CDC tests."""
        params: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "database": self.database,
            "autocommit": True,
            "connect_timeout": 5,
        }
        params.update(kw)
        return pymysql.connect(**params)

    def connect_cdc(self, **kw: Any) -> pymysql.connections.Connection:
        return self.connect(user=self.cdc_user, password=self.cdc_password, **kw)

    @contextmanager
    def fresh_database(self) -> Iterator[MariaDbServer]:
        name = unique_name()
        with self.connect(database=None) as conn, conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{name}`")
        try:
            yield replace(self, database=name)
        finally:
            with self.connect(database=None) as conn, conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")

    @property
    def can_restart(self) -> bool:
        return self._daemon is not None

    def kill(self) -> None:
        """SIGKILL mariadbd; the datadir and binlogs stay for restart()."""
        self._require_daemon().kill()

    def restart(self) -> None:
        """Start again on the same port (stopping cleanly first if still running)."""
        self._require_daemon().restart()

    def stop(self) -> None:
        """Shut mariadbd down cleanly (a planned switch-over); restart() starts it again."""
        self._require_daemon().stop()

    def _require_daemon(self) -> Daemon:
        if self._daemon is None:
            unavailable("kill/restart needs a MariaDB spawned by the rig, not an external one")
        return self._daemon


def _provision(server: MariaDbServer) -> None:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(
            "CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s",
            (server.cdc_user, server.cdc_password),
        )
        cur.execute(f"GRANT {CDC_GRANTS} ON *.* TO %s@'%%'", (server.cdc_user,))


def _ping(server: MariaDbServer, datadir: Path | None = None) -> bool:
    """The server answers; with `datadir`, it is the one serving that directory (not a neighbour on the port)."""
    with server.connect(connect_timeout=1) as conn, conn.cursor() as cur:
        if datadir is None:
            return True
        cur.execute("SELECT @@datadir")
        return Path(cur.fetchone()[0]).resolve() == datadir.resolve()


def _from_url(url: str) -> MariaDbServer:
    u = urlsplit(url)
    if u.scheme not in {"mysql", "mariadb"} or not u.hostname:
        raise ValueError(f"{ENV_URL}={url!r}: expected mysql://user:pass@host:port[/db]")
    user, password = unquote(u.username or "root"), unquote(u.password or "")
    # An external server comes with one account; it has to serve as both roles.
    database = unquote(u.path.lstrip("/")) or None
    return MariaDbServer(u.hostname, u.port or 3306, user, password, user, password, database)


def _binary(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")


@contextmanager
def _spawn(mariadbd: str, install_db: str, extra_flags: Sequence[str] = ()) -> Iterator[MariaDbServer]:
    """`extra_flags` come after SERVER_FLAGS, so they override them (a replica's `--server-id=2`)."""
    with temp_dir("cdc-mariadb-") as tmp:
        datadir, sock, log = tmp / "data", tmp / "mysqld.sock", tmp / "mariadbd.log"
        # mariadbd refuses to run as root unless told to; for anyone else --user only warns.
        user_flag = ["--user=root"] if os.geteuid() == 0 else []
        # The default 96M redo log would make each datadir ~114 MB instead of ~34 MB.
        small = ["--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M"]
        # A private tmpdir: servers bootstrapping at once in the shared /tmp collide on its
        # `#sql-temptable-*` files (install-db passes the option on to its bootstrap server).
        scratch = tmp / "tmp"
        scratch.mkdir()
        small.append(f"--tmpdir={scratch}")
        run_checked(
            [
                install_db,
                "--no-defaults",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
                f"--datadir={datadir}",
                *user_flag,
                *small,
            ],
            log,
        )

        def daemon_for(port: int) -> Daemon:
            argv = [
                mariadbd,
                "--no-defaults",
                *user_flag,
                f"--datadir={datadir}",
                f"--port={port}",
                "--bind-address=127.0.0.1",
                f"--socket={sock}",
                f"--pid-file={tmp / 'mariadbd.pid'}",
                "--skip-name-resolve",
                *small,
                *SERVER_FLAGS,
                *extra_flags,
            ]
            # Root over TCP works because install-db with normal auth and
            # --skip-name-resolve creates root@127.0.0.1 with an empty password.
            probe = MariaDbServer("127.0.0.1", port, "root", "", CDC_USER, CDC_PASSWORD)
            return Daemon("mariadbd", argv, log, lambda: _ping(probe, datadir), cwd=tmp)

        port, daemon = start_on_free_port(daemon_for)
        server = MariaDbServer(
            "127.0.0.1", port, "root", "", CDC_USER, CDC_PASSWORD, socket=sock, datadir=datadir, _daemon=daemon
        )
        try:
            _provision(server)
            yield server
        finally:
            daemon.stop()


@contextmanager
def _container() -> Iterator[MariaDbServer]:
    try:
        from testcontainers.community.mysql import MySqlContainer
    except ImportError:  # older testcontainers layout
        from testcontainers.mysql import MySqlContainer

    container = MySqlContainer("mariadb:10.11", username="root", password="root", dbname="cdc").with_command(
        SERVER_FLAGS
    )
    with container:
        host, port = container.get_container_host_ip(), int(container.get_exposed_port(3306))
        server = MariaDbServer(host, port, "root", "root", CDC_USER, CDC_PASSWORD)
        _provision(server)
        yield server


def local_binaries() -> tuple[str, str] | None:
    """mariadbd and mariadb-install-db from this machine, if both are installed."""
    mariadbd, install_db = _binary("mariadbd"), _binary("mariadb-install-db")
    return (mariadbd, install_db) if mariadbd and install_db else None


@contextmanager
def spawn_local(extra_flags: Sequence[str] = ()) -> Iterator[MariaDbServer]:
    """A private server from the local binaries, whatever the environment says (the demo's).

    `extra_flags` are appended to the server's command line and override SERVER_FLAGS."""
    binaries = local_binaries()
    if binaries is None:
        raise RuntimeError("mariadbd/mariadb-install-db not found; install mariadb-server")
    with _spawn(*binaries, extra_flags) as server:
        yield server


@contextmanager
def provide() -> Iterator[MariaDbServer]:
    if url := os.environ.get(ENV_URL):
        yield _from_url(url)
        return
    if binaries := local_binaries():
        with _spawn(*binaries) as server:
            yield server
    elif docker_available():
        with _container() as server:
            yield server
    else:
        unavailable(
            "MariaDB: no mariadbd/mariadb-install-db binaries and no Docker engine; "
            f"install mariadb-server (apt-get install mariadb-server) or set {ENV_URL}"
        )


@contextmanager
def spawn_tls(pki: Pki, require: str = "X509") -> Iterator[MariaDbServer]:
    """A private MariaDB serving TLS with `pki`'s server certificate (trusting its CA for client
    certificates), whose cdc user must connect over TLS: `REQUIRE SSL`, or `REQUIRE X509` (with a
    client certificate signed by that CA). The admin (root) keeps connecting without requirements."""
    binaries = local_binaries()
    if binaries is None:
        unavailable(
            "MariaDB with TLS needs the local mariadbd/mariadb-install-db binaries (apt-get install mariadb-server)"
        )
    flags = [f"--ssl-ca={pki.ca_cert}", f"--ssl-cert={pki.server_cert}", f"--ssl-key={pki.server_key}"]
    with _spawn(*binaries, flags) as server:
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"ALTER USER %s@'%%' REQUIRE {require}", (server.cdc_user,))
        yield server

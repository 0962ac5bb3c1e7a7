"""A PostgreSQL server with ``wal_level=logical``.

Resolution order: ``CDC_TEST_POSTGRES_URL`` (``postgresql://user:pass@host:port/db``),
then a private server spawned from the local binaries (as the ``postgres`` OS user
when we are root, because the server refuses to run as root), then a
testcontainers container if a Docker engine answers.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

import psycopg
from psycopg import sql

from ._common import (
    Daemon,
    RunAs,
    docker_available,
    run_checked,
    start_on_free_port,
    temp_dir,
    unavailable,
    unique_name,
)

if TYPE_CHECKING:
    from .tls import Pki

ENV_URL = "CDC_TEST_POSTGRES_URL"

# fsync/full_page_writes only protect against OS crashes and torn pages; the fault
# tests SIGKILL processes, after which the page cache still holds every write.
# synchronous_commit stays on: with it off, a SIGKILL loses acknowledged commits,
# and logical decoding only sees WAL once flushed, adding ~200 ms to every change.
SETTINGS = {
    "wal_level": "logical",
    "max_replication_slots": "10",
    "max_wal_senders": "10",
    "fsync": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
}

HBA = """\
local all         all               trust
local replication all               trust
host  all         all 127.0.0.1/32  trust
host  replication all 127.0.0.1/32  trust
"""


@dataclass(frozen=True)
class PostgresServer:
    """Connection facts for a PostgreSQL server; ``user`` is a superuser.

    The ``postgres_db`` fixture hands out copies bound to a fresh database.
    """

    host: str
    port: int
    user: str
    password: str
    dbname: str
    socket_dir: Path | None = None
    datadir: Path | None = None
    _daemon: Daemon | None = field(default=None, repr=False, compare=False)

    @property
    def dsn(self) -> str:
        auth = quote(self.user, safe="")
        if self.password:
            auth += ":" + quote(self.password, safe="")
        return f"postgresql://{auth}@{self.host}:{self.port}/{quote(self.dbname, safe='')}"

    def connect(self, **kw: Any) -> psycopg.Connection[Any]:
        """Autocommit by default (override with autocommit=False): an uncommitted
        transaction never reaches the WAL decoder, a confusing way for a CDC test to fail."""
        kw.setdefault("autocommit", True)
        kw.setdefault("connect_timeout", 5)
        return psycopg.connect(self.dsn, **kw)

    @contextmanager
    def fresh_database(self) -> Iterator[PostgresServer]:
        """A new database, dropped afterwards together with any replication slots in it
        (a slot, even an inactive one, would block DROP DATABASE)."""
        name = unique_name()
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield replace(self, dbname=name)
        finally:
            with self.connect() as conn:
                _drop_slots(conn, name)
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @property
    def can_restart(self) -> bool:
        return self._daemon is not None

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend (its whole process group); a lone
        dead postmaster would leave backends holding shared memory and block restart()."""
        self._require_daemon().kill()

    def restart(self) -> None:
        """Start again on the same port and datadir (crash recovery runs after kill())."""
        self._require_daemon().restart()

    def _require_daemon(self) -> Daemon:
        if self._daemon is None:
            unavailable("kill/restart needs a PostgreSQL spawned by the rig, not an external one")
        return self._daemon


def _drop_slots(conn: psycopg.Connection[Any], dbname: str) -> None:
    for _ in range(50):
        conn.execute(
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
            " WHERE database = %s AND active_pid IS NOT NULL",
            (dbname,),
        )
        try:
            conn.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s",
                (dbname,),
            )
            return
        except psycopg.errors.ObjectInUse:
            time.sleep(0.1)  # the terminated walsender has not released the slot yet


def _from_url(url: str) -> PostgresServer:
    u = urlsplit(url)
    if u.scheme not in {"postgres", "postgresql"} or not u.hostname:
        raise ValueError(f"{ENV_URL}={url!r}: expected postgresql://user:pass@host:port/db")
    return PostgresServer(
        u.hostname,
        u.port or 5432,
        unquote(u.username or "postgres"),
        unquote(u.password or ""),
        unquote(u.path.lstrip("/")) or "postgres",
    )


def _bindir() -> Path | None:
    if initdb := shutil.which("initdb"):
        return Path(initdb).resolve().parent
    # Debian keeps the server binaries off PATH, one directory per major version.
    found = [p for p in Path("/usr/lib/postgresql").glob("*/bin/initdb") if p.parts[-3].isdigit()]
    return max(found, key=lambda p: int(p.parts[-3])).parent if found else None


def _ping(server: PostgresServer, datadir: Path | None = None) -> bool:
    """The server answers; with `datadir`, it is the one serving that directory (not a neighbour on the port)."""
    with server.connect(dbname="postgres", connect_timeout=2) as conn:
        if datadir is None:
            return True
        row = conn.execute("SHOW data_directory").fetchone()
        return Path(row[0]).resolve() == datadir.resolve()


@contextmanager
def _spawn(
    bindir: Path, overrides: dict[str, str] | None = None, hba: str = HBA, pki: Pki | None = None
) -> Iterator[PostgresServer]:
    """`hba` replaces pg_hba.conf; `pki` turns ssl on with its server certificate and CA (copied into
    the data directory, owned by the server's account: PostgreSQL refuses a key others can read)."""
    run_as = RunAs.for_postgres()
    with temp_dir("cdc-pg-", run_as) as tmp:
        datadir, log = tmp / "data", tmp / "postgres.log"
        run_checked(
            [
                str(bindir / "initdb"),
                f"--pgdata={datadir}",
                "--username=postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
            log,
            run_as,
            cwd=tmp,
        )
        (datadir / "pg_hba.conf").write_text(hba)
        tls_settings = _install_pki(datadir, pki, run_as) if pki else {}

        def daemon_for(port: int) -> Daemon:
            settings = {
                **SETTINGS,
                **tls_settings,
                **(overrides or {}),
                "port": str(port),
                "listen_addresses": "127.0.0.1",
                "unix_socket_directories": str(tmp),
            }
            argv = [str(bindir / "postgres"), "-D", str(datadir)]
            for key, value in settings.items():
                argv += ["-c", f"{key}={value}"]
            probe = PostgresServer("127.0.0.1", port, "postgres", "", "cdc", tmp, datadir)
            # SIGQUIT is what `pg_ctl stop -m immediate` sends: no checkpoint, the
            # fastest teardown; restart() then runs a short crash recovery.
            return Daemon(
                "postgres",
                argv,
                log,
                lambda: _ping(probe, datadir),
                cwd=tmp,
                run_as=run_as,
                stop_signal=signal.SIGQUIT,
            )

        port, daemon = start_on_free_port(daemon_for)
        server = PostgresServer("127.0.0.1", port, "postgres", "", "cdc", tmp, datadir)
        try:
            with server.connect(dbname="postgres") as conn:
                conn.execute("CREATE DATABASE cdc")
            yield replace(server, _daemon=daemon)
        finally:
            daemon.stop()


def _install_pki(datadir: Path, pki: Pki, run_as: RunAs | None) -> dict[str, str]:
    settings = {}
    for setting, source in (
        ("ssl_cert_file", pki.server_cert),
        ("ssl_key_file", pki.server_key),
        ("ssl_ca_file", pki.ca_cert),
    ):
        target = datadir / f"tls-{source.name}"
        shutil.copyfile(source, target)
        os.chmod(target, 0o600)
        if run_as:
            os.chown(target, run_as.uid, run_as.gid)
        settings[setting] = str(target)
    return {"ssl": "on", **settings}


# TLS only over TCP: hostssl lines and no host lines. The admin (postgres) is trusted; every other
# user logs in with a client certificate whose CN is its name (`cert`), as REQUIRE X509 in MariaDB.
TLS_HBA = """\
local   all         all                   trust
local   replication all                   trust
hostssl all         postgres 127.0.0.1/32 trust
hostssl replication postgres 127.0.0.1/32 trust
hostssl all         all      127.0.0.1/32 cert
hostssl replication all      127.0.0.1/32 cert
"""


@contextmanager
def spawn_tls(pki: Pki, user: str = "cdc") -> Iterator[PostgresServer]:
    """A private PostgreSQL that accepts TCP connections only over TLS (`pki`'s server certificate),
    with a superuser `user` (REPLICATION) who must log in with a client certificate of CN `user`.
    The returned server's own connections are the admin's (postgres, trusted over TLS)."""
    bindir = _bindir()
    if not (bindir and (bindir / "postgres").exists()):
        unavailable("PostgreSQL with TLS needs the local initdb/postgres binaries (apt-get install postgresql)")
    with _spawn(bindir, hba=TLS_HBA, pki=pki) as server:
        with server.connect() as conn:
            conn.execute(f'CREATE ROLE "{user}" LOGIN SUPERUSER REPLICATION')
        yield server


# Password logins over TCP for every user but the admin (postgres, trusted), as on a production
# server (the session server trusts every local login, so a wrong password would pass there).
PASSWORD_HBA = """\
local   all         all                   trust
local   replication all                   trust
host    all         postgres 127.0.0.1/32 trust
host    replication postgres 127.0.0.1/32 trust
host    all         all      127.0.0.1/32 scram-sha-256
host    replication all      127.0.0.1/32 scram-sha-256
"""


@contextmanager
def spawn_password_auth(user: str, password: str, method: str = "scram-sha-256") -> Iterator[PostgresServer]:
    """A private PostgreSQL where the superuser `user` (REPLICATION) logs in over TCP with `password`
    (`method`: scram-sha-256, md5, or `password`, which sends it in clear text). The returned
    server's own connections are the admin's (postgres, trusted)."""
    bindir = _bindir()
    if not (bindir and (bindir / "postgres").exists()):
        unavailable("PostgreSQL with password logins needs the initdb/postgres binaries (apt-get install postgresql)")
    with _spawn(bindir, hba=PASSWORD_HBA.replace("scram-sha-256", method)) as server:
        with server.connect() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN SUPERUSER REPLICATION PASSWORD {}").format(
                    sql.Identifier(user), sql.Literal(password)
                )
            )
        yield server


@contextmanager
def _container() -> Iterator[PostgresServer]:
    try:
        from testcontainers.community.postgres import PostgresContainer
    except ImportError:  # older testcontainers layout
        from testcontainers.postgres import PostgresContainer

    flags = [arg for k, v in SETTINGS.items() for arg in ("-c", f"{k}={v}")]
    container = PostgresContainer(
        "postgres:15", username="postgres", password="postgres", dbname="cdc", driver=None
    ).with_command(flags)
    with container:
        host, port = container.get_container_host_ip(), int(container.get_exposed_port(5432))
        yield PostgresServer(host, port, "postgres", "postgres", "cdc")


@contextmanager
def spawn_local(overrides: dict[str, str] | None = None) -> Iterator[PostgresServer]:
    """A private server from the local binaries, whatever the environment says: one that
    kill() and restart() can act on (the chaos script's)."""
    bindir = _bindir()
    if not (bindir and (bindir / "postgres").exists()):
        raise RuntimeError("initdb/postgres not found; install postgresql (apt-get install postgresql)")
    with _spawn(bindir, overrides) as server:
        yield server


@contextmanager
def provide(overrides: dict[str, str] | None = None) -> Iterator[PostgresServer]:
    """A server for the session; `overrides` (server settings) always spawn a private one."""
    if overrides:
        bindir = _bindir()
        if not (bindir and (bindir / "postgres").exists()):
            unavailable("PostgreSQL: a server with custom settings needs the initdb/postgres binaries")
        with _spawn(bindir, overrides) as server:
            yield server
        return
    if url := os.environ.get(ENV_URL):
        yield _from_url(url)
        return
    bindir = _bindir()
    if bindir and (bindir / "postgres").exists():
        with _spawn(bindir) as server:
            yield server
    elif docker_available():
        with _container() as server:
            yield server
    else:
        unavailable(
            "PostgreSQL: no initdb/postgres binaries and no Docker engine; install "
            f"postgresql (apt-get install postgresql) or set {ENV_URL}"
        )

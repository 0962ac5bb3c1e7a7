"""A GTID primary/replica pair of private MariaDB servers, for failover tests.

Both servers come from `mariadb.spawn_local` (private datadirs, free ports, `--no-defaults`,
row binlog with full metadata, strict GTIDs, `log_slave_updates`), so the replica's own binlog
holds every replicated transaction under its original GTID and the replica can take over as
the connector's source. The replica has another server_id, starts read-only, with an empty
binlog (file 000001) and replicates with `MASTER_USE_GTID=slave_pos`.

The helpers are plain functions over `MariaDbServer`s, so a test can switch over and back:
`wait_caught_up`, `promote`, `replicate` (attach any server to another as its replica).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from ._common import unavailable
from .mariadb import MariaDbServer, local_binaries, spawn_local

REPL_USER, REPL_PASSWORD = "repl", "repl"
PRIMARY_ID, REPLICA_ID = 1, 2


@dataclass(frozen=True)
class GtidPair:
    """The two servers as started: `primary` takes writes, `replica` follows it by GTID."""

    primary: MariaDbServer
    replica: MariaDbServer


def replicate(replica: MariaDbServer, primary: MariaDbServer) -> None:
    """Make `replica` a read-only GTID replica of `primary`, starting after what it already holds.

    Its replication position becomes its own binlog's GTID position, so a former primary can be
    attached to the server that replaced it (the switch back) as well as a fresh server.
    """
    with replica.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("STOP SLAVE")
        cur.execute("RESET SLAVE ALL")
        cur.execute("SET GLOBAL read_only = ON")
        cur.execute("SET GLOBAL gtid_slave_pos = @@global.gtid_binlog_pos")
        cur.execute(
            "CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %s, MASTER_USER = %s, MASTER_PASSWORD = %s, "
            "MASTER_CONNECT_RETRY = 1, MASTER_USE_GTID = slave_pos",
            (primary.host, primary.port, REPL_USER, REPL_PASSWORD),
        )
        cur.execute("START SLAVE")


def slave_status(server: MariaDbServer) -> dict[str, object]:
    """SHOW SLAVE STATUS as a dict (empty when the server replicates from nobody)."""
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("SHOW SLAVE STATUS")
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row, strict=True)) if row else {}


def wait_caught_up(replica: MariaDbServer, primary: MariaDbServer, timeout: float = 60) -> str:
    """Block until `replica` has applied every transaction in `primary`'s binlog; returns that GTID position."""
    with primary.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@global.gtid_binlog_pos")
        target = str(cur.fetchone()[0] or "")
    with replica.connect(database=None, read_timeout=int(timeout) + 10) as conn, conn.cursor() as cur:
        cur.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (target, timeout))
        waited = cur.fetchone()[0]
    if waited != 0:
        status = slave_status(replica)
        raise AssertionError(
            f"replica {replica.port} did not reach the primary's GTID position {target} in {timeout:.0f}s: "
            f"IO {status.get('Slave_IO_Running')} ({status.get('Last_IO_Error')}), "
            f"SQL {status.get('Slave_SQL_Running')} ({status.get('Last_SQL_Error')}), "
            f"at {status.get('Gtid_IO_Pos')}"
        )
    return target


def promote(server: MariaDbServer) -> None:
    """Stop replicating and take writes: the switch-over's last step on the new primary."""
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("STOP SLAVE")
        cur.execute("RESET SLAVE ALL")
        cur.execute("SET GLOBAL read_only = OFF")


def binlog_position(server: MariaDbServer) -> tuple[str, int]:
    """SHOW MASTER STATUS's file and position: where the server's next event goes."""
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    return str(file), int(pos)


@contextmanager
def spawn_pair() -> Iterator[GtidPair]:
    """Two private servers (server_id 1 and 2, GTID domain 0), the second replicating the first.

    The replica's own start-up writes (the cdc account) are wiped with RESET MASTER, so its
    binlog starts at 000001 and holds only what it replicates, and strict GTID mode sees no
    transaction of its own ahead of the primary's.
    """
    if local_binaries() is None:
        unavailable("a MariaDB primary/replica pair needs the local mariadbd and mariadb-install-db binaries")
    with ExitStack() as stack:
        primary = stack.enter_context(spawn_local([f"--server-id={PRIMARY_ID}", "--relay-log=relay-bin"]))
        replica = stack.enter_context(spawn_local([f"--server-id={REPLICA_ID}", "--relay-log=relay-bin"]))
        with primary.connect(database=None) as conn, conn.cursor() as cur:
            cur.execute("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", (REPL_USER, REPL_PASSWORD))
            cur.execute("GRANT REPLICATION SLAVE, SLAVE MONITOR ON *.* TO %s@'%%'", (REPL_USER,))
        with replica.connect(database=None) as conn, conn.cursor() as cur:
            cur.execute("RESET MASTER")
        replicate(replica, primary)
        wait_caught_up(replica, primary)
        yield GtidPair(primary, replica)

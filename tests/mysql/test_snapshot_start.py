"""MySQL's way to the snapshot's binlog position (snapshot_start.py), against a model of a MySQL 8 server.

No MySQL 8 server exists on this machine (the rig has MariaDB only), so `ModelServer` stands in
for one: it answers the statements SnapshotStart sends, from a model of what the position
depends on. MySQL writes a transaction to the binlog (SHOW MASTER STATUS moves), then commits it
in the engine (the snapshot can see it), then releases its GTID (it leaves @@gtid_owned and
joins @@gtid_executed), in binlog order (binlog_order_commits=ON). FLUSH TABLES WITH READ LOCK
and LOCK TABLES ... READ wait for the commits in flight and hold new ones. Between any two
statements of the snapshot's connections, writers move transactions along that pipeline at
random. Where the model is simpler than MySQL: one captured table set, so a table lock holds every
writer; no DDL.

The property: the position returned has exactly the transactions the snapshot sees before it,
and the GTID set returned is exactly theirs. Set CDC_SNAPSHOT_SEED to replay one seed.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from cdc.api import ConnectException
from cdc_mysql.snapshot_start import QUIESCENT_ATTEMPTS, SnapshotStart, StartPoint

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
TABLES = [("shop", "orders"), ("shop", "items")]
REFUSED_RELOAD = (1227, "Access denied; you need (at least one of) the RELOAD privilege(s) for this operation")
REFUSED_LOCK = (1044, "Access denied for user 'cdc'@'%' to database 'shop'")


def position(n: int) -> tuple[str, int]:
    """Where the binlog ends after `n` transactions."""
    return "binlog.000003", 157 + 100 * n


class ModelServer:
    """A MySQL 8 server reduced to the commit pipeline (module docstring); logs (connection, statement)."""

    def __init__(
        self,
        rng: random.Random | None = None,
        *,
        gtid_mode: str = "ON",
        reload: bool = True,
        lock_tables: bool = True,
        mysql84: bool = False,
        busy: float = 0.5,
    ) -> None:
        self.rng, self.busy = rng, busy
        self.gtid_mode, self.reload, self.lock_tables, self.mysql84 = gtid_mode, reload, lock_tables, mysql84
        self.written = self.visible = self.released = 0  # written >= visible >= released
        self.locks: set[str] = set()  # connections holding the global or table read locks
        self.view: int | None = None  # transactions the snapshot transaction sees
        self.log: list[tuple[str, str]] = []
        self.connections = 0

    def writers(self) -> None:
        """Between two statements: transactions get written, committed and released, in binlog order."""
        if self.rng is None:
            return
        for _ in range(self.rng.randrange(4)):
            roll = self.rng.random()
            if roll < self.busy and not self.locks:
                self.written += 1
            elif roll < 0.8 and self.visible < self.written:
                self.visible += 1
            elif self.released < self.visible:
                self.released += 1

    def drain(self) -> None:
        """A read lock is granted once no commit is in flight."""
        self.visible = self.released = self.written

    def answer(self, name: str, sql: str) -> list[tuple[Any, ...]]:
        self.writers()
        self.log.append((name, sql))
        if sql == "SHOW MASTER STATUS" and self.mysql84:
            raise pymysql.err.ProgrammingError(1064, "You have an error in your SQL syntax near 'MASTER STATUS'")
        if sql in ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"):
            return [(*position(self.written), "", "", self._gtids(self.released))]
        if sql.startswith("SHOW GLOBAL VARIABLES WHERE Variable_name IN"):
            owned = f"{UUID}:{self.released + 1}-{self.written}" if self.released < self.written else ""
            return [("gtid_executed", self._gtids(self.released)), ("gtid_mode", self.gtid_mode), ("gtid_owned", owned)]
        if sql == "START TRANSACTION WITH CONSISTENT SNAPSHOT":
            self.view = self.visible
        elif sql == "ROLLBACK":
            self.view = None
        elif sql == "FLUSH TABLES WITH READ LOCK":
            if not self.reload:
                raise pymysql.err.OperationalError(*REFUSED_RELOAD)
            self.drain()
            self.locks.add(name)
        elif sql.startswith("LOCK TABLES"):
            if not self.lock_tables:
                raise pymysql.err.OperationalError(*REFUSED_LOCK)
            self.drain()
            self.locks.add(name)
        elif sql == "UNLOCK TABLES":
            self.locks.discard(name)
        return []

    @staticmethod
    def _gtids(n: int) -> str:
        return f"{UUID}:1-{n}" if n else ""

    def connect(self) -> FakeConnection:
        self.connections += 1
        return FakeConnection(self, f"helper{self.connections}")

    def statements(self, name: str) -> list[str]:
        return [sql for who, sql in self.log if who == name]


class FakeCursor:
    def __init__(self, conn: FakeConnection) -> None:
        self.conn, self.rows = conn, iter(())

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str, args: Any = None) -> int:
        rows = self.conn.server.answer(self.conn.name, sql)
        self.rows = iter(rows)
        return len(rows)

    def fetchone(self) -> tuple[Any, ...] | None:
        return next(self.rows, None)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self.rows)


class FakeConnection:
    def __init__(self, server: ModelServer, name: str) -> None:
        self.server, self.name = server, name

    def cursor(self, cls: Any = None) -> FakeCursor:
        return FakeCursor(self)

    def rollback(self) -> None:
        self.server.answer(self.name, "ROLLBACK")

    def close(self) -> None:
        self.server.locks.discard(self.name)  # a closed session's locks go with it
        self.server.log.append((self.name, "close"))


def starter(server: ModelServer, locking_mode: str) -> SnapshotStart:
    return SnapshotStart(
        FakeConnection(server, "snapshot"),
        is_mariadb=False,
        locking_mode=locking_mode,
        user="cdc",
        lock_timeout_ms=10_000,
        captured=lambda conn: list(TABLES),
        open_connection=server.connect,
        pause=lambda s: None,
    )


def _seeds() -> Iterator[int]:
    if seed := os.environ.get("CDC_SNAPSHOT_SEED"):
        yield int(seed)
        return
    base = random.randrange(1 << 30)
    yield from range(base, base + 400)


@pytest.mark.parametrize("gtid_mode", ["ON", "OFF"])
@pytest.mark.parametrize("locking", ["none", "minimal"])
def test_the_position_has_exactly_what_the_snapshot_sees_before_it(locking: str, gtid_mode: str) -> None:
    for seed in _seeds():
        rng = random.Random(seed)
        server = ModelServer(rng, gtid_mode=gtid_mode, reload=rng.random() < 0.5, busy=rng.choice((0.2, 0.5, 0.9)))
        server.written = server.visible = server.released = rng.randrange(3)
        start = starter(server, locking)
        point = start.begin()
        start.release()
        assert server.view is not None, f"seed {seed}: no snapshot transaction open"
        expected = StartPoint(
            *position(server.view), (ModelServer._gtids(server.view) or None) if gtid_mode == "ON" else None
        )
        assert point == expected, (
            f"seed {seed} ({locking}, gtid_mode={gtid_mode}): the snapshot sees {server.view} transactions but the "
            f"position returned is {point}; statements: {server.log}"
        )
        assert not server.locks, f"seed {seed}: locks left after release(): {server.locks}"


def test_none_with_gtids_and_no_commit_in_flight_takes_no_lock() -> None:
    server = ModelServer()
    server.written = server.visible = server.released = 7
    start = starter(server, "none")
    assert start.begin() == StartPoint(*position(7), f"{UUID}:1-7")
    start.release()
    variables = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('gtid_mode', 'gtid_executed', 'gtid_owned')"
    assert server.log == [
        ("snapshot", "SHOW MASTER STATUS"),
        ("snapshot", variables),
        ("snapshot", "START TRANSACTION WITH CONSISTENT SNAPSHOT"),
        ("snapshot", "SHOW MASTER STATUS"),
    ]


def test_a_commit_in_flight_is_waited_out_even_when_the_position_does_not_move() -> None:
    """Written to the binlog, not yet committed in the engine: the position would already cover a
    transaction the snapshot cannot see. The first try is dropped although SHOW MASTER STATUS did not move."""
    server = ModelServer()
    server.written, server.visible, server.released = 5, 4, 4
    original = server.writers
    tries = iter(range(100))

    def commit_after_the_first_try() -> None:
        original()
        if server.log and server.log[-1] == ("snapshot", "ROLLBACK") and next(tries) == 0:
            server.visible = server.released = 5

    server.writers = commit_after_the_first_try  # type: ignore[method-assign]
    start = starter(server, "none")
    assert start.begin() == StartPoint(*position(5), f"{UUID}:1-5")
    assert server.view == 5
    assert server.statements("snapshot").count("START TRANSACTION WITH CONSISTENT SNAPSHOT") == 2
    assert server.connections == 0  # no lock was needed


def test_none_falls_back_to_table_locks_when_commits_never_pause_and_on_mysql_8_4() -> None:
    server = ModelServer(mysql84=True)  # scripted below: a commit lands before every statement
    original = server.answer

    def busy_answer(name: str, sql: str) -> list[tuple[Any, ...]]:
        if not server.locks:
            server.written += 1
            server.visible = server.released = server.written
        return original(name, sql)

    server.answer = busy_answer  # type: ignore[method-assign]
    start = starter(server, "none")
    point = start.begin()
    assert point == StartPoint(*position(server.view or 0), f"{UUID}:1-{server.view}")
    snapshot = server.statements("snapshot")
    assert snapshot.count("ROLLBACK") == QUIESCENT_ATTEMPTS + 1  # each failed try, and before locking
    helper = server.statements("helper1")
    assert helper == ["SET SESSION lock_wait_timeout = 10", "LOCK TABLES `shop`.`orders` READ, `shop`.`items` READ"]
    # Under the locks: the transaction starts, then the position is read (MySQL 8.4's statement).
    assert snapshot[-4:] == [
        "START TRANSACTION WITH CONSISTENT SNAPSHOT",
        "SHOW MASTER STATUS",
        "SHOW BINARY LOG STATUS",
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('gtid_mode', 'gtid_executed', 'gtid_owned')",
    ]
    start.release()
    assert server.statements("helper1")[-2:] == ["UNLOCK TABLES", "close"]


def test_minimal_uses_the_global_lock_and_reads_everything_on_its_own_connection() -> None:
    server = ModelServer()
    server.written, server.visible, server.released = 9, 7, 6
    start = starter(server, "minimal")
    assert start.begin() == StartPoint(*position(9), f"{UUID}:1-9")
    start.release()
    assert server.connections == 0
    assert server.statements("snapshot") == [
        "SET SESSION lock_wait_timeout = 10",
        "FLUSH TABLES WITH READ LOCK",
        "SET SESSION lock_wait_timeout = DEFAULT",
        "START TRANSACTION WITH CONSISTENT SNAPSHOT",
        "SHOW MASTER STATUS",
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('gtid_mode', 'gtid_executed', 'gtid_owned')",
        "UNLOCK TABLES",
    ]


def test_minimal_without_reload_locks_the_captured_tables(caplog: pytest.LogCaptureFixture) -> None:
    server = ModelServer(reload=False)
    server.written, server.visible, server.released = 3, 2, 2
    start = starter(server, "minimal")
    assert start.begin() == StartPoint(*position(3), f"{UUID}:1-3")
    assert server.locks == {"helper1"}
    start.release()
    assert not server.locks
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "the global read lock was refused (Access denied; you need" in said
    assert "locking the 2 captured tables instead (LOCK TABLES ... READ" in said


@pytest.mark.parametrize(
    ("locking", "gtid_mode", "why"),
    [
        ("minimal", "ON", "because the global read lock was refused (Access denied; you need (at least one of) the"),
        ("none", "OFF", "because snapshot.locking.mode=none on MySQL needs gtid_mode=ON"),
    ],
)
def test_no_lock_at_all_is_refused_with_the_grant_to_run(locking: str, gtid_mode: str, why: str) -> None:
    server = ModelServer(reload=False, lock_tables=False, gtid_mode=gtid_mode)
    with pytest.raises(ConnectException) as refused:
        starter(server, locking).begin()
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("Snapshot could not lock shop.orders, shop.items for reading (Access denied for user")
    assert why in message
    assert message.endswith("e.g. GRANT LOCK TABLES ON `shop`.* TO 'cdc'@'%';")
    assert server.view is None and server.statements("helper1")[-1] == "close"


def test_a_lock_wait_timeout_names_the_setting() -> None:
    server = ModelServer(reload=False)
    original = server.answer

    def timeout(name: str, sql: str) -> list[tuple[Any, ...]]:
        if sql.startswith("LOCK TABLES"):
            raise pymysql.err.OperationalError(1205, "Lock wait timeout exceeded; try restarting transaction")
        return original(name, sql)

    server.answer = timeout  # type: ignore[method-assign]
    with pytest.raises(ConnectException, match=r"within snapshot.lock.timeout.ms=10000 .*raise snapshot.lock"):
        starter(server, "minimal").begin()

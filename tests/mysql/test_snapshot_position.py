"""The snapshot's binlog position agrees exactly with what the snapshot read, whatever commits meanwhile.

Issue 16, defect 7: with `snapshot.locking.mode=none` the connector read the binlog position on
another connection after the snapshot transaction had begun, so a commit in between was in
neither the snapshot nor the stream. Here a seeded writer commits inserts, updates, deletes and
multi-row transactions without pause while the connector snapshots and then streams; a test hook
sleeps right after `START TRANSACTION WITH CONSISTENT SNAPSHOT`, so commits are certain to land
between the transaction's start and the position read. Replaying the events in order (snapshot,
then stream) must give exactly the table.

Two procedures run on the private MariaDB:
- `mariadb`: the server's own snapshot position (binlog_snapshot_file/position);
- `mysql`: MariaDB stands in for MySQL (no MySQL server exists here): the test hides its
  snapshot position, so the connector takes MySQL's way (SHOW MASTER STATUS, which MariaDB
  answers alike, under a global or table read lock). MariaDB has no gtid_mode, so the lock-free
  MySQL check (gtid_owned) is exercised only by the stand-in tests of test_snapshot_start.py.

Set CDC_SNAPSHOT_SEED to replay a workload; the seed is in every failure message.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from cdc.api import ConnectException, SourceRecord
from cdc_mysql.snapshot_start import SnapshotStart
from tests.mysql.harness import TaskRunner, after, before, connector_props, execute, op
from tests.rig import MariaDbServer

SEED_ENV = "CDC_SNAPSHOT_SEED"
ROWS = 2_000
# Long enough for the writer to commit many transactions inside the window, short for the suite.
WINDOW_S = 0.25


def _seed() -> int:
    return int(os.environ.get(SEED_ENV, random.randrange(1 << 30)))


@pytest.fixture
def widened_race(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sleep after every START TRANSACTION WITH CONSISTENT SNAPSHOT (test hook): commits land in between."""
    execute_ = pymysql.cursors.Cursor.execute

    def execute_then_wait(self: Any, query: Any, args: Any = None) -> Any:
        result = execute_(self, query, args)
        if isinstance(query, str) and query.startswith("START TRANSACTION WITH CONSISTENT SNAPSHOT"):
            time.sleep(WINDOW_S)
        return result

    monkeypatch.setattr(pymysql.cursors.Cursor, "execute", execute_then_wait)


def _as_mysql(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hide MariaDB's own snapshot position: the connector must take MySQL's procedure."""
    monkeypatch.setattr(SnapshotStart, "reports_snapshot_position", lambda self: False)


class Writer(threading.Thread):
    """Seeded small transactions on `t` without pause: inserts (new and re-used keys), updates, deletes."""

    def __init__(self, server: MariaDbServer, seed: int) -> None:
        super().__init__(daemon=True)
        self.server, self.rng = server, random.Random(seed)
        self.stop = threading.Event()
        self.commits = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._write()
        except BaseException as e:  # reported by the test, not lost in the thread
            self.error = e

    def _write(self) -> None:
        rng, next_id = self.rng, ROWS
        with self.server.connect(autocommit=False) as conn, conn.cursor() as cur:
            while not self.stop.is_set():
                for _ in range(rng.choice((1, 1, 1, 2, 4))):
                    k, roll = rng.randrange(next_id), rng.random()  # an id inserted earlier
                    if roll < 0.35:
                        cur.execute("INSERT INTO t VALUES (%s, %s, %s)", (next_id, rng.randrange(1000), f"n{next_id}"))
                        next_id += 1
                    elif roll < 0.75:
                        cur.execute("UPDATE t SET v = v + 1, note = %s WHERE id = %s", (f"u{rng.randrange(1000)}", k))
                    elif roll < 0.9:
                        cur.execute("DELETE FROM t WHERE id = %s", (k,))
                    else:  # re-insert a key deleted earlier (or overwrite a live one)
                        cur.execute("REPLACE INTO t VALUES (%s, %s, %s)", (k, rng.randrange(1000), f"r{k}"))
                conn.commit()
                self.commits += 1

    def check(self) -> bool:
        """True while the writer works; its error, if it failed."""
        if self.error is not None:
            raise AssertionError(f"the writer failed: {self.error!r}") from self.error
        return True

    def finish(self) -> None:
        self.stop.set()
        self.join(30)
        if self.error is not None:
            raise self.error


def _replay(records: list[SourceRecord]) -> dict[int, dict[str, Any]]:
    """The table as the events say it is: snapshot reads, then the stream, applied in order."""
    state: dict[int, dict[str, Any]] = {}
    for r in records:
        kind = op(r)
        if kind in ("r", "c", "u"):
            row = after(r)
            assert row is not None
            if kind == "u" and (old := before(r)) is not None and old["id"] != row["id"]:
                state.pop(old["id"], None)
            state[row["id"]] = row
        elif kind == "d":
            old = before(r)
            assert old is not None
            state.pop(old["id"], None)
    return state


def _table(server: MariaDbServer) -> dict[int, dict[str, Any]]:
    with server.connect() as conn, conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute("SELECT id, v, note FROM t")
        return {int(r["id"]): dict(r) for r in cur.fetchall()}


def _difference(events: dict[int, dict[str, Any]], table: dict[int, dict[str, Any]]) -> str:
    missing = sorted(set(table) - set(events))
    extra = sorted(set(events) - set(table))
    differing = sorted(k for k in set(table) & set(events) if table[k] != events[k])
    return (
        f"missing {len(missing)} {missing[:5]}, extra {len(extra)} {extra[:5]}, differing {len(differing)} "
        f"{[(table[k], events[k]) for k in differing[:3]]}"
    )


def _snapshot_then_stream(server: MariaDbServer, seed: int, **props: Any) -> tuple[TaskRunner, Writer]:
    """Seeds `t`, snapshots and streams it while the writer runs, until the stream has caught up."""
    values = ",".join(f"({i}, {i % 97}, 'seed{i}')" for i in range(ROWS))
    execute(
        server,
        "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, note VARCHAR(40))",
        f"INSERT INTO t VALUES {values}",
        "CREATE TABLE done (id INT PRIMARY KEY)",
    )
    writer = Writer(server, seed)
    writer.start()
    try:
        while writer.commits < 20 and writer.is_alive():
            time.sleep(0.01)
        with TaskRunner(connector_props(server, **props)) as run:
            run.poll_until(
                lambda _: writer.check() and any(op(r) == "c" for r in run.data("t")),
                60,
                f"streamed writes (seed {seed})",
            )
            writer.finish()
            execute(server, "INSERT INTO done VALUES (1)")
            run.poll_until(lambda _: bool(run.data("done")), 60, f"the end marker (seed {seed})")
    finally:
        writer.stop.set()
        writer.join(30)
    return run, writer


@pytest.mark.parametrize("locking", ["none", "minimal"])
@pytest.mark.parametrize("procedure", ["mariadb", "mysql"])
def test_no_commit_is_lost_or_changed_between_snapshot_and_stream(
    private_db: MariaDbServer, widened_race: None, monkeypatch: pytest.MonkeyPatch, procedure: str, locking: str
) -> None:
    seed = _seed()
    if procedure == "mysql":
        _as_mysql(monkeypatch)
    run, writer = _snapshot_then_stream(private_db, seed, snapshot__locking__mode=locking)
    events, table = _replay(run.data("t")), _table(private_db)
    reads = sum(op(r) == "r" for r in run.data("t"))
    assert events == table, (
        f"seed {seed} ({procedure}, snapshot.locking.mode={locking}, {writer.commits} commits, {reads} snapshot "
        f"reads): the events do not rebuild the table: {_difference(events, table)}"
    )


def _user_without(server: MariaDbServer, name: str, grants: str) -> MariaDbServer:
    execute(server, f"CREATE USER '{name}'@'%' IDENTIFIED BY 'pw'", f"GRANT {grants} ON *.* TO '{name}'@'%'")
    return MariaDbServer(
        server.host, server.port, server.user, server.password, name, "pw", server.database, server.socket
    )


@pytest.fixture
def no_reload(private_db: MariaDbServer) -> Iterator[MariaDbServer]:
    """A connector user without RELOAD, as on RDS/Aurora: FLUSH TABLES WITH READ LOCK is refused."""
    name = f"noreload_{private_db.database}"[:32]
    grants = "SELECT, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR, REPLICA MONITOR, REPLICATION MASTER ADMIN"
    yield _user_without(private_db, name, grants + ", LOCK TABLES")
    execute(private_db, f"DROP USER '{name}'@'%'")


@pytest.mark.parametrize("procedure", ["mariadb", "mysql"])
def test_a_refused_global_lock_falls_back_to_table_locks(
    no_reload: MariaDbServer,
    widened_race: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    procedure: str,
) -> None:
    seed = _seed()
    if procedure == "mysql":
        _as_mysql(monkeypatch)
    with caplog.at_level(logging.INFO, logger="cdc_mysql"):
        run, writer = _snapshot_then_stream(no_reload, seed, snapshot__locking__mode="minimal")
    events, table = _replay(run.data("t")), _table(no_reload)
    assert events == table, (
        f"seed {seed} ({procedure}, global lock refused, {writer.commits} commits): the events do not rebuild "
        f"the table: {_difference(events, table)}"
    )
    said = [r.getMessage() for r in caplog.records]
    assert any("global read lock was refused" in m and "LOCK TABLES" in m for m in said), said
    assert any("Snapshot: released the read locks on 2 tables" in m for m in said), said


def test_without_reload_or_lock_tables_the_snapshot_refuses_with_the_fix(private_db: MariaDbServer) -> None:
    name = f"nolock_{private_db.database}"[:32]
    grants = "SELECT, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR, REPLICA MONITOR, REPLICATION MASTER ADMIN"
    server = _user_without(private_db, name, grants)
    try:
        execute(server, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
        with TaskRunner(connector_props(server)) as run, pytest.raises(ConnectException) as refused:
            run.poll_until(lambda _: False, 20, "the refusal")
    finally:
        execute(private_db, f"DROP USER '{name}'@'%'")
    message = str(refused.value)
    assert "\n" not in message
    assert f"GRANT LOCK TABLES ON `{server.database}`.* TO '{name}'" in message, message
    assert "RELOAD" in message and f"{server.database}.t" in message, message

"""Time until a stopped job's source position is lost, against real servers (issue 37, item 3).

A private MariaDB with a short `binlog_expire_logs_seconds` and a private PostgreSQL with a small
`max_slot_wal_keep_size` each get a job that ran, stored its offset and stopped. While the
position is still on the server, the connector's estimate is small and positive, `cdc status`
says so and `cdc validate` warns (exit 0); once the server purges the binlog file (FLUSH BINARY
LOGS past the expiry) or invalidates the slot (WAL past the limit, then a checkpoint), the
position is reported lost and `cdc validate` fails with the fix. The arithmetic and the wording
are tested without servers in test_position_loss.py and the connectors' test_retention_estimate.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cdc.api import metrics as m
from cdc.cli.jobs import validate
from cdc.jobs.load import load_job
from cdc.jobs.status import collect, render
from cdc.runtime.transport import open_log, open_offset_store
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import offset_key, offset_value
from cdc_mysql.connector import MySqlConnector
from cdc_postgres.connector import PostgresConnector
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import TaskRunner as MySqlRunner
from tests.mysql.harness import connector_props as mysql_props
from tests.mysql.harness import execute
from tests.postgres.harness import TaskRunner as PostgresRunner
from tests.postgres.harness import connector_props as pg_props
from tests.rig import MariaDbServer, PostgresServer
from tests.rig import mariadb as mariadb_rig
from tests.rig import postgres as postgres_rig

pytestmark = pytest.mark.integration

EXPIRE_S = 12  # the private MariaDB's binlog_expire_logs_seconds
SLOT_LIMIT = "48MB"  # the private PostgreSQL's max_slot_wal_keep_size


def _validate(job: Path) -> tuple[int, list[str]]:
    res = CliRunner().invoke(validate, [str(job)], catch_exceptions=False)
    print(res.output)  # the README's sample
    return res.exit_code, [" ".join(line.split()) for line in res.output.splitlines() if line.strip()]


def _store_offset(job_file: Path, partition: dict[str, Any], offset: dict[str, Any]) -> None:
    """What the stopped run left: its last offset in the job's embedded offsets topic."""
    job = load_job(job_file, inspect_only=True)
    config = WorkerConfig(job.worker_config())
    with open_log(config) as log_:
        store = open_offset_store(config, log_)
        store.start()
        store.set({offset_key(job.name, partition): offset_value(offset)})
        store.stop()


def _status_lines(job_file: Path) -> list[str]:
    lines = render(collect(load_job(job_file, inspect_only=True)))
    print("\n".join(lines))  # the README's sample
    return lines


# -- MariaDB ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def short_binlog() -> Iterator[MariaDbServer]:
    with (
        mariadb_rig.spawn_local([f"--binlog-expire-logs-seconds={EXPIRE_S}"]) as server,
        server.fresh_database() as db,
    ):
        yield db


def _binlogs(db: MariaDbServer) -> list[str]:
    with db.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [row[0] for row in cur.fetchall()]


def test_mariadb_binlog_expiry_warns_then_the_purged_file_is_lost(tmp_path: Path, short_binlog: MariaDbServer) -> None:
    db = short_binlog
    execute(db, "CREATE TABLE items (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO items VALUES (1, 'a')")
    props = mysql_props(db)
    partition = {"server": props["topic.prefix"]}
    with MySqlRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        execute(db, "INSERT INTO items VALUES (2, 'b')")
        run.wait_data(2)
        published = run.task._metrics()[m.POSITION_RETENTION]  # the running task's own reading
    offset = run.offsets.offsets([partition])[0]
    assert offset is not None and not offset.get("snapshot")
    needed = offset["file"]
    # Its file is the one being written: the countdown has not started, the whole period is left.
    assert published["state"] == "kept" and published["seconds_left"] == EXPIRE_S
    assert published["subject"] == f"binlog {needed}" and "the file being written" in published["note"]

    job = mysql_delta_job(tmp_path, "shop", props, {f"{db.database}.items": "keys: [id]"})
    _store_offset(job, partition, offset)
    execute(db, "FLUSH BINARY LOGS")  # the job is stopped: its file closes and starts to age
    kept = MySqlConnector().position_retention(props, offset)
    assert kept.state == "kept" and kept.subject == f"binlog {needed}"
    assert kept.seconds_left is not None and 0 < kept.seconds_left <= EXPIRE_S
    assert kept.limit == f"binlog_expire_logs_seconds={EXPIRE_S}"

    code, lines = _validate(job)
    assert code == 0, lines
    warning = f"until binlog {needed} is purged (binlog_expire_logs_seconds={EXPIRE_S}): under warn.position.loss"
    assert any(
        line.startswith("warning: ") and "source: position kept: ~" in line and warning in line for line in lines
    )
    assert needed in _binlogs(db)  # the warning came while the file is still there
    status = _status_lines(job)
    assert any(
        line.startswith("position kept: ~")
        and line.endswith(f"binlog {needed} is purged (binlog_expire_logs_seconds={EXPIRE_S})")
        for line in status
    ), status

    time.sleep(max(0.0, kept.seconds_until_lost() or 0.0) + 1.5)  # past the expiry (the server counts whole seconds)
    deadline = time.monotonic() + 10
    while needed in _binlogs(db) and time.monotonic() < deadline:
        execute(db, "FLUSH BINARY LOGS")  # the server purges at a rotation
        time.sleep(0.2)
    assert needed not in _binlogs(db)
    lost = MySqlConnector().position_retention(props, offset)
    assert lost.state == "lost" and not lost.snapshot_on_loss
    assert lost.describe().startswith(
        f"position lost: binlog {needed} of the stored offset (pos {offset['pos']}) was purged"
    )
    code, lines = _validate(job)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: ") and "source: position lost: binlog" in lines[0]
    assert "set snapshot.mode=when_needed" in lines[0]
    assert any(line.startswith("position lost: binlog") for line in _status_lines(job))
    recovers = MySqlConnector().position_retention({**props, "snapshot.mode": "when_needed"}, offset)
    assert recovers.state == "lost" and recovers.snapshot_on_loss and "takes a new snapshot" in (recovers.note or "")


# -- PostgreSQL ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_slot_limit() -> Iterator[PostgresServer]:
    # No checkpoint but the test's own: the slot is invalidated only when the test says so.
    settings = {"max_slot_wal_keep_size": SLOT_LIMIT, "max_wal_size": "1GB", "checkpoint_timeout": "30min"}
    with postgres_rig.provide(settings) as server:
        yield server


def _slot(sql: Any, name: str) -> tuple[str | None, int | None]:
    row = sql.execute("SELECT wal_status, safe_wal_size FROM pg_replication_slots WHERE slot_name = %s", (name,))
    return row.fetchone()


class WalWriter:
    """Writes WAL in the background (about 1 MB every 0.25 s) while the job stays stopped."""

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.server.connect(autocommit=True) as sql:
            while not self.stop.is_set():
                sql.execute("INSERT INTO filler (v) SELECT repeat('x', 1000) FROM generate_series(1, 1000)")
                self.stop.wait(0.25)

    def __enter__(self) -> WalWriter:
        self.thread.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def test_postgres_slot_limit_warns_before_the_slot_is_invalidated(
    tmp_path: Path, small_slot_limit: PostgresServer
) -> None:
    server = small_slot_limit
    sql = server.connect(autocommit=True)
    sql.execute("CREATE TABLE accounts (id int PRIMARY KEY, v text)")
    sql.execute("CREATE TABLE filler (id serial PRIMARY KEY, v text)")
    sql.execute("INSERT INTO accounts VALUES (1, 'a')")
    props = pg_props(server, **{"slot.drop.on.stop": "false", "table.include.list": "public.accounts"})
    slot, partition = props["slot.name"], {"server": props["topic.prefix"]}
    with PostgresRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming(sql)
        sql.execute("INSERT INTO accounts VALUES (2, 'b')")
        run.wait_data(2)  # the stored offset is a streaming one
        run.task._metrics()
        run.task._wal_next = 0.0  # a second reading now, not in 4 s: the task's rate needs two
        published = run.task._metrics()[m.POSITION_RETENTION]
    offset = run.offsets.offsets([partition])[0]
    assert offset is not None and not offset.get("snapshot")
    assert published["state"] == "kept" and published["limit"] == f"max_slot_wal_keep_size={SLOT_LIMIT}"
    assert published["subject"] == f"slot {slot}"

    job = mysql_delta_job(tmp_path, "bank", props, {"public.accounts": "keys: [id]"})
    _store_offset(job, partition, offset)
    with WalWriter(server):
        kept = PostgresConnector().position_retention(props, offset)
        assert kept.state == "kept" and kept.seconds_left is not None and 0 <= kept.seconds_left < 600, kept
        code, lines = _validate(job)
        assert code == 0, lines
        warning = f"until slot {slot} is invalidated (max_slot_wal_keep_size={SLOT_LIMIT})"
        assert any(
            line.startswith("warning: ") and warning in line and "under warn.position.loss" in line for line in lines
        )
        assert _slot(sql, slot)[0] in ("reserved", "extended", "unreserved")  # not lost when the warning came
        status = _status_lines(job)
        assert any(line.startswith("position kept: ~") and warning in line for line in status), status

    for _ in range(40):  # past the limit, then the checkpoint that invalidates the slot
        wal_status, safe = _slot(sql, slot)
        if wal_status == "unreserved" or (safe is not None and safe <= 0):
            break
        sql.execute("INSERT INTO filler (v) SELECT repeat('x', 1000) FROM generate_series(1, 4000)")
    sql.execute("CHECKPOINT")
    assert _slot(sql, slot)[0] == "lost"
    lost = PostgresConnector().position_retention(props, offset)
    assert lost.state == "lost" and f"replication slot {slot!r} was invalidated" in lost.describe()
    code, lines = _validate(job)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: ") and "source: position lost: replication slot" in lines[0]
    assert "set snapshot.mode=when_needed" in lines[0]
    assert any(line.startswith("position lost: replication slot") for line in _status_lines(job))
    sql.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    sql.close()

"""read.only=true incremental snapshots on MariaDB: GTID-set watermarks, nothing written to the database.

Re-expresses Debezium's ReadOnlyIncrementalSnapshotIT (MySQL/MariaDB): signals over the file channel
(and the signal table, read only, with a signal someone else inserted) drive a snapshot while a seeded
writer updates, deletes and re-inserts rows; the connector user may not write the signal table at all,
which stays as it was; the events, applied per key by binlog sequence, equal the table; no key is read
twice. The GTID-set logic (MySQL 8 sets included) is checked on constructed values.
"""

from __future__ import annotations

import collections
import logging
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cdc.api import ConnectException
from cdc.runtime.signal_delivery import channel_of, deliver, execute_snapshot
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.incremental import MySqlIncrementalSnapshot
from cdc_mysql.incremental_read_only import GtidSet, GtidWindow, parse_gtid, raise_unless_gtids
from tests.mysql.harness import MemoryOffsets, TaskRunner, connector_props, execute
from tests.mysql.incremental_support import SIGNAL_TABLE, incremental_reads, replay, send_signal
from tests.rig import MariaDbServer

ROWS = 300
CHUNK = 8
SEED_ENV = "CDC_READ_ONLY_SNAPSHOT_SEED"
UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UUID2 = "4a000000-0000-0000-0000-0000000000ff"


# -- the GTID sets, on constructed values ---------------------------------------------------------------
def test_mariadb_sets_compare_per_domain_by_sequence() -> None:
    low = GtidSet.parse("0-1-100,1-2-7", True)
    assert low.contains("0", 100) and low.contains("0", 1) and not low.contains("0", 101)
    assert not low.contains("5", 1)  # a domain the set has never seen
    high = GtidSet.parse("0-1-104,1-2-7", True)
    window = GtidWindow("c", low, high)
    assert window.opens(*parse_gtid("0-1-101", True)) and not window.closes(*parse_gtid("0-3-104", True))
    assert window.closes(*parse_gtid("0-1-105", True)) and window.closes(*parse_gtid("2-1-1", True))
    assert not window.opens(*parse_gtid("1-2-7", True))
    assert not window.reached_by(GtidSet.parse("0-1-103,1-2-9", True))
    assert window.reached_by(GtidSet.parse("0-1-104", True))  # domain 1 did not move during the chunk
    idle = GtidWindow("c", low, GtidSet.parse("0-1-100,1-2-7", True))
    assert idle.reached_by(GtidSet.parse("0-1-100", True)) and not idle.reached_by(GtidSet.parse("0-1-99", True))
    assert not idle.reached_by(GtidSet.parse("", True)) and not GtidWindow("c", low).reached_by(low)


def test_mysql_sets_compare_intervals_per_server_uuid_and_tag() -> None:
    rnd = random.Random(7)
    for _ in range(200):
        done = sorted(rnd.sample(range(1, 60), rnd.randint(1, 30)))
        text = f"{UUID}:" + ":".join(f"{n}-{n}" if rnd.random() < 0.5 else str(n) for n in done)
        text += f",\n{UUID2.upper()}:tag_a:1-3"
        s = GtidSet.parse(text, False)
        for n in range(1, 61):
            assert s.contains(*parse_gtid(f"{UUID}:{n}", False)) == (n in done)
        assert s.contains(*parse_gtid(f"{UUID2}:TAG_A:2", False)) and not s.contains(*parse_gtid(f"{UUID2}:2", False))
    low = GtidSet.parse(f"{UUID}:1-10", False)
    window = GtidWindow("c", low, GtidSet.parse(f"{UUID}:1-12,{UUID2}:1-2", False))
    assert window.opens(*parse_gtid(f"{UUID}:11", False)) and not window.closes(*parse_gtid(f"{UUID}:12", False))
    assert window.closes(*parse_gtid(f"{UUID}:13", False)) and not window.closes(*parse_gtid(f"{UUID2}:1", False))
    assert not window.reached_by(GtidSet.parse(f"{UUID}:1-12", False))  # UUID2 moved too: not streamed yet
    assert window.reached_by(GtidSet.parse(f"{UUID}:1-12,{UUID2}:1-5", False))


def test_another_server_between_the_watermarks_is_a_failover() -> None:
    # Debezium's serverUuidChanged: a source in the high set the low set lacks; on MariaDB also a domain
    # whose last GTID comes from another server id.
    def changed(low: str, high: str, mariadb: bool) -> bool:
        return GtidWindow("c", GtidSet.parse(low, mariadb), GtidSet.parse(high, mariadb)).server_changed()

    assert not changed(f"{UUID}:1-10", f"{UUID}:1-12", False)
    assert changed(f"{UUID}:1-10", f"{UUID}:1-12,{UUID2}:1", False)
    assert not changed(f"{UUID}:1-10,{UUID2}:1-3", f"{UUID}:1-12,{UUID2}:1-3", False)
    assert not changed("0-1-100", "0-1-104", True) and not changed("0-1-100,1-2-7", "0-1-100,1-2-9", True)
    assert changed("0-1-100", "0-1-104,9-1-1", True)  # a new domain
    assert changed("0-1-100", "0-2-101", True)  # the domain's writer is another server now
    assert not GtidWindow("c", GtidSet.parse("0-1-100", True)).server_changed()  # no high watermark yet


def test_gtid_mode_off_is_one_line_naming_read_only_and_the_fix() -> None:
    raise_unless_gtids("ON", "h:3306")
    with pytest.raises(ConnectException) as e:
        raise_unless_gtids("OFF_PERMISSIVE", "h:3306")
    text = str(e.value)
    assert "\n" not in text and "read.only" in text and "gtid_mode=ON" in text and "h:3306" in text


def test_read_only_is_a_boolean_key_that_defaults_to_false(mariadb_db: MariaDbServer) -> None:
    assert MySqlConnectorConfig(connector_props(mariadb_db)).read_only is False
    assert MySqlConnectorConfig(connector_props(mariadb_db, read__only="true")).read_only is True


def test_cli_and_rest_signals_go_to_a_channel_that_writes_no_database_with_read_only() -> None:
    base = {"signal.data.collection": "db.signals", "signal.enabled.channels": "source,kafka,file"}
    assert channel_of(base) == "source"
    assert channel_of({**base, "read.only": "true"}) == "file"
    assert channel_of({**base, "read.only": "TRUE", "signal.enabled.channels": "kafka,source"}) == "kafka"
    # the source channel alone: a row in the signal table, as someone inserting it would (Debezium reads it)
    assert channel_of({**base, "read.only": "true", "signal.enabled.channels": "source"}) == "source"


def _no_table_writes(*_: Any) -> None:
    raise AssertionError("read.only: the signal table was to be written")


def _no_log() -> Any:
    raise AssertionError("read.only with the file channel: the kafka channel was used")


# -- end to end on MariaDB ---------------------------------------------------------------------------------
def _table(server: MariaDbServer) -> dict[Any, dict[str, Any]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, v FROM t")
        return {(("id", i),): {"id": i, "v": v} for i, v in cur.fetchall()}


def _signal_rows(server: MariaDbServer) -> list[tuple[Any, ...]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id, type FROM {SIGNAL_TABLE} ORDER BY id")
        return [tuple(r) for r in cur.fetchall()]


class Writer(threading.Thread):
    """Seeded updates, deletes and re-inserts of t (and other tables' noise) until stopped."""

    def __init__(self, server: MariaDbServer, seed: int) -> None:
        super().__init__(daemon=True)
        self.server, self.rnd = server, random.Random(seed)
        self.stop_flag = threading.Event()
        self.touched: set[int] = set()
        self.changes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.server.connect() as conn, conn.cursor() as cur:
                while not self.stop_flag.is_set():
                    k = self.rnd.randint(1, ROWS + 40)
                    pick = self.rnd.random()
                    if pick < 0.4:
                        cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (k,))
                    elif pick < 0.6:
                        cur.execute("DELETE FROM t WHERE id = %s", (k,))
                    elif pick < 0.85:
                        cur.execute("INSERT IGNORE INTO t VALUES (%s, %s)", (k, self.rnd.randint(1000, 2000)))
                    else:
                        cur.execute("UPDATE other SET v = v + 1")  # a transaction of a table not captured
                        k = 0
                    self.touched.add(k)
                    self.changes += 1
                    if self.changes % 10 == 0:
                        time.sleep(0.005)
        except BaseException as e:  # surfaced by the test
            self.error = e


def _create(server: MariaDbServer) -> None:
    execute(
        server,
        f"CREATE TABLE {SIGNAL_TABLE} (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE marker (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE other (id INT PRIMARY KEY, v INT)",
        "INSERT INTO marker VALUES (1, 0)",
        "INSERT INTO other VALUES (1, 0)",
        "INSERT INTO t VALUES " + ",".join(f"({i}, {i})" for i in range(1, ROWS + 1)),
    )
    # No INSERT/DELETE grant on the signal table: a watermark write by the connector would fail.
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SHOW GRANTS FOR '{server.cdc_user}'@'%'")
        grants = [str(r[0]).upper() for r in cur.fetchall()]
    here = [g for g in grants if " ON *.* " in g or f" ON `{server.database.upper()}`." in g]
    assert not [g for g in here if "INSERT" in g or "DELETE" in g or "ALL PRIVILEGES" in g], here


def _props(server: MariaDbServer, signal_file: Path, channels: str) -> dict[str, str]:
    return connector_props(
        server, snapshot__mode="no_data", read__only="true", incremental__snapshot__chunk__size=str(CHUNK),
        signal__enabled__channels=channels, signal__file=str(signal_file), signal__poll__interval__ms="100",
        signal__data__collection=f"{server.database}.{SIGNAL_TABLE}", max__batch__size="64",
        table__include__list=f"{server.database}.t,{server.database}.marker,{server.database}.{SIGNAL_TABLE}",
    )  # fmt: skip


def _caught_up(run: TaskRunner, server: MariaDbServer) -> None:
    run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=180, what="the incremental snapshot to end")
    token = random.randint(1, 10**9)
    execute(server, f"UPDATE marker SET v = {token}")
    run.poll_until(
        lambda rs: any(r.topic.endswith(".marker") and r.value is not None and r.value.get("op") == "u"
                       and r.value.get("after").get("v") == token for r in rs[-50:]),
        timeout=60, what="the marker change",
    )  # fmt: skip


def _check(records: list[Any], server: MariaDbServer, touched: set[int]) -> None:
    reads = incremental_reads(records, "t")
    per_key = collections.Counter(r.key.get("id") for r in reads)
    assert per_key and max(per_key.values()) == 1, [k for k, n in per_key.items() if n > 1]
    untouched = set(range(1, ROWS + 1)) - touched
    assert untouched <= set(per_key), sorted(untouched - set(per_key))[:10]
    assert replay(records, "t") == _table(server)


@pytest.mark.parametrize("seed,slow", [(11, False), (12, True), (13, True)])
def test_read_only_snapshot_under_a_concurrent_writer_writes_nothing(
    mariadb_db: MariaDbServer, tmp_path: Path, seed: int, slow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = int(os.environ.get(SEED_ENV, seed))
    print(f"{SEED_ENV}={seed}")  # shown with a failure: rerun with it
    if slow:
        # A slow server: time passes after the chunk's snapshot is taken and before the high watermark is
        # read, so writer transactions the SELECT does not see fall inside the windows.
        watermark = MySqlIncrementalSnapshot._read_only_watermark

        def slow_watermark(self: MySqlIncrementalSnapshot, cur: Any, chunk_id: str, which: str) -> None:
            if which == "open":
                watermark(self, cur, chunk_id, which)
                time.sleep(0.02)
                return
            time.sleep(0.02)
            watermark(self, cur, chunk_id, which)

        monkeypatch.setattr(MySqlIncrementalSnapshot, "_read_only_watermark", slow_watermark)
    _create(mariadb_db)
    signal_file = tmp_path / "signals.txt"
    writer = Writer(mariadb_db, seed)
    with TaskRunner(_props(mariadb_db, signal_file, "source,file"), MemoryOffsets()) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        writer.start()
        try:
            while writer.changes < 30 and writer.is_alive():
                run.poll_once()
            # What `cdc signal` and POST /connectors/{name}/signals do: with read.only, the file channel.
            signal = execute_snapshot([f"{mariadb_db.database}.t"], signal_id=f"ro-{seed}")
            where = deliver(run.props, signal, table_writer=_no_table_writes, topic_log=_no_log)
            assert where == f"file {signal_file}"
            # The writer goes on until the snapshot has ended.
            run.poll_until(lambda _: run.task.signals.ctx.correlation_id is not None, timeout=30, what="the signal")
            run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=180, what="the snapshot to end")
        finally:
            writer.stop_flag.set()
            writer.join(30)
        assert writer.error is None, writer.error
        _caught_up(run, mariadb_db)
    assert writer.changes > 50, writer.changes
    assert _signal_rows(mariadb_db) == []
    _check(run.records, mariadb_db, writer.touched)


def test_read_only_snapshot_started_by_a_row_someone_else_inserted(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    """The source channel alone, as Debezium allows in read-only mode: the table is read, never written."""
    _create(mariadb_db)
    with TaskRunner(_props(mariadb_db, tmp_path / "unused.txt", "source"), MemoryOffsets()) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        send_signal(mariadb_db, "ad-hoc-1", "execute-snapshot", {"data-collections": [f"{mariadb_db.database}.t"]})
        # nothing writes meanwhile: the windows close on the idle stream
        run.poll_until(lambda rs: len(incremental_reads(rs, "t")) >= ROWS, timeout=120, what="every row read")
        _caught_up(run, mariadb_db)
    assert _signal_rows(mariadb_db) == [("ad-hoc-1", "execute-snapshot")]
    _check(run.records, mariadb_db, set())
    assert len(incremental_reads(run.records, "t")) == ROWS


def test_read_only_snapshot_resumes_after_a_stop_mid_way(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    """A task stopped mid-snapshot resumes from the stored offsets (the window itself is never stored: the
    chunk in flight is read again), and the two runs' events together still replay to the table."""
    seed = int(os.environ.get(SEED_ENV, 17))
    print(f"{SEED_ENV}={seed}")
    _create(mariadb_db)
    signal_file = tmp_path / "signals.txt"
    props = _props(mariadb_db, signal_file, "file")
    offsets = MemoryOffsets()
    writer = Writer(mariadb_db, seed)
    first = TaskRunner(props, offsets).__enter__()
    second: TaskRunner | None = None
    try:
        first.poll_until(lambda _: first.task.streaming is not None, what="streaming")
        writer.start()
        signal = execute_snapshot([f"{mariadb_db.database}.t"], signal_id="ro-stop")
        deliver(props, signal, table_writer=_no_table_writes, topic_log=_no_log)
        first.poll_until(lambda rs: len(incremental_reads(rs, "t")) > ROWS // 3, timeout=120, what="a third read")
        stored = next(iter(offsets.stored.values()))
        assert "incremental_snapshot_primary_key" in stored
        first.__exit__(None, None, None)
        second = TaskRunner(props, offsets).__enter__()
        second.poll_until(lambda _: second.task.streaming is not None, what="streaming again")
        second.poll_until(lambda _: not second.task.signals.ctx.running, timeout=180, what="the snapshot to end")
        writer.stop_flag.set()
        writer.join(30)
        assert writer.error is None, writer.error
        _caught_up(second, mariadb_db)
    finally:
        writer.stop_flag.set()
        first.__exit__(None, None, None)
        if second is not None:
            second.__exit__(None, None, None)
    assert second is not None
    assert 0 < len(incremental_reads(second.records, "t")) < ROWS  # resumed, not started over
    for run in (first, second):
        per_key = collections.Counter(r.key.get("id") for r in incremental_reads(run.records, "t"))
        assert max(per_key.values()) == 1
    assert replay(first.records + second.records, "t") == _table(mariadb_db)
    assert _signal_rows(mariadb_db) == []


@pytest.mark.parametrize("failover", ["new domain", "new server id"])
def test_a_chunk_read_across_a_failover_is_read_again(
    mariadb_db: MariaDbServer, tmp_path: Path, failover: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """Another server's transaction between a chunk's watermarks (made here by a session's gtid_domain_id or
    server_id, as a failover makes it): the chunk is dropped and read again, each key read once."""
    _create(mariadb_db)
    watermark = MySqlIncrementalSnapshot._read_only_watermark
    opened: list[str] = []

    def failover_in_chunk_2(self: MySqlIncrementalSnapshot, cur: Any, chunk_id: str, which: str) -> None:
        if which == "open":
            opened.append(chunk_id)
        elif len(opened) == 2:
            setting = "gtid_domain_id = 9" if failover == "new domain" else "server_id = 77"
            execute(mariadb_db, f"SET SESSION {setting}", "UPDATE other SET v = v + 1")
        watermark(self, cur, chunk_id, which)

    monkeypatch.setattr(MySqlIncrementalSnapshot, "_read_only_watermark", failover_in_chunk_2)
    caplog.set_level(logging.WARNING, logger="cdc_mysql.incremental")
    with TaskRunner(_props(mariadb_db, tmp_path / "unused.txt", "source"), MemoryOffsets()) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        send_signal(mariadb_db, "fo-1", "execute-snapshot", {"data-collections": [f"{mariadb_db.database}.t"]})
        run.poll_until(lambda rs: len(incremental_reads(rs, "t")) >= ROWS, timeout=120, what="every row read")
        _caught_up(run, mariadb_db)
    again = [r.getMessage() for r in caplog.records if "reading the chunk again" in r.getMessage()]
    assert len(again) == 1 and opened[1] in again[0], again
    assert len(opened) == ROWS // CHUNK + (ROWS % CHUNK > 0) + 1  # one chunk twice
    _check(run.records, mariadb_db, set())
    assert len(incremental_reads(run.records, "t")) == ROWS

"""read.only=true incremental snapshots on PostgreSQL: pg_current_snapshot() watermarks, nothing written.

Re-expresses Debezium's PostgreSQL ReadOnlyIncrementalSnapshotIT and
PostgresReadOnlyIncrementalSnapshotChangeEventSourceTest: signals over the file channel (and the signal
table, read only, with a signal someone else inserted) drive a snapshot while a seeded writer updates,
deletes and re-inserts rows, partly in transactions held open across chunks (the snapshots' xip lists);
the signal table stays as it was; the events, applied per key by (commit LSN, LSN) as the sinks rank
them, equal the table; no key is read twice. The transaction id rules are checked on constructed values.
"""

from __future__ import annotations

import collections
import json
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cdc.api import ConfigDef, SourceRecord
from cdc_postgres.debezium_keys import define
from cdc_postgres.incremental import PostgresIncrementalSnapshot
from cdc_postgres.incremental_read_only import PgSnapshot, XidWindow, precedes
from cdc_postgres.streaming import Position
from cdc_spark.decode.sequence import from_source, unpack
from tests.postgres.harness import MemoryOffsets, TaskRunner, connector_props
from tests.rig import PostgresServer

ROWS = 300
CHUNK = 8
SIGNALS = "public.debezium_signal"
SEED_ENV = "CDC_READ_ONLY_SNAPSHOT_SEED"


# -- the transaction id rules, on constructed values ----------------------------------------------------
def test_snapshot_text_and_running_transactions() -> None:
    s = PgSnapshot.parse("100:110:102,105")
    assert [x for x in range(95, 115) if s.running(x)] == [102, 105, 110, 111, 112, 113, 114]
    # xid8 values carry the epoch in the high 32 bits; pgoutput's xids do not
    epoch = PgSnapshot.parse(f"{(3 << 32) + 100}:{(3 << 32) + 110}:{(3 << 32) + 102}")
    assert epoch == PgSnapshot(100, 110, frozenset({102}))
    assert PgSnapshot.parse("7:7:") == PgSnapshot(7, 7, frozenset())


def test_transaction_ids_compare_across_wraparound() -> None:
    rnd = random.Random(5)
    for _ in range(500):
        a = rnd.randint(3, 2**32 - 1)
        d = rnd.randint(1, 2**31 - 1)
        b = (a + d) % 2**32
        assert precedes(a, b) and not precedes(b, a)
    s = PgSnapshot(2**32 - 5, 3, frozenset({2**32 - 2}))  # the ids wrapped between xmin and xmax
    assert not s.running(2**32 - 6) and not s.running(2**32 - 3) and s.running(2**32 - 2)
    assert not s.running(2) and s.running(3) and s.running(4)


def test_window_opens_past_the_low_snapshot_and_closes_past_the_high_one() -> None:
    w = XidWindow("c", PgSnapshot.parse("100:104:101"))
    assert not w.opens(99) and w.opens(101) and not w.opens(102) and w.opens(104)
    assert not w.closes(200) and not w.reached(10**9)  # no high watermark yet
    w.high, w.high_lsn = PgSnapshot.parse("101:108:101,106"), 5000
    assert w.closes(101) and w.closes(106) and w.closes(108)
    assert not w.closes(104) and not w.closes(107)
    assert not w.reached(4999) and w.reached(5000)


def test_a_position_between_transactions_covers_no_event_of_the_next_one() -> None:
    """A heartbeat's or an idle chunk's offset (lsn_commit = lsn = L, no event counted) stands at the end of
    the last record streamed; the next transaction's commit record may start exactly at L, with its changes
    at lower LSNs. A resume from that offset must send them all; an event's own offset still skips itself."""
    between = Position(5000, 5000, 0)
    assert not any(between.covers(5000, lsn, n) for lsn in (1000, 4999, 5000) for n in (1, 2))
    event = Position(5000, 4000, 2)  # the second event at LSN 4000 of the transaction committed at 5000
    assert event.covers(5000, 3000, 1) and event.covers(5000, 4000, 2)
    assert not event.covers(5000, 4000, 3) and not event.covers(5000, 4100, 1) and not event.covers(6000, 10, 1)
    message = Position(7000, 7000, 1)  # a non-transactional logical decoding message at 7000
    assert message.covers(7000, 7000, 1) and not message.covers(7000, 7000, 2)


def test_read_only_is_a_boolean_key() -> None:
    d = define(ConfigDef())
    assert "read.only" in d.names()
    values = {v.name: v for v in d.validate({"read.only": "maybe"})}
    assert values["read.only"].errors


# -- end to end ------------------------------------------------------------------------------------------
def _sql(db: PostgresServer, *statements: str) -> None:
    with db.connect(autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


def _setup(db: PostgresServer) -> None:
    _sql(
        db,
        f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
        "CREATE TABLE t (id int PRIMARY KEY, v int)",
        "CREATE TABLE marker (id int PRIMARY KEY, v int)",
        "CREATE TABLE other (id int PRIMARY KEY, v int)",
        "INSERT INTO marker VALUES (1, 0)",
        "INSERT INTO other VALUES (1, 0)",
        f"INSERT INTO t SELECT g, g FROM generate_series(1, {ROWS}) g",
    )


class Writer(threading.Thread):
    """Seeded updates, deletes and re-inserts of t; with `held`, each in a transaction kept open a while."""

    def __init__(self, db: PostgresServer, seed: int, held: bool) -> None:
        super().__init__(daemon=True)
        self.db, self.rnd, self.held = db, random.Random(seed), held
        self.stop_flag = threading.Event()
        self.touched: set[int] = set()
        self.changes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.db.connect(autocommit=True) as conn:
                while not self.stop_flag.is_set():
                    if self.held:
                        with conn.transaction():
                            self._one(conn)
                            time.sleep(self.rnd.uniform(0.01, 0.08))
                            self._one(conn)
                    else:
                        self._one(conn)
                        if self.changes % 10 == 0:
                            time.sleep(0.005)
        except BaseException as e:  # surfaced by the test
            self.error = e

    def _one(self, conn: Any) -> None:
        k = self.rnd.randint(1, ROWS + 40)
        pick = self.rnd.random()
        if pick < 0.4:
            conn.execute("UPDATE t SET v = v + 1 WHERE id = %s", (k,))
        elif pick < 0.6:
            conn.execute("DELETE FROM t WHERE id = %s", (k,))
        elif pick < 0.85:
            conn.execute("INSERT INTO t VALUES (%s, %s) ON CONFLICT DO NOTHING", (k, self.rnd.randint(1000, 2000)))
        else:
            conn.execute("UPDATE other SET v = v + 1")  # a transaction of a table not captured
            k = 0
        self.touched.add(k)
        self.changes += 1


def _reads(records: list[SourceRecord]) -> list[SourceRecord]:
    return [
        r for r in records
        if r.topic.endswith(".t") and r.value is not None and r.value.schema.field("op") is not None
        and r.value.get("op") == "r" and r.value.get("source").get("snapshot") == "incremental"
    ]  # fmt: skip


def _replay(records: list[SourceRecord]) -> dict[int, dict[str, Any]]:
    """Per key, the event with the highest sequence wins, ranked by the sinks' own rule (cdc_spark's
    decode/sequence.py: (commit LSN, LSN), and (LSN, 0) without a commit LSN)."""
    latest: dict[int, tuple[bytes, int, SourceRecord]] = {}
    for i, r in enumerate(records):
        if r.value is None or not r.topic.endswith(".t") or r.value.schema.field("op") is None:
            continue
        seq = from_source(r.value.get("source").to_dict())
        key = r.key.get("id")
        if key not in latest or (seq, i) >= latest[key][:2]:
            latest[key] = (seq, i, r)
    return {k: r.value.get("after").to_dict() for k, (_, _, r) in latest.items() if r.value.get("op") != "d"}


def _table(db: PostgresServer) -> dict[int, dict[str, Any]]:
    with db.connect() as conn:
        return {i: {"id": i, "v": v} for i, v in conn.execute("SELECT id, v FROM t").fetchall()}


def _signal_rows(db: PostgresServer) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        return [tuple(r) for r in conn.execute(f"SELECT id, type FROM {SIGNALS} ORDER BY id").fetchall()]


def _props(db: PostgresServer, signal_file: Path, channels: str, slot: str) -> dict[str, str]:
    return connector_props(
        db, snapshot__mode="no_data", read__only="true", incremental__snapshot__chunk__size=str(CHUNK),
        signal__enabled__channels=channels, signal__file=str(signal_file), signal__poll__interval__ms="100",
        signal__data__collection=SIGNALS, max__batch__size="64", slot__name=slot, heartbeat__interval__ms="200",
        table__include__list=f"public.t,public.marker,{SIGNALS}",
    )  # fmt: skip


def _caught_up(run: TaskRunner, db: PostgresServer) -> None:
    run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=180, what="the snapshot's end")
    token = random.randint(1, 10**9)
    _sql(db, f"UPDATE marker SET v = {token}")
    run.poll_until(
        lambda rs: any(r.topic.endswith(".marker") and r.value is not None and r.value.schema.field("op") is not None
                       and r.value.get("op") == "u" and r.value.get("after").get("v") == token for r in rs[-50:]),
        timeout=60, what="the marker change",
    )  # fmt: skip


def _check(records: list[SourceRecord], db: PostgresServer, touched: set[int]) -> None:
    per_key = collections.Counter(r.key.get("id") for r in _reads(records))
    assert per_key and max(per_key.values()) == 1, [k for k, n in per_key.items() if n > 1]
    untouched = set(range(1, ROWS + 1)) - touched
    assert untouched <= set(per_key), sorted(untouched - set(per_key))[:10]
    assert _replay(records) == _table(db)


@pytest.mark.parametrize("seed,slow", [(21, False), (22, True), (23, True)])
def test_read_only_snapshot_under_concurrent_writers_writes_nothing(
    postgres_db: PostgresServer, tmp_path: Path, seed: int, slow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = int(os.environ.get(SEED_ENV, seed))
    print(f"{SEED_ENV}={seed}")  # shown with a failure: rerun with it
    if slow:
        # A slow server: time passes between the chunk SELECT and the high watermark, so writer transactions
        # the SELECT does not see fall inside the windows.
        watermark = PostgresIncrementalSnapshot._read_only_watermark

        def slow_watermark(self: PostgresIncrementalSnapshot, conn: Any, chunk_id: str, which: str) -> None:
            if which == "close":
                time.sleep(0.02)
            watermark(self, conn, chunk_id, which)

        monkeypatch.setattr(PostgresIncrementalSnapshot, "_read_only_watermark", slow_watermark)
    _setup(postgres_db)
    signal_file = tmp_path / "signals.txt"
    writers = [Writer(postgres_db, seed, held=False), Writer(postgres_db, seed + 1000, held=True)]
    with TaskRunner(_props(postgres_db, signal_file, "source,file", f"ro_{seed}")) as run:
        with postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
        for w in writers:
            w.start()
        try:
            while sum(w.changes for w in writers) < 30 and all(w.is_alive() for w in writers):
                run.poll_once()
            doc = {"id": f"ro-{seed}", "type": "execute-snapshot", "data": {"data-collections": ["public.t"]}}
            signal_file.write_text(json.dumps(doc) + "\n")
            # The writers go on until the snapshot has ended.
            run.poll_until(lambda _: run.task.signals.ctx.correlation_id is not None, timeout=30, what="the signal")
            run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=180, what="the snapshot to end")
        finally:
            for w in writers:
                w.stop_flag.set()
            for w in writers:
                w.join(30)
        for w in writers:
            assert w.error is None, w.error
        _caught_up(run, postgres_db)
    assert sum(w.changes for w in writers) > 50
    assert _signal_rows(postgres_db) == []
    _check(run.records, postgres_db, writers[0].touched | writers[1].touched)


def test_rows_of_a_window_closed_idle_rank_below_a_transaction_committing_right_after(
    postgres_db: PostgresServer, tmp_path: Path
) -> None:
    """A transaction holds a change to a chunk key across the chunk (the SELECT reads the old value), and the
    window closes idle (no captured change: the stream passed the high watermark's WAL position). Committed
    then, its commit record can start exactly where the stream stood when the window closed, while its
    change's LSN is lower: the chunk's rows must still rank below it, or the stale row wins in the lake."""
    _setup(postgres_db)
    signal_file = tmp_path / "signals.txt"
    with TaskRunner(_props(postgres_db, signal_file, "file", "ro_idle")) as run:
        with postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
        with postgres_db.connect(autocommit=False) as held:
            held.execute("UPDATE t SET v = -1 WHERE id = 5")  # held open across every chunk
            held.execute("UPDATE t SET v = -2 WHERE id = %s", (ROWS,))
            # A commit of a table not captured flushes the held changes' WAL: the stream reads past them (and
            # the keepalives report it) while their transaction is still open. Its commit record then starts
            # where that commit's ends, unless the server writes something else in between.
            _sql(postgres_db, "UPDATE other SET v = v + 1")
            doc = {"id": "ro-idle", "type": "execute-snapshot", "data": {"data-collections": ["public.t"]}}
            signal_file.write_text(json.dumps(doc) + "\n")
            run.poll_until(lambda rs: len(_reads(rs)) >= ROWS, timeout=120, what="every row read")
            run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=60, what="the snapshot's end")
            held.commit()
        _caught_up(run, postgres_db)
    stale = [r for r in _reads(run.records) if r.key.get("id") in (5, ROWS)]
    changed = [r for r in run.records if r.topic.endswith(".t") and r.value is not None
               and r.value.schema.field("op") is not None and r.value.get("op") == "u"]  # fmt: skip
    assert len(stale) == 2 and len(changed) == 2
    for read, change in zip(sorted(stale, key=lambda r: r.key.get("id")), changed, strict=True):
        read_seq, change_seq = (from_source(r.value.get("source").to_dict()) for r in (read, change))
        assert read_seq < change_seq, (unpack(read_seq), unpack(change_seq))
    _check(run.records, postgres_db, set())


def test_read_only_snapshot_started_by_a_row_someone_else_inserted(postgres_db: PostgresServer, tmp_path: Path) -> None:
    """The source channel alone, as Debezium allows in read-only mode: the table is read, never written;
    with nothing else happening the windows close at the walsender's keepalives."""
    _setup(postgres_db)
    with TaskRunner(_props(postgres_db, tmp_path / "unused.txt", "source", "ro_source")) as run:
        with postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
        _sql(postgres_db, f"INSERT INTO {SIGNALS} VALUES ('ad-hoc-1', 'execute-snapshot', "
                          "'{\"data-collections\": [\"public.t\"]}')")  # fmt: skip
        run.poll_until(lambda rs: len(_reads(rs)) >= ROWS, timeout=120, what="every row read")
        _caught_up(run, postgres_db)
    assert _signal_rows(postgres_db) == [("ad-hoc-1", "execute-snapshot")]
    _check(run.records, postgres_db, set())
    assert len(_reads(run.records)) == ROWS


def test_read_only_snapshot_resumes_after_a_stop_mid_way(postgres_db: PostgresServer, tmp_path: Path) -> None:
    """A task stopped mid-snapshot resumes from the stored offsets (the window itself is never stored: the
    chunk in flight is read again), and the two runs' events together still replay to the table."""
    seed = int(os.environ.get(SEED_ENV, 27))
    print(f"{SEED_ENV}={seed}")
    _setup(postgres_db)
    signal_file = tmp_path / "signals.txt"
    slot = f"ro_stop_{int(time.time() * 1000) % 100000}"
    props = {**_props(postgres_db, signal_file, "file", slot), "slot.drop.on.stop": "false"}
    offsets = MemoryOffsets()
    writers = [Writer(postgres_db, seed, held=False), Writer(postgres_db, seed + 1000, held=True)]
    first = TaskRunner(props, offsets).__enter__()
    second: TaskRunner | None = None
    try:
        with postgres_db.connect(autocommit=True) as sql:
            first.wait_streaming(sql)
        for w in writers:
            w.start()
        doc = {"id": "ro-stop", "type": "execute-snapshot", "data": {"data-collections": ["public.t"]}}
        signal_file.write_text(json.dumps(doc) + "\n")
        first.poll_until(lambda rs: len(_reads(rs)) > ROWS // 3, timeout=120, what="a third read")
        assert "incremental_snapshot_primary_key" in next(iter(offsets.stored.values()))
        first.__exit__(None, None, None)
        second = TaskRunner(props, offsets).__enter__()
        second.poll_until(lambda _: second.task.signals is not None and not second.task.signals.ctx.running,
                          timeout=180, what="the snapshot to end")  # fmt: skip
        for w in writers:
            w.stop_flag.set()
        for w in writers:
            w.join(30)
            assert w.error is None, w.error
        _caught_up(second, postgres_db)
    finally:
        for w in writers:
            w.stop_flag.set()
        first.__exit__(None, None, None)
        if second is not None:
            second.__exit__(None, None, None)
        with postgres_db.connect(autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                         (slot,))  # fmt: skip
    assert second is not None
    assert 0 < len(_reads(second.records)) < ROWS  # resumed, not started over
    for run in (first, second):
        assert max(collections.Counter(r.key.get("id") for r in _reads(run.records)).values()) == 1
    assert _replay(first.records + second.records) == _table(postgres_db)
    assert _signal_rows(postgres_db) == []

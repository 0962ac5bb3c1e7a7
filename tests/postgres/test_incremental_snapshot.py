"""Incremental snapshots (Debezium's DBLog watermark algorithm) on PostgreSQL, driven by signals.

A seeded writer inserts, updates, deletes, re-inserts and re-keys rows (the chunk boundary keys
more often) while the snapshot reads chunks on its own thread and the WAL streams on another;
the events, applied per key by their WAL sequence as a sink applies them, must equal the table,
for integer, text, composite and bytea keys. One variant stops the task mid-snapshot and resumes.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from cdc.api import SourceRecord
from tests.postgres.harness import MemoryOffsets, TaskRunner, connector_props
from tests.rig import PostgresServer

CHUNK = 16
ROWS = 200
SIGNALS = "public.debezium_signal"


@dataclass(frozen=True)
class Shape:
    table: str
    key_ddl: str
    key_names: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"({', '.join(self.key_names)}) = ({', '.join(['%s'] * len(self.key_names))})"

    def new_key(self, rnd: random.Random) -> tuple[Any, ...]:
        alphabet = "abcdxyzABC0189-_~ "
        if self.table == "k_int":
            return (rnd.randint(-5000, 5000),)
        if self.table == "k_text":
            return ("".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 6))),)
        if self.table == "k_composite":
            return (rnd.randint(0, 20), "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 3))))
        return (bytes(rnd.choice([0, 1, 127, 128, 255, rnd.randint(0, 255)]) for _ in range(rnd.randint(1, 4))),)


SHAPES = [
    Shape("k_int", "id int", ("id",)),
    Shape("k_text", "id text", ("id",)),
    Shape("k_composite", "a int, b varchar(8)", ("a", "b")),
    Shape("k_bytea", "id bytea", ("id",)),
]


def _sql(db: PostgresServer, *statements: str) -> None:
    with db.connect(autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


def _send(db: PostgresServer, signal_id: str, kind: str, data: Any) -> None:
    with db.connect(autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {SIGNALS} VALUES (%s, %s, %s)", (signal_id, kind, None if data is None else json.dumps(data))
        )


def _setup(db: PostgresServer, rnd: random.Random) -> dict[str, set[tuple[Any, ...]]]:
    _sql(
        db,
        f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
        "CREATE TABLE marker (id int PRIMARY KEY, v int)",
        "INSERT INTO marker VALUES (1, 0)",
    )
    keys: dict[str, set[tuple[Any, ...]]] = {}
    with db.connect(autocommit=True) as conn:
        for s in SHAPES:
            conn.execute(f"CREATE TABLE {s.table} ({s.key_ddl}, v int, PRIMARY KEY ({', '.join(s.key_names)}))")
            mine: set[tuple[Any, ...]] = set()
            while len(mine) < ROWS:
                k = s.new_key(rnd)
                if k not in mine:
                    conn.execute(f"INSERT INTO {s.table} VALUES ({', '.join(['%s'] * (len(k) + 1))})", (*k, 0))
                    mine.add(k)
            keys[s.table] = mine
    return keys


class Writer(threading.Thread):
    def __init__(self, db: PostgresServer, seed: int, keys: dict[str, set[tuple[Any, ...]]]) -> None:
        super().__init__(daemon=True)
        self.db, self.rnd, self.keys = db, random.Random(seed), keys
        self.hot: dict[str, list[tuple[Any, ...]]] = {}
        with db.connect() as conn:
            for s in SHAPES:
                ordered = [tuple(r) for r in conn.execute(f"SELECT {', '.join(s.key_names)} FROM {s.table} "
                                                          f"ORDER BY {', '.join(s.key_names)}").fetchall()]  # fmt: skip
                self.hot[s.table] = ordered[CHUNK - 1 :: CHUNK] + ordered[CHUNK::CHUNK]
        self.stop_flag = threading.Event()
        self.changes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.db.connect(autocommit=True) as conn:
                while not self.stop_flag.is_set():
                    self._one(conn, self.rnd.choice(SHAPES))
                    self.changes += 1
                    if self.changes % 20 == 0:
                        time.sleep(0.01)
        except BaseException as e:
            self.error = e

    def _one(self, conn: Any, s: Shape) -> None:
        rnd, keys = self.rnd, self.keys[s.table]
        pick = rnd.random()
        hot = [k for k in self.hot[s.table] if k in keys] if rnd.random() < 0.5 else []
        target = rnd.choice(hot) if hot else (rnd.choice(sorted(keys, key=repr)) if keys else None)
        marks = ", ".join(["%s"] * len(s.key_names))
        if pick < 0.3 or target is None:
            k = rnd.choice(self.hot[s.table]) if rnd.random() < 0.3 else s.new_key(rnd)
            if k not in keys:
                conn.execute(f"INSERT INTO {s.table} VALUES ({marks}, %s)", (*k, rnd.randint(1, 9)))
                keys.add(k)
        elif pick < 0.6:
            conn.execute(f"UPDATE {s.table} SET v = v + 1 WHERE {s.where}", target)
        elif pick < 0.85:
            conn.execute(f"DELETE FROM {s.table} WHERE {s.where}", target)
            keys.discard(target)
        else:
            k = s.new_key(rnd)
            if k not in keys:
                sets = ", ".join(f"{n} = %s" for n in s.key_names)
                conn.execute(f"UPDATE {s.table} SET {sets} WHERE {s.where}", (*k, *target))
                keys.discard(target)
                keys.add(k)


def _reads(records: list[SourceRecord], table: str | None = None) -> list[SourceRecord]:
    return [
        r for r in records
        if r.value is not None and r.value.schema.field("op") is not None and r.value.get("op") == "r"
        and r.value.get("source").get("snapshot") == "incremental" and (table is None or r.topic.endswith("." + table))
    ]  # fmt: skip


def _replay(records: list[SourceRecord], table: str) -> dict[Any, dict[str, Any]]:
    """Per key, the event with the highest (commit LSN, LSN) wins (ties: the later one), as the sinks rank."""
    latest: dict[Any, tuple[tuple[int, int], int, SourceRecord]] = {}
    for i, r in enumerate(records):
        if r.value is None or not r.topic.endswith("." + table) or r.value.schema.field("op") is None:
            continue
        src = r.value.get("source")
        seq = (int(src.get("lsn") or 0) if r.value.get("op") == "r" else int(r.source_offset["lsn_commit"]),
               int(src.get("lsn") or 0))  # fmt: skip
        key = tuple(sorted(r.key.to_dict().items()))
        if key not in latest or (seq, i) >= latest[key][:2]:
            latest[key] = (seq, i, r)
    return {k: r.value.get("after").to_dict() for k, (_, _, r) in latest.items() if r.value.get("op") != "d"}


def _table(db: PostgresServer, shape: Shape) -> dict[Any, dict[str, Any]]:
    with db.connect() as conn:
        cur = conn.execute(f"SELECT * FROM {shape.table}")
        names = [d.name for d in cur.description]
        rows = [dict(zip(names, (bytes(v) if isinstance(v, memoryview) else v for v in r), strict=True)) for r in cur]
    return {tuple(sorted((n, row[n]) for n in shape.key_names)): row for row in rows}


def marker_seen(run: TaskRunner, db: PostgresServer) -> None:
    """Changes `marker` and polls until the stream brings that change: everything committed before is out."""
    token = random.randint(1, 10**9)
    _sql(db, f"UPDATE marker SET v = {token}")
    run.poll_until(
        lambda rs: any(r.topic.endswith(".marker") and r.value is not None and r.value.get("op") == "u"
                       and r.value.get("after").get("v") == token for r in rs[-50:]),
        timeout=60, what="the marker change",
    )  # fmt: skip


def _runner(db: PostgresServer, offsets: MemoryOffsets, strategy: str, slot: str) -> TaskRunner:
    props = connector_props(
        db, snapshot__mode="no_data", incremental__snapshot__chunk__size=str(CHUNK), signal__data__collection=SIGNALS,
        incremental__snapshot__watermarking__strategy=strategy, max__batch__size="64", slot__name=slot,
        slot__drop__on__stop="false",
    )  # fmt: skip
    return TaskRunner(props, offsets)


@pytest.mark.parametrize(
    "seed,strategy,kill",
    [(1, "insert_insert", False), (2, "insert_delete", False), (3, "insert_insert", True), (4, "insert_delete", True)],
)
def test_replayed_events_equal_the_table_under_a_concurrent_writer(
    postgres_db: PostgresServer, seed: int, strategy: str, kill: bool
) -> None:
    keys = _setup(postgres_db, random.Random(seed))
    offsets = MemoryOffsets()
    slot = f"incr_{seed}_{int(time.time() * 1000) % 100000}"
    records: list[SourceRecord] = []
    writer = Writer(postgres_db, seed, keys)
    run = _runner(postgres_db, offsets, strategy, slot).__enter__()
    try:
        with postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
        writer.start()
        _send(postgres_db, f"snap-{seed}", "execute-snapshot", {"data-collections": ["public\\.k_.*"]})
        if kill:
            run.poll_until(lambda rs: len(_reads(rs, "k_int")) > ROWS // 2, timeout=60, what="reads of k_int")
            stored = next(iter(offsets.stored.values()))
            assert "incremental_snapshot_collections" in stored and "incremental_snapshot_primary_key" in stored
            run.__exit__(None, None, None)
            records.extend(run.records)
            run = _runner(postgres_db, offsets, strategy, slot).__enter__()
            run.poll_until(lambda rs: len(_reads(rs)) > 0, timeout=60, what="resumed reads")
        # The writer keeps writing until the last table (k_text, in name order) is half read.
        run.poll_until(lambda rs: len(_reads(rs, "k_text")) >= ROWS // 2, timeout=120, what="reads of k_text")
        writer.stop_flag.set()
        writer.join(30)
        assert writer.error is None, writer.error
        run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=120, what="the snapshot's end")
        marker_seen(run, postgres_db)
    finally:
        writer.stop_flag.set()
        run.__exit__(None, None, None)
        with postgres_db.connect(autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                         (slot,))  # fmt: skip
    records.extend(run.records)
    assert writer.changes > 50, writer.changes
    for shape in SHAPES:
        assert _reads(records, shape.table), f"no incremental reads of {shape.table}"
        assert _replay(records, shape.table) == _table(postgres_db, shape), shape.table
    if kill:
        assert len(_reads(run.records, "k_int")) < ROWS
        assert not _reads(run.records, "k_bytea") and not _reads(run.records, "k_composite")


def test_bad_signals_are_one_warning_each_and_the_stream_goes_on(
    postgres_db: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    _setup(postgres_db, random.Random(0))
    props = connector_props(postgres_db, snapshot__mode="no_data", signal__data__collection=SIGNALS)
    bad = [("b1", "make-coffee", {}, "unknown signal type"), ("b2", "execute-snapshot", {"data-collections": ["x.y"]},
           "matches no table"), ("b3", "log", {"nope": 1}, "'message' string")]  # fmt: skip
    with caplog.at_level(logging.WARNING), TaskRunner(props) as run:
        with postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
        for signal_id, kind, data, _ in bad:
            _send(postgres_db, signal_id, kind, data)
        with postgres_db.connect(autocommit=True) as conn:
            conn.execute(f"INSERT INTO {SIGNALS} VALUES ('b4', 'execute-snapshot', '{{broken')")
        run.poll_until(lambda _: all(f"'{i}'" in caplog.text for i in ("b1", "b2", "b3", "b4")), what="the warnings")
        _sql(postgres_db, "UPDATE marker SET v = 5")
        run.wait_data(1, "public.marker")
    for signal_id, fragment in [(b[0], b[3]) for b in bad] + [("b4", "not valid JSON")]:
        lines = [r.getMessage() for r in caplog.records if f"'{signal_id}'" in r.getMessage()]
        assert len(lines) == 1 and fragment in lines[0], (signal_id, lines)
    assert _reads(run.records) == []


def test_file_channel_pause_resume_and_stop(postgres_db: PostgresServer, tmp_path: Any) -> None:
    _sql(
        postgres_db,
        f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
        "CREATE TABLE a (id int PRIMARY KEY, v text)",
        "CREATE TABLE b (id int PRIMARY KEY, v text)",
        "INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 40) g",
        "INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, 40) g",
    )
    path = tmp_path / "signals.jsonl"

    def send(signal_id: str, kind: str, data: Any = None) -> None:
        with path.open("a") as f:
            f.write(json.dumps({"id": signal_id, "type": kind, "data": data}) + "\n")

    props = connector_props(
        postgres_db, snapshot__mode="no_data", signal__data__collection=SIGNALS, signal__enabled__channels="file",
        signal__file=str(path), signal__poll__interval__ms="50", incremental__snapshot__chunk__size="3",
    )  # fmt: skip
    with TaskRunner(props) as run:
        with postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
        ctx = run.task.signals.ctx
        send("p", "pause-snapshot")
        run.poll_until(lambda _: ctx.paused, what="the pause")
        send("x", "execute-snapshot", {"data-collections": ["public.a", "public.b"]})
        run.poll_until(lambda _: len(ctx.collections) == 2, what="both tables queued")
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            run.poll_once()
        assert _reads(run.records) == []  # paused: no chunk read
        send("s", "stop-snapshot", {"type": "INCREMENTAL", "data-collections": ["public.b"]})
        run.poll_until(lambda _: [c.id for c in ctx.collections] == ["public.a"], what="the stop of b")
        send("r", "resume-snapshot")
        run.poll_until(lambda _: not ctx.running, what="the snapshot's end")
        run.poll_until(lambda rs: len(_reads(rs, "a")) >= 40, what="the reads of a")
    assert sorted(r.key.get("id") for r in _reads(run.records, "a")) == list(range(1, 41))
    assert _reads(run.records, "b") == [] and path.read_text() == ""


def test_kafka_channel_through_the_runtimes_signal_log(postgres_db: PostgresServer, tmp_path: Any) -> None:
    from cdc.log.embedded import EmbeddedLog
    from cdc.runtime.signal_log import TopicSignalLog
    from cdc.runtime.source_task import SourceTaskContextImpl, TopicCreator

    _sql(
        postgres_db,
        f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
        "CREATE TABLE a (id int PRIMARY KEY)",
        "INSERT INTO a SELECT generate_series(1, 25)",
    )
    props = connector_props(
        postgres_db, snapshot__mode="no_data", signal__data__collection=SIGNALS, signal__enabled__channels="kafka",
        signal__poll__interval__ms="50", incremental__snapshot__chunk__size="4",
    )  # fmt: skip
    with EmbeddedLog(tmp_path / "state", synchronous="NORMAL") as log_:
        offsets = MemoryOffsets()
        run = TaskRunner(props, offsets)
        run.task.initialize(SourceTaskContextImpl(props, offsets, signals=TopicCreator(log_, None, -1).signal_log))
        with run:
            with postgres_db.connect(autocommit=True) as sql:
                run.wait_streaming(sql)
            value = {"id": "k1", "type": "execute-snapshot", "data": {"data-collections": ["public.a"]}}
            TopicSignalLog(log_, "test_server-signal", "writer").send(b"test_server", json.dumps(value).encode())
            run.poll_until(lambda rs: len(_reads(rs, "a")) >= 25, what="the reads of a")
    assert sorted(r.key.get("id") for r in _reads(run.records, "a")) == list(range(1, 26))


def test_blocking_snapshot_rows_rank_below_later_changes(postgres_db: PostgresServer) -> None:
    _sql(
        postgres_db,
        f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
        "CREATE TABLE a (id int PRIMARY KEY, v text)",
        "INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 3000) g",
        "CREATE TABLE marker (id int PRIMARY KEY, v int)",
        "INSERT INTO marker VALUES (1, 0)",
    )
    props = connector_props(postgres_db, snapshot__mode="no_data", signal__data__collection=SIGNALS)
    with TaskRunner(props) as run:
        with postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
        _send(postgres_db, "blk", "execute-snapshot", {"data-collections": ["public.a"], "type": "blocking"})
        # Changes while the snapshot reads: whichever way they fall, the replay must equal the table.
        _sql(postgres_db, "UPDATE a SET v = 'changed' WHERE id % 7 = 0", "DELETE FROM a WHERE id % 11 = 0",
             "INSERT INTO a VALUES (5000, 'new')")  # fmt: skip
        run.poll_until(lambda rs: len(_table_reads(rs)) >= 2000, timeout=60, what="the blocking snapshot's reads")
        time.sleep(1)
        _sql(postgres_db, "UPDATE marker SET v = 1")
        run.wait_data(1, "public.marker")
    assert {r.value.get("source").get("snapshot") for r in _table_reads(run.records)} == {"true"}
    with postgres_db.connect() as conn:
        table = {((("id", i),)): {"id": i, "v": v} for i, v in conn.execute("SELECT id, v FROM a").fetchall()}
    assert _replay_commit_ranked(run.records, "a") == table


def _replay_commit_ranked(records: list[SourceRecord], table: str) -> dict[Any, dict[str, Any]]:
    """Per key, the event with the highest (source lsn_commit, lsn) wins, as the sinks rank PostgreSQL events."""
    latest: dict[Any, tuple[tuple[int, int], int, SourceRecord]] = {}
    for i, r in enumerate(records):
        if r.value is None or not r.topic.endswith("." + table) or r.value.schema.field("op") is None:
            continue
        commit, lsn = json.loads(r.value.get("source").get("sequence"))
        seq = (int(commit or lsn or 0), int(lsn or 0))
        key = tuple(sorted(r.key.to_dict().items()))
        if key not in latest or (seq, i) >= latest[key][:2]:
            latest[key] = (seq, i, r)
    return {k: r.value.get("after").to_dict() for k, (_, _, r) in latest.items() if r.value.get("op") != "d"}


def _table_reads(records: list[SourceRecord], table: str = "a") -> list[SourceRecord]:
    return [
        r for r in records
        if r.topic.endswith("." + table) and r.value is not None and r.value.schema.field("op") is not None
        and r.value.get("op") == "r"
    ]  # fmt: skip

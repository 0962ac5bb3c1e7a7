"""Incremental snapshots under a concurrent writer: the replayed events equal the table, for every key shape.

A seeded writer inserts, updates, deletes, re-inserts and re-keys rows (the chunk boundary keys
more often than the rest) while the snapshot reads chunks; afterwards the events, applied per key
by their binlog sequence as a sink applies them, must give exactly the table. One variant stops
the task abruptly mid-snapshot and resumes from the stored offsets.

CDC_INCREMENTAL_WORKLOAD_SEED=<n> replaces every case's seed (to run the variants with other data,
writes and timing): `-k "True"` picks the kill variants.
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.mysql.harness import MemoryOffsets, TaskRunner, connector_props, execute
from tests.mysql.incremental_support import create_signal_table, incremental_reads, replay, send_signal, signal_props
from tests.rig import MariaDbServer

CHUNK = 16
ROWS = 240
SEED_ENV = "CDC_INCREMENTAL_WORKLOAD_SEED"


@dataclass(frozen=True)
class Shape:
    table: str
    key_ddl: str
    key_names: tuple[str, ...]

    def new_key(self, rnd: random.Random) -> tuple[Any, ...]:
        alphabet = "abcdxyz0189-_~"
        if self.table == "k_int":
            return (rnd.randint(-5000, 5000),)
        if self.table == "k_varchar":
            return ("".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 6))),)
        if self.table == "k_composite":
            return (rnd.randint(0, 20), "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 3))))
        return (bytes(rnd.choice([0, 1, 127, 128, 255, rnd.randint(0, 255)]) for _ in range(4)),)


SHAPES = [
    Shape("k_int", "id INT", ("id",)),
    Shape("k_varchar", "id VARCHAR(12)", ("id",)),
    Shape("k_composite", "a INT, b VARCHAR(8)", ("a", "b")),
    Shape("k_binary", "id BINARY(4)", ("id",)),
]


def _create(server: MariaDbServer, rnd: random.Random) -> dict[str, set[tuple[Any, ...]]]:
    keys: dict[str, set[tuple[Any, ...]]] = {}
    with server.connect() as conn, conn.cursor() as cur:
        for s in SHAPES:
            cur.execute(f"CREATE TABLE {s.table} ({s.key_ddl}, v INT, PRIMARY KEY ({', '.join(s.key_names)}))")
            mine: set[tuple[Any, ...]] = set()
            while len(mine) < ROWS:
                k = s.new_key(rnd)
                cur.execute(
                    f"SELECT 1 FROM {s.table} WHERE ({', '.join(s.key_names)}) = ({', '.join(['%s'] * len(k))})", k
                )
                if cur.fetchone() is None:  # the collation decides what is a duplicate
                    cur.execute(f"INSERT INTO {s.table} VALUES ({', '.join(['%s'] * (len(k) + 1))})", (*k, 0))
                    mine.add(k)
            keys[s.table] = mine
    return keys


def _boundaries(server: MariaDbServer, shape: Shape) -> list[tuple[Any, ...]]:
    """The keys that end each chunk, in the database's own order."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(shape.key_names)} FROM {shape.table} ORDER BY {', '.join(shape.key_names)}")
        ordered = [tuple(r) for r in cur.fetchall()]
    return ordered[CHUNK - 1 :: CHUNK] + ordered[CHUNK::CHUNK]


class Writer(threading.Thread):
    """Random changes to every table until stopped; only this thread writes, so it knows each table's keys."""

    def __init__(self, server: MariaDbServer, seed: int, keys: dict[str, set[tuple[Any, ...]]]) -> None:
        super().__init__(daemon=True)
        self.server, self.rnd, self.keys = server, random.Random(seed), keys
        self.hot = {s.table: _boundaries(server, s) for s in SHAPES}
        self.stop_flag = threading.Event()
        self.changes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.server.connect() as conn, conn.cursor() as cur:
                while not self.stop_flag.is_set():
                    self._one(cur, self.rnd.choice(SHAPES))
                    self.changes += 1
                    if self.changes % 20 == 0:
                        time.sleep(0.01)
        except BaseException as e:  # surfaced by the test
            self.error = e

    def _one(self, cur: Any, s: Shape) -> None:
        rnd, keys = self.rnd, self.keys[s.table]
        where = f"({', '.join(s.key_names)}) = ({', '.join(['%s'] * len(s.key_names))})"
        pick = rnd.random()
        existing = [k for k in self.hot[s.table] if k in keys] if rnd.random() < 0.5 else []
        target = rnd.choice(existing) if existing else (rnd.choice(sorted(keys, key=repr)) if keys else None)
        if pick < 0.3 or target is None:
            k = rnd.choice(self.hot[s.table]) if rnd.random() < 0.3 else s.new_key(rnd)
            cur.execute(f"SELECT 1 FROM {s.table} WHERE {where}", k)
            if cur.fetchone() is None:
                cur.execute(
                    f"INSERT INTO {s.table} VALUES ({', '.join(['%s'] * (len(k) + 1))})", (*k, rnd.randint(1, 9))
                )
                keys.add(k)
        elif pick < 0.6:
            cur.execute(f"UPDATE {s.table} SET v = v + 1 WHERE {where}", target)
        elif pick < 0.85:
            cur.execute(f"DELETE FROM {s.table} WHERE {where}", target)
            keys.discard(target)
        else:  # a primary key change: a delete of the old key and a create of the new one
            k = s.new_key(rnd)
            cur.execute(f"SELECT 1 FROM {s.table} WHERE {where}", k)
            if cur.fetchone() is None:
                sets = ", ".join(f"{n} = %s" for n in s.key_names)
                cur.execute(f"UPDATE {s.table} SET {sets} WHERE {where}", (*k, *target))
                keys.discard(target)
                keys.add(k)


def _table(server: MariaDbServer, shape: Shape) -> dict[Any, dict[str, Any]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {shape.table}")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    return {tuple(sorted((n, row[n]) for n in shape.key_names)): row for row in rows}


def _caught_up(run: TaskRunner, server: MariaDbServer) -> None:
    """Waits until the snapshot is done and the stream has passed a change made now."""
    run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=120, what="the incremental snapshot to end")
    token = random.randint(1, 10**9)
    execute(server, f"UPDATE marker SET v = {token}")
    run.poll_until(
        lambda rs: any(r.topic.endswith(".marker") and r.value is not None and r.value.get("op") == "u"
                       and r.value.get("after").get("v") == token for r in rs[-50:]),
        timeout=60, what="the marker change",
    )  # fmt: skip


def _start(server: MariaDbServer, offsets: MemoryOffsets, strategy: str) -> TaskRunner:
    props = connector_props(
        server, snapshot__mode="no_data", incremental__snapshot__chunk__size=str(CHUNK),
        incremental__snapshot__watermarking__strategy=strategy, max__batch__size="64", **signal_props(server),
    )  # fmt: skip
    return TaskRunner(props, offsets)


@pytest.mark.parametrize(
    "seed,strategy,kill",
    [(1, "insert_insert", False), (2, "insert_delete", False), (3, "insert_insert", True), (4, "insert_delete", True)],
)
def test_replayed_events_equal_the_table_under_a_concurrent_writer(
    mariadb_db: MariaDbServer, seed: int, strategy: str, kill: bool
) -> None:
    seed = int(os.environ.get(SEED_ENV, seed))
    print(f"{SEED_ENV}={seed}")  # shown with a failure: rerun with it
    rnd = random.Random(seed)
    create_signal_table(mariadb_db)
    execute(mariadb_db, "CREATE TABLE marker (id INT PRIMARY KEY, v INT)", "INSERT INTO marker VALUES (1, 0)")
    keys = _create(mariadb_db, rnd)
    offsets = MemoryOffsets()
    records = []
    writer = Writer(mariadb_db, seed, keys)
    run = _start(mariadb_db, offsets, strategy).__enter__()
    try:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        writer.start()
        send_signal(mariadb_db, f"snap-{seed}", "execute-snapshot",
                    {"data-collections": [f"{mariadb_db.database}\\.k_.*"]})  # fmt: skip
        if kill:
            # Stop abruptly once part of the second table is read: what was polled is stored, the rest is lost.
            run.poll_until(lambda rs: len(incremental_reads(rs, "k_int")) > ROWS // 2, timeout=60, what="reads")
            stored = next(iter(offsets.stored.values()))
            assert "incremental_snapshot_collections" in stored and "incremental_snapshot_primary_key" in stored
            first_reads = len(incremental_reads(run.records))
            run.__exit__(None, None, None)
            records.extend(run.records)
            run = _start(mariadb_db, offsets, strategy).__enter__()
            run.poll_until(lambda rs: len(incremental_reads(rs)) > 0, timeout=60, what="resumed reads")
            assert first_reads > 0
        # The writer keeps writing until the last table (k_varchar, in name order) is half read.
        run.poll_until(lambda rs: len(incremental_reads(rs, "k_varchar")) >= ROWS // 2, timeout=120, what="reads")
        writer.stop_flag.set()
        writer.join(30)
        assert writer.error is None, writer.error
        _caught_up(run, mariadb_db)
    finally:
        writer.stop_flag.set()
        run.__exit__(None, None, None)
    records.extend(run.records)
    assert writer.changes > 50, writer.changes
    for shape in SHAPES:
        reads = incremental_reads(records, shape.table)
        assert reads, f"no incremental reads of {shape.table}"
        assert replay(records, shape.table) == _table(mariadb_db, shape), shape.table
    if kill:
        # The second run did not start over: it read fewer rows of k_int than the table has.
        resumed_int_reads = len(incremental_reads(run.records, "k_int"))
        assert resumed_int_reads < ROWS, resumed_int_reads
        # ...and the tables finished before the stop are not read again.
        assert not incremental_reads(run.records, "k_binary") and not incremental_reads(run.records, "k_composite")

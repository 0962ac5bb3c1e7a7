"""snapshot.max.threads (Debezium's parallel snapshot): the same records as one thread, chunks split by the server.

Seeded random tables of several key shapes (INT, VARCHAR under a case-insensitive collation,
composite, BINARY, none), with NULLs and long values; chunks are made small so every keyed
table is split into primary-key ranges.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cdc_mysql import snapshot_chunks
from cdc_mysql.snapshot_chunks import plan_table
from tests.mysql.harness import MemoryOffsets, TaskRunner, connector_props, execute, op

TABLES = {
    "t_int": "id INT PRIMARY KEY, a INT NULL, s TEXT NULL",
    "t_str": "k VARCHAR(40) COLLATE utf8mb4_general_ci PRIMARY KEY, a INT NULL, s VARCHAR(3000) NULL",
    "t_comp": "a INT NOT NULL, b VARCHAR(12) COLLATE utf8mb4_bin NOT NULL, v DOUBLE NULL, PRIMARY KEY (a, b)",
    "t_bin": "k BINARY(6) PRIMARY KEY, d DATETIME(3) NULL, v DECIMAL(12, 3) NULL",
    "t_nopk": "x INT NULL, y VARCHAR(20) NULL",
}
ALPHABET = "aAbBzZ éÉçÇ_-09"


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def _rows(rng: random.Random, table: str, n: int) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    keys: set[Any] = set()
    while len(rows) < n:
        maybe = rng.random() < 0.2
        if table == "t_int":
            key: Any = rng.randint(-(2**31), 2**31 - 1)
            row: tuple[Any, ...] = (key, None if maybe else rng.randint(0, 9), None if maybe else _text(rng, 2000))
        elif table == "t_str":
            key = _text(rng, rng.randint(1, 40)).rstrip()  # trailing spaces compare equal (PAD SPACE)
            if not key:
                continue
            key_ci = key.lower().replace("é", "e").replace("ç", "c")  # general_ci folds case and accents
            if key_ci in keys:
                continue
            keys.add(key_ci)
            row = (key, None if maybe else rng.randint(0, 9), None if maybe else _text(rng, 2500))
        elif table == "t_comp":
            key = (rng.randint(0, 5), _text(rng, rng.randint(0, 12)).rstrip())
            row = (*key, None if maybe else rng.random())
        elif table == "t_bin":
            key = bytes(rng.randrange(256) for _ in range(6))
            row = (
                key,
                None if maybe else f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 01:02:03.456",
                rng.randint(0, 10**6) / 1000,
            )
        else:
            key = len(rows)
            row = (None if maybe else rng.randint(0, 3), None if maybe else _text(rng, 5))
        if table != "t_str" and key in keys:
            continue
        keys.add(key)
        rows.append(row)
    return rows


def _fill(server: Any, seed: int, n: int) -> None:
    rng = random.Random(seed)
    execute(server, *(f"CREATE TABLE {name} ({cols})" for name, cols in TABLES.items()))
    with server.connect() as conn, conn.cursor() as cur:
        for name in TABLES:
            rows = _rows(rng, name, n)
            marks = ", ".join(["%s"] * len(rows[0]))
            cur.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
            cur.execute(f"ANALYZE TABLE {name}")
            cur.fetchall()
        conn.commit()


def _norm(v: Any) -> Any:
    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    if isinstance(v, bytes):
        return v.hex()
    if hasattr(v, "schema") and hasattr(v, "_values"):
        return [_norm(x) for x in v._values]
    return repr(v)


def _reads(run: TaskRunner) -> tuple[Counter, Counter, dict[str, Any]]:
    """The `r` records as a multiset of (topic, key, after), their markers, and the last one's offset."""
    reads = [r for r in run.data() if op(r) == "r"]
    values = Counter(
        (r.topic, json.dumps(_norm(r.key)), json.dumps(_norm(r.value.get("after")))) for r in reads
    )  # fmt: skip
    markers = Counter(r.value.get("source").get("snapshot") for r in reads)
    final = {k: v for k, v in reads[-1].source_offset.items() if k != "ts_sec"}
    assert all(r.source_offset.get("snapshot") == "INITIAL" for r in reads[:-1])
    assert reads[-1].value.get("source").get("snapshot") == "last"
    for topic in {r.topic for r in reads}:
        marks = [r.value.get("source").get("snapshot") for r in reads if r.topic == topic]
        assert sum(m in ("first", "first_in_data_collection") for m in marks) == 1, (topic, Counter(marks))
        assert sum(m in ("last", "last_in_data_collection") for m in marks) == 1, (topic, Counter(marks))
    return values, markers, final


def _is_last(r: Any) -> bool:
    return (
        r.value is not None
        and r.topic.count(".") == 2
        and op(r) == "r"
        and r.value.get("source").get("snapshot") == "last"
    )


def _snapshot(server: Any, threads: int, caplog: pytest.LogCaptureFixture) -> tuple[Counter, Counter, dict]:
    props = connector_props(server, snapshot__mode="initial_only", snapshot__max__threads=threads, max__batch__size=97)
    with caplog.at_level(logging.INFO, logger="cdc_mysql.snapshot_parallel"), TaskRunner(props) as run:
        run.poll_until(lambda rs: any(_is_last(r) for r in rs[-200:]), timeout=120, what="the last snapshot record")
    return _reads(run)


@pytest.mark.parametrize("seed", [7, 2026])
def test_threads_give_the_same_records_as_one(
    mariadb_db: Any, seed: int, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshot_chunks, "MIN_CHUNK_ROWS", 40)
    _fill(mariadb_db, seed, 300)
    one = _snapshot(mariadb_db, 1, caplog)
    assert sum(one[0].values()) == 300 * len(TABLES)
    for threads in (2, 3):
        caplog.clear()
        many = _snapshot(mariadb_db, threads, caplog)
        assert many[0] == one[0], threads
        assert many[1] == one[1], threads
        assert many[2] == one[2], threads
        planned = [r.getMessage() for r in caplog.records if " chunks on " in r.getMessage()]
        assert planned, caplog.text
        chunks = int(planned[0].split(" in ")[1].split()[0])
        assert chunks > len(TABLES) + 2, planned  # the keyed tables were split


@pytest.mark.parametrize("seed", [11, 12])
def test_chunks_partition_every_key_shape(mariadb_db: Any, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each table's chunks, run as SELECTs, give every row once; a table without a key is one chunk."""
    monkeypatch.setattr(snapshot_chunks, "MIN_CHUNK_ROWS", 40)
    _fill(mariadb_db, seed, 400)
    keys = {"t_int": ("id",), "t_str": ("k",), "t_comp": ("a", "b"), "t_bin": ("k",), "t_nopk": ()}
    with mariadb_db.connect() as conn:
        for name, key in keys.items():
            with conn.cursor() as cur:
                cur.execute(f"SELECT * FROM {name}")
                whole = Counter(cur.fetchall())
            chunks = plan_table(conn, mariadb_db.database, name, key, 400, 7)
            if not key:
                assert [c.sql for c in chunks] == [f"SELECT * FROM `{mariadb_db.database}`.`{name}`"]
                continue
            assert len(chunks) >= 5, (name, chunks)
            got: Counter = Counter()
            for c in chunks:
                with conn.cursor() as cur:
                    cur.execute(c.sql, c.args)
                    rows = cur.fetchall()
                assert rows, (name, c)
                got.update(rows)
            assert got == whole, name


@pytest.mark.parametrize("locking", ["minimal", "none"])
def test_writes_during_the_snapshot_are_streamed_not_read(
    mariadb_db: Any, monkeypatch: pytest.MonkeyPatch, locking: str
) -> None:
    monkeypatch.setattr(snapshot_chunks, "MIN_CHUNK_ROWS", 40)
    _fill(mariadb_db, 5, 300)
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, a FROM t_int ORDER BY id")
        before = {row[0]: row[1] for row in cur.fetchall()}
    victims = sorted(before)[::37]
    fresh = next(i for i in range(1, 10**6) if i not in before)
    props = connector_props(mariadb_db, snapshot__max__threads=3, max__batch__size=50, snapshot__locking__mode=locking)
    with TaskRunner(props, MemoryOffsets()) as run:
        run.poll_until(lambda rs: len(rs) > 0, what="the snapshot's first records")
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            cur.execute("UPDATE t_int SET a = 1000 WHERE id IN (" + ",".join(map(str, victims)) + ")")
            cur.execute("DELETE FROM t_int WHERE id = %s", (victims[0],))
            cur.execute("INSERT INTO t_int (id, a) VALUES (%s, 77)", (fresh,))
            conn.commit()
        run.poll_until(lambda rs: sum(1 for r in run.data("t_int") if op(r) in ("u", "d", "c")) >= len(victims) + 2,
                       timeout=120, what="the streamed changes")  # fmt: skip
    reads = {r.value.get("after").get("id"): r.value.get("after").get("a") for r in run.data("t_int") if op(r) == "r"}
    assert reads == before  # the snapshot is of the point before the writes
    streamed = [op(r) for r in run.data("t_int") if op(r) != "r"]
    assert Counter(streamed) == Counter({"u": len(victims), "d": 1, "c": 1}), streamed
    kinds = [op(r) for r in run.data()]
    assert kinds.index("u") > max(i for i, k in enumerate(kinds) if k == "r")  # streamed after the snapshot


def _reader_children() -> list[int]:
    """This process's children that are snapshot readers (from /proc; psutil is not installed)."""
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == me and b"snapshot_reader_main" in cmdline:
            found.append(int(stat.parent.name))
    return found


def test_a_stop_mid_snapshot_ends_the_readers(mariadb_db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_chunks, "MIN_CHUNK_ROWS", 40)
    _fill(mariadb_db, 3, 300)
    props = connector_props(mariadb_db, snapshot__max__threads=3, snapshot__mode="initial_only", max__batch__size=20)
    with TaskRunner(props) as run:
        run.poll_until(lambda rs: any(op(r) == "r" for r in rs if r.value is not None and r.topic.count(".") == 2))
        assert len(_reader_children()) == 2
    deadline = time.monotonic() + 10
    while _reader_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _reader_children() == []
    # The stopped task still holds the snapshot's own connection (as with one thread, until the task
    # is dropped); end its generator so the fixture's DROP DATABASE is not held off by its transaction.
    run.task._events.close()  # type: ignore[union-attr]

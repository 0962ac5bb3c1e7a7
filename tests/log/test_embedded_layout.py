"""The embedded log's file layout: records of every size stay near their own size, and a log
written in layout 1 (records a WITHOUT ROWID table) is moved to the current layout on open.

Layout 1 kept every record above ~4 KB in a 16 KB overflow page of its own: a 1M-row snapshot
of a wide table took 4.5 times its records on disk.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from cdc.log import embedded
from cdc.log.base import LogRecord, TopicPartition, TopicSpec
from cdc.log.embedded import EmbeddedLog

# Layout 1's records table, as cdc wrote it until layout 2 (the other tables are unchanged).
_LAYOUT1_RECORDS = """
CREATE TABLE records(
    topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
    timestamp INTEGER NOT NULL, key BLOB, value BLOB, headers BLOB,
    PRIMARY KEY(topic, partition, offset)) WITHOUT ROWID"""


def _records_ddl(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT sql FROM sqlite_master WHERE name='records'").fetchone()[0]


def _to_layout1(path: Path) -> None:
    """Rewrites a current log's records table as layout 1 wrote it, records and all."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("ALTER TABLE records RENAME TO current")
    conn.execute(_LAYOUT1_RECORDS)
    conn.execute("INSERT INTO records SELECT topic, partition, offset, timestamp, key, value, headers FROM current")
    conn.execute("DROP TABLE current")
    conn.execute("PRAGMA user_version=1")
    conn.execute("COMMIT")
    conn.close()


def _read(lg: EmbeddedLog, tps: list[TopicPartition]) -> dict[TopicPartition, list[tuple]]:
    reader = lg.reader()
    reader.assign({tp: lg.beginning_offsets([tp])[tp] for tp in tps})
    try:
        got = reader.read_to_end(tps, lg)
    finally:
        reader.close()
    out: dict[TopicPartition, list[tuple]] = {tp: [] for tp in tps}
    for r in got:
        out[TopicPartition(r.topic, r.partition)].append(_shape(r))
    return out


def _shape(r: LogRecord) -> tuple:
    return r.offset, r.key, r.value, tuple(r.headers or ()), r.timestamp


def _random_batch(rng: random.Random, n: int) -> list[tuple[bytes | None, bytes | None, tuple, int]]:
    sizes = [0, 1, 100, 4_000, 4_100, 5_000, 16_000, 17_000, 70_000]
    out = []
    for _ in range(n):
        key = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 4, 36, 300]))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.choice(sizes) + rng.randrange(50))
        headers = tuple((f"h{i}", rng.randbytes(rng.randrange(20))) for i in range(rng.choice([0, 0, 1, 3])))
        out.append((key, value, headers, 1_700_000_000_000 + rng.randrange(10**6)))
    return out


@pytest.mark.parametrize("seed", [3, 17, 2026])
def test_a_layout1_log_is_moved_whole_and_appends_continue(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    topics = [("plain", 1, "delete"), ("split", 3, "delete"), ("compacted", 2, "compact")]
    with EmbeddedLog(tmp_path) as lg:
        lg.create_topics([TopicSpec(t, n, config={"cleanup.policy": policy}) for t, n, policy in topics])
        p = lg.producer()
        for key, value, headers, ts in _random_batch(rng, 300):
            topic, partitions, _ = rng.choice(topics)
            p.send(topic, value, key=key, headers=headers, timestamp=ts, partition=rng.randrange(partitions))
        p.flush()
        p.close()
        tps = [TopicPartition(t, i) for t, n, _ in topics for i in range(n)]
        before = _read(lg, tps)
        ends = lg.end_offsets(tps)
    _to_layout1(tmp_path / "cdc.db")
    assert "WITHOUT ROWID" in _records_ddl(tmp_path / "cdc.db")

    with EmbeddedLog(tmp_path) as lg:
        assert lg._conn.execute("PRAGMA user_version").fetchone()[0] == embedded.SCHEMA_VERSION
        assert "WITHOUT ROWID" not in _records_ddl(tmp_path / "cdc.db")
        assert _read(lg, tps) == before
        assert lg.end_offsets(tps) == ends
        # Appends go on at the next offsets, and compaction still finds the moved keys.
        p = lg.producer()
        kept = next(r for r in before[TopicPartition("compacted", 0)] if r[1] is not None)
        p.send("compacted", b"newer", key=kept[1], partition=0)
        p.send("plain", b"after", partition=0)
        p.flush()
        p.close()
        after = _read(lg, tps)
    assert after[TopicPartition("plain", 0)][-1][:3] == (ends[TopicPartition("plain", 0)], None, b"after")
    compacted = after[TopicPartition("compacted", 0)]
    assert [r[2] for r in compacted if r[1] == kept[1]] == [b"newer"]
    with sqlite3.connect(tmp_path / "cdc.db") as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'records_%'").fetchall() == []


def test_records_above_4kb_take_about_their_own_size(tmp_path: Path) -> None:
    # 2,000 records of 4.1 KB (Debezium JSON with schemas of a wide table): layout 1 stored
    # each in a 16 KB overflow page (4.5x); the current layout keeps them in the b-tree.
    value_size, n = 4_100, 2_000
    rng = random.Random(5)
    with EmbeddedLog(tmp_path, synchronous="NORMAL") as lg:
        p = lg.producer()
        for i in range(n):
            p.send("wide", rng.randbytes(value_size), key=str(i).encode())
        p.flush()
        p.close()
        lg._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = (tmp_path / "cdc.db").stat().st_size
    assert size < 1.6 * n * value_size, f"{size / (n * value_size):.2f}x the records' size"

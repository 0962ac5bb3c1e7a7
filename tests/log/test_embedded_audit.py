"""Durability and concurrency of the embedded log: failures mid-batch, crashes, other processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cdc.log import embedded
from cdc.log.base import LogError, TopicPartition, TopicSpec
from cdc.log.embedded import EmbeddedLog, _write_txn


def _read_all(lg: EmbeddedLog, tp: TopicPartition) -> list:
    reader = lg.reader()
    reader.assign({tp: lg.beginning_offsets([tp])[tp]})
    try:
        return reader.read_to_end([tp], lg)
    finally:
        reader.close()


def test_rolled_back_auto_created_topic_does_not_break_later_appends(tmp_path: Path) -> None:
    # A transaction that auto-creates a topic and then fails is rolled back; the topic must
    # not stay in the metadata cache, or every later append to it finds no partition row.
    with EmbeddedLog(tmp_path) as lg:
        p = lg.producer()
        p.begin_transaction()
        p.send("t", b"a")
        p.send("t", b"b", partition=5)  # invalid: fails the whole batch
        with pytest.raises(LogError, match="partition 5 is invalid"):
            p.commit_transaction()
        assert lg.describe_topic("t") is None
        p.begin_transaction()
        p.send("t", b"c")
        p.commit_transaction()
        assert [r.value for r in _read_all(lg, TopicPartition("t", 0))] == [b"c"]


def test_disk_full_mid_batch_is_explained_and_stores_nothing(tmp_path: Path) -> None:
    with EmbeddedLog(tmp_path) as lg:
        p = lg.producer()
        p.send("t", b"first")
        p.flush()
        # A page cap on the producer's connection makes SQLite report SQLITE_FULL mid-batch,
        # as a full disk would; SQLite then rolls the transaction back by itself.
        pages = p._conn.execute("PRAGMA page_count").fetchone()[0]
        p._conn.execute(f"PRAGMA max_page_count={pages + 2}")
        p.begin_transaction()
        for _ in range(200):
            p.send("t", os.urandom(3000))
        p.send("offsets", b'{"pos": 200}', key=b"k")
        with pytest.raises(LogError, match="disk is full; free space"):
            p.commit_transaction()
        assert not p._conn.in_transaction
        tp = TopicPartition("t", 0)
        assert lg.end_offsets([tp]) == {tp: 1}
        assert lg.describe_topic("offsets") is None  # no offset without its records
        p._conn.execute("PRAGMA max_page_count=1073741823")  # space freed: appends work again
        p.send("t", b"second")
        p.flush()
        assert [r.value for r in _read_all(lg, tp)] == [b"first", b"second"]


def test_failed_commit_leaves_no_open_transaction() -> None:
    # A COMMIT can fail and leave the transaction open (here a deferred constraint; a full
    # disk does the same); the connection must not stay inside it, or every later BEGIN fails.
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("CREATE TABLE parent(id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE child(pid INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
    with pytest.raises(sqlite3.IntegrityError), _write_txn(conn):
        conn.execute("INSERT INTO child VALUES (1)")
    assert not conn.in_transaction
    with _write_txn(conn):
        conn.execute("INSERT INTO parent VALUES (1)")
    assert conn.execute("SELECT count(*) FROM child").fetchone()[0] == 0


def test_a_file_that_is_not_a_log_is_explained(tmp_path: Path) -> None:
    (tmp_path / "cdc.db").write_bytes(b"not a database " * 100)
    with pytest.raises(LogError, match="is not an embedded log or is damaged; move it aside"):
        EmbeddedLog(tmp_path)


def test_a_log_from_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    EmbeddedLog(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "cdc.db")
    conn.execute(f"PRAGMA user_version={embedded.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(LogError, match=r"written by a newer cdc .*upgrade cdc"):
        EmbeddedLog(tmp_path)


def test_a_log_from_before_versioning_is_opened_and_stamped(tmp_path: Path) -> None:
    with EmbeddedLog(tmp_path) as lg:
        p = lg.producer()
        p.send("t", b"v")
        p.close()
    conn = sqlite3.connect(tmp_path / "cdc.db")
    conn.execute("PRAGMA user_version=0")
    conn.close()
    with EmbeddedLog(tmp_path) as lg:
        assert lg._conn.execute("PRAGMA user_version").fetchone()[0] == embedded.SCHEMA_VERSION
        assert [r.value for r in _read_all(lg, TopicPartition("t", 0))] == [b"v"]


def test_wal_shrinks_after_a_backlog_held_by_a_reader_is_checkpointed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reader holding one snapshot (a Spark task streaming a range) keeps checkpoints from
    # reaching the WAL's start, so a backlog grows the -wal file; once the reader is gone
    # the file must not stay at that high-water size for good.
    monkeypatch.setattr(embedded, "WAL_SIZE_LIMIT", 1024 * 1024)
    with EmbeddedLog(tmp_path) as lg:
        p = lg.producer()
        reader = sqlite3.connect(tmp_path / "cdc.db", isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM records").fetchone()
        for _ in range(12):
            p.begin_transaction()
            for _ in range(1000):
                p.send("t", os.urandom(2000))
            p.commit_transaction()
        wal = tmp_path / "cdc.db-wal"
        assert wal.stat().st_size > 20 * 1024 * 1024
        reader.execute("COMMIT")
        reader.close()
        for _ in range(3):  # the next commits checkpoint and restart the WAL
            p.send("t", b"x")
            p.flush()
        assert wal.stat().st_size <= 1024 * 1024
        tp = TopicPartition("t", 0)
        assert lg.end_offsets([tp]) == {tp: 12_003}
        assert len(_read_all(lg, tp)) == 12_003


_WRITER = textwrap.dedent(
    """
    import sys
    from cdc.log.base import TopicSpec
    from cdc.log.embedded import EmbeddedLog
    lg = EmbeddedLog(sys.argv[1], synchronous="NORMAL")
    p = lg.producer()
    n = 0
    while True:
        p.begin_transaction()
        for _ in range(50):
            p.send("data", b"r%d" % n)
            n += 1
        p.send("offsets", b'{"pos": %d}' % n, key=b"task-0")
        p.commit_transaction()
        print(n, flush=True)
    """
)


@pytest.mark.e2e
def test_kill_9_mid_commit_never_leaves_offsets_ahead_of_records(tmp_path: Path) -> None:
    # A source task killed at an arbitrary point: the stored offset must cover exactly the
    # records that survived (no lost record, no offset ahead of its records).
    with EmbeddedLog(tmp_path) as lg:
        lg.create_topics([TopicSpec("data", 1), TopicSpec("offsets", 1, config={"cleanup.policy": "compact"})])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for _ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env
        )
        assert child.stdout is not None
        for _ in range(20):  # let it commit a few batches, then kill it while it is writing
            child.stdout.readline()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        with EmbeddedLog(tmp_path, synchronous="NORMAL") as lg:
            data = _read_all(lg, TopicPartition("data", 0))
            offsets = _read_all(lg, TopicPartition("offsets", 0))
            assert len(offsets) == 1
            pos = json.loads(offsets[0].value)["pos"]
            # Each run restarts its counter at 0 and appends to the same topic.
            assert data[-1].value == b"r%d" % (pos - 1)
            assert len(data) % 50 == 0


@pytest.mark.e2e
def test_a_writer_waits_for_another_process_holding_the_write_lock(tmp_path: Path) -> None:
    # SQLITE_BUSY under contention must wait (busy_timeout), not fail the batch.
    with EmbeddedLog(tmp_path) as lg:
        lg.create_topics([TopicSpec("t", 1)])
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sqlite3, sys, time\n"
                "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(1); c.execute('COMMIT')",
                str(tmp_path / "cdc.db"),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        errors: list = []
        p = lg.producer()
        p.send("t", b"v", on_delivery=lambda rec, err: errors.append(err))
        p.flush()
        holder.wait()
        holder.stdout.close()
        assert errors == [None]
        assert [r.value for r in _read_all(lg, TopicPartition("t", 0))] == [b"v"]

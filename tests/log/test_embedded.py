from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from cdc.log.base import LogError, TopicPartition, TopicSpec
from cdc.log.embedded import EmbeddedLog
from tests.log import contract


@pytest.fixture
def log_(tmp_path: Path):
    lg = EmbeddedLog(tmp_path / "state", synchronous="NORMAL")
    yield lg
    lg.close()


def test_keyed_placement_matches_murmur2(log_: EmbeddedLog) -> None:
    contract.check_keyed_placement_matches_murmur2(log_)


def test_offsets_are_dense_and_ordered(log_: EmbeddedLog) -> None:
    contract.check_offsets_are_dense_and_ordered(log_)


def test_seek_and_position(log_: EmbeddedLog) -> None:
    contract.check_seek_and_position(log_)


def test_group_consumer_commits(log_: EmbeddedLog) -> None:
    contract.check_group_consumer_commits(log_)


def test_transaction_commit_and_abort(log_: EmbeddedLog) -> None:
    p = log_.producer()
    results = []
    p.begin_transaction()
    p.send("tx", b"aborted", on_delivery=lambda r, e: results.append(e))
    p.abort_transaction()
    assert isinstance(results[0], LogError)
    p.begin_transaction()
    p.send("tx", b"a")
    p.send("offsets", b"{}", key=b"k")
    # Nothing is visible before the commit.
    assert log_.describe_topic("tx") is None
    p.commit_transaction()
    tp = TopicPartition("tx", 0)
    assert log_.end_offsets([tp]) == {tp: 1}
    assert log_.end_offsets([TopicPartition("offsets", 0)]) == {TopicPartition("offsets", 0): 1}


def test_compacted_topic_keeps_latest_per_key(log_: EmbeddedLog) -> None:
    log_.create_topics([TopicSpec("c", 1, config={"cleanup.policy": "compact"})])
    p = log_.producer()
    for i in range(5):
        p.send("c", str(i).encode(), key=b"a")
        p.flush()
    p.send("c", b"x", key=b"b")
    p.send("c", b"y", key=b"b")
    p.flush()
    reader = log_.reader()
    tp = TopicPartition("c", 0)
    reader.assign({tp: 0})
    got = [(r.key, r.value, r.offset) for r in reader.read_to_end([tp], log_)]
    assert got == [(b"a", b"4", 4), (b"b", b"y", 6)]


def test_retention_moves_start_offset(log_: EmbeddedLog) -> None:
    log_.create_topics(
        [TopicSpec("r", 1, config={"retention.ms": "1000"}), TopicSpec("forever", 1, config={"retention.ms": "-1"})]
    )
    p = log_.producer()
    now = int(time.time() * 1000)
    for i in range(6):  # stamped with old event times, as a catch-up of an old binlog writes them
        p.send("r", str(i).encode(), timestamp=now - 3_600_000)
        p.send("forever", str(i).encode(), timestamp=now - 3_600_000)
    p.flush()
    # Retention counts from the append: first sight marks the end, nothing is expired yet.
    assert log_.enforce_retention(now) == 0
    for i in range(6, 10):
        p.send("r", str(i).encode(), timestamp=now)
    p.flush()
    assert log_.enforce_retention(now + 500) == 0
    assert log_.enforce_retention(now + 1000) == 1  # appended before the mark taken 1000 ms ago
    tp = TopicPartition("r", 0)
    assert log_.beginning_offsets([tp]) == {tp: 6}
    reader = log_.reader()
    reader.assign({tp: 0})
    assert [int(r.value) for r in reader.read_to_end([tp], log_)] == [6, 7, 8, 9]
    assert log_.enforce_retention(now + 1600) == 1  # the mark at +500 covers the rest
    assert log_.beginning_offsets([tp]) == {tp: 10}
    forever = TopicPartition("forever", 0)
    assert log_.beginning_offsets([forever]) == {forever: 0}
    log_.delete_records({tp: 8})  # below the start: nothing moves back
    assert log_.beginning_offsets([tp]) == {tp: 10}


def test_illegal_topic_name_is_explained(log_: EmbeddedLog) -> None:
    with pytest.raises(LogError, match="illegal topic name"):
        log_.create_topics([TopicSpec("a b", 1)])


def test_concurrent_writers_never_reuse_offsets(tmp_path: Path) -> None:
    # Two clients (as two processes would) append to one partition at the same time.
    a = EmbeddedLog(tmp_path / "s", synchronous="NORMAL")
    b = EmbeddedLog(tmp_path / "s", synchronous="NORMAL")
    a.create_topics([TopicSpec("t", 1)])

    def write(lg: EmbeddedLog, tag: bytes) -> None:
        p = lg.producer(**{"batch.num.messages": "7"})
        for i in range(500):
            p.send("t", tag + str(i).encode())
        p.flush()

    threads = [threading.Thread(target=write, args=(a, b"a")), threading.Thread(target=write, args=(b, b"b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reader = a.reader()
    tp = TopicPartition("t", 0)
    reader.assign({tp: 0})
    records = reader.read_to_end([tp], a)
    assert [r.offset for r in records] == list(range(1000))
    assert sorted(r.value for r in records if r.value.startswith(b"a")) == sorted(
        b"a" + str(i).encode() for i in range(500)
    )
    a.close()
    b.close()


def test_unwritable_state_dir_is_explained(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(LogError, match=r"state\.dir"):
        EmbeddedLog(blocker / "sub")


def test_new_log_uses_16k_pages_and_an_existing_log_keeps_its_own(tmp_path: Path) -> None:
    # 16 KB pages keep ~1-3 KB Debezium JSON records in the b-tree instead of overflow pages.
    with EmbeddedLog(tmp_path / "new") as fresh:
        assert fresh._conn.execute("PRAGMA page_size").fetchone()[0] == 16384
    old = tmp_path / "old"
    old.mkdir()
    conn = sqlite3.connect(old / "cdc.db")
    conn.execute("PRAGMA page_size=4096")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    with EmbeddedLog(old) as lg:  # a log written before 16 KB pages: opened and used as it is
        assert lg._conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        lg.create_topics([TopicSpec("t", 1)])
        p = lg.producer()
        p.send("t", b"v" * 3000, key=b"k")
        p.flush()
        tp = TopicPartition("t", 0)
        reader = lg.reader()
        reader.assign({tp: 0})
        assert [r.value for r in reader.read_to_end([tp], lg)] == [b"v" * 3000]

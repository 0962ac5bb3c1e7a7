"""Each way the embedded log used to fail with `database is locked` (or worse), made deterministic (issue 19)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from cdc.log.base import LogError, TopicPartition, TopicSpec
from cdc.log.embedded import EmbeddedLog
from cdc.log.embedded_locks import BusyTimeout, Deadline, FairLock, is_busy, retry_busy
from cdc.log.sqlite_copies import CopyWaitTimeout, SqliteCopies, connect_counted


def test_switching_a_new_file_to_wal_waits_for_another_writer(tmp_path: Path) -> None:
    """SQLite answers the WAL switch of a new file with BUSY at once, without the busy handler,
    while another connection holds its write lock: opening must wait it out, not fail."""
    holder = sqlite3.connect(tmp_path / "cdc.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # a second process creating the same state.dir, mid-way
    release = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    release.start()
    started = time.monotonic()
    log = EmbeddedLog(tmp_path, busy_timeout_ms=10_000)
    try:
        assert time.monotonic() - started >= 0.4  # it waited for the holder, as a busy handler would
        assert log._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert log.create_topics([TopicSpec("t")]) == ["t"]
    finally:
        release.join()
        log.close()
        holder.close()


def test_a_log_busy_past_its_timeout_is_a_log_error_naming_the_wait(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path, busy_timeout_ms=300)
    holder = sqlite3.connect(log.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(LogError, match=r"stayed locked for \d+\.\d s \(busy timeout 300 ms\).*fuser"):
            log.create_topics([TopicSpec("t")])
        assert time.monotonic() - started >= 0.25  # it waited out the timeout (retries included) before failing
        results: list[Exception | None] = []
        producer = log.producer()
        producer.send("t", b"v", on_delivery=lambda r, e: results.append(e))
        producer.flush()
        assert isinstance(results[0], LogError) and "stayed locked" in str(results[0])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    producer.send("t", b"v")
    assert producer.flush() == 0  # the lock is back: the same producer appends again
    producer.close()
    log.close()


def test_creating_topics_beside_appends_to_new_topics_never_deadlocks(tmp_path: Path) -> None:
    """A producer looked up a topic it had not seen through the log's shared connection, under the
    log's lock, inside its own write transaction; `create_topics` holds that lock while it waits
    for the write lock. Each waited for the other until the busy timeout: `database is locked` in
    tasks starting together (the 7-connector report)."""
    log = EmbeddedLog(tmp_path, busy_timeout_ms=1000)
    stop = threading.Event()
    errors: list[BaseException] = []

    def creator() -> None:
        n = 0
        while not stop.is_set():
            try:
                log.create_topics([TopicSpec(f"new{n}", 1)])
            except BaseException as e:
                errors.append(e)
            n += 1

    thread = threading.Thread(target=creator)
    thread.start()
    producer = log.producer()
    try:
        deadline = time.monotonic() + 3
        n = 0
        while time.monotonic() < deadline and not errors:
            topic = f"new{n}"  # created by the other thread or auto-created here: never cached yet
            producer.send(topic, b"v", on_delivery=lambda r, e: e and errors.append(e))
            producer.flush()
            n += 1
    finally:
        stop.set()
        thread.join()
        producer.close()
        log.close()
    assert errors == []


def test_fair_lock_grants_in_arrival_order_and_forgets_who_gave_up() -> None:
    lock = FairLock()
    assert lock.acquire(1)
    order: list[int] = []

    def waiter(i: int) -> None:
        assert lock.acquire(5)
        order.append(i)
        lock.release()

    threads = []
    for i in range(5):
        threads.append(threading.Thread(target=waiter, args=(i,)))
        threads[-1].start()
        time.sleep(0.05)  # queued one after the other
    assert not lock.acquire(0.05)  # gives up; must not block the queue behind it
    lock.release()
    for t in threads:
        t.join(5)
    assert order == [0, 1, 2, 3, 4]
    assert lock.acquire(0)


def test_retry_busy_retries_only_busy_and_stops_at_the_deadline() -> None:
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = 517  # type: ignore[attr-defined]  # SQLITE_BUSY_SNAPSHOT
    assert is_busy(busy) and not is_busy(sqlite3.OperationalError("no such table: x"))
    calls = []

    def twice_busy() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise busy
        return "ok"

    assert retry_busy(twice_busy, Deadline(5)) == "ok" and len(calls) == 3
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_busy(lambda: (_ for _ in ()).throw(sqlite3.OperationalError("no such table: x")), Deadline(5))

    def always_busy() -> None:
        raise busy

    started = time.monotonic()
    with pytest.raises(BusyTimeout):
        retry_busy(always_busy, Deadline(0.2))
    assert time.monotonic() - started < 1


def test_sqlite3_and_adbc_never_have_one_file_open_at_once(tmp_path: Path) -> None:
    copies = SqliteCopies()
    path = tmp_path / "f.db"
    path.touch()  # as EmbeddedLog does before connecting: a file is known by its inode
    conn = connect_counted(path, 1, copies)
    with copies.adbc(path) as allowed:
        assert not allowed  # a sqlite3 connection is open: read through sqlite3
    conn.close()
    with copies.adbc(path) as allowed:
        assert allowed
        with pytest.raises(CopyWaitTimeout):
            connect_counted(path, 0.1, copies)  # waits for the ADBC read (this thread holds it: times out)
        opened: list[sqlite3.Connection] = []
        t = threading.Thread(target=lambda: opened.append(connect_counted(path, 5, copies)))
        t.start()
        time.sleep(0.2)
        assert opened == []  # still waiting
    t.join(5)
    assert len(opened) == 1
    with copies.adbc(path) as allowed:
        assert not allowed
    del opened[0]  # collected without close(): counted out all the same
    import gc

    gc.collect()
    with copies.adbc(path) as allowed:
        assert allowed


def _append_one(state_dir: str, seen: multiprocessing.Queue) -> None:
    log = EmbeddedLog(state_dir)
    tp = TopicPartition("t", 0)
    seen.put(log.end_offsets([tp])[tp])
    producer = log.producer()
    producer.send("t", b"other process")
    producer.flush()
    producer.close()
    log.close()


@pytest.mark.e2e
def test_an_arrow_read_beside_open_connections_loses_nothing(tmp_path: Path) -> None:
    """ADBC's own copy of SQLite, closing its connection while this process's `sqlite3` ones were
    open, took itself for the last connection and deleted the -wal and -shm files under them:
    another process then missed the commits since the last checkpoint, and a record it appended
    was overwritten by them."""
    log = EmbeddedLog(tmp_path)
    producer = log.producer()
    for i in range(50):
        producer.send("t", b"first %d" % i)
    producer.flush()
    assert sum(b.num_rows for b in log.read_arrow("t", 0, 0, 50)) == 50
    assert (tmp_path / "cdc.db-wal").exists() and (tmp_path / "cdc.db-shm").exists()
    for i in range(50):
        producer.send("t", b"second %d" % i)
    producer.flush()
    ctx = multiprocessing.get_context("spawn")
    seen = ctx.Queue()
    other = ctx.Process(target=_append_one, args=(str(tmp_path), seen))
    other.start()
    other.join(60)
    assert other.exitcode == 0
    assert seen.get(timeout=5) == 100  # the other process sees every commit
    producer.close()
    log.close()
    log = EmbeddedLog(tmp_path)
    reader = log.reader()
    reader.assign({TopicPartition("t", 0): 0})
    values = [r.value for r in reader.poll(1000, timeout=0)]
    reader.close()
    log.close()
    assert values == [b"first %d" % i for i in range(50)] + [b"second %d" % i for i in range(50)] + [b"other process"]


def test_a_transaction_retried_after_busy_stores_its_records_and_offsets_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BUSY in the middle of a transaction: rolled back and run again whole, so the records and
    the offset covering them are stored once, at dense offsets, and each callback fires once."""
    from cdc.log.embedded import EmbeddedProducer

    original = EmbeddedProducer._append_in_txn
    busy_left = [2]

    def busy_after_writing(self: EmbeddedProducer, conn: sqlite3.Connection, pending: list) -> list:
        stored = original(self, conn, pending)  # everything written, not committed
        if busy_left[0]:
            busy_left[0] -= 1
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = 5  # type: ignore[attr-defined]
            raise error
        return stored

    monkeypatch.setattr(EmbeddedProducer, "_append_in_txn", busy_after_writing)
    log = EmbeddedLog(tmp_path)
    producer = log.producer()
    delivered: list[int] = []
    producer.begin_transaction()
    for i in range(5):
        producer.send("data", b"%d" % i, on_delivery=lambda r, e: delivered.append(r.offset))
    producer.send("offsets", b'{"n": 5}', key=b"task")
    producer.commit_transaction()
    assert busy_left == [0] and delivered == [0, 1, 2, 3, 4]
    ends = log.end_offsets([TopicPartition("data", 0), TopicPartition("offsets", 0)])
    assert list(ends.values()) == [5, 1]
    reader = log.reader()
    reader.assign({TopicPartition("data", 0): 0})
    assert [(r.offset, r.value) for r in reader.poll(100, timeout=0)] == [(i, b"%d" % i) for i in range(5)]
    reader.close()
    producer.close()
    log.close()


def test_retention_deletes_in_chunks_and_finishes_what_a_crash_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cdc.log.embedded as embedded

    monkeypatch.setattr(embedded, "DELETE_CHUNK", 7)
    log = EmbeddedLog(tmp_path)
    producer = log.producer()
    for i in range(50):
        producer.send("t", b"%d" % i)
    producer.flush()
    tp = TopicPartition("t", 0)

    def stored() -> list[int]:
        return [o for (o,) in log._conn.execute("SELECT offset FROM records WHERE topic='t' ORDER BY offset")]

    log.delete_records({tp: 30})
    assert log.beginning_offsets([tp]) == {tp: 30} and stored() == list(range(30, 50))
    # A crash after the start moved, before its chunks went: the next deletion takes them too.
    log._conn.execute("UPDATE partitions SET start_offset=40 WHERE topic='t'")
    log.delete_records({tp: 45})
    assert log.beginning_offsets([tp]) == {tp: 45} and stored() == list(range(45, 50))
    producer.close()
    log.close()

"""Group commit in the embedded log: writers that queue behind a commit in progress
commit together, each is told only after the commit that holds its rows, and order per
partition is that of one transaction each."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import cdc.log.embedded_group as embedded_group
from cdc.log.base import LogError, TopicPartition, TopicSpec, UnknownTopicError
from cdc.log.embedded import EmbeddedLog

PARTITIONS = 3


def _slow_commits(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Each group's transaction takes `seconds` longer (slept while it holds the writer's turn,
    so the writers that come meanwhile queue behind it), as a slow disk's sync would."""
    original = embedded_group._attempt

    def slow(conn: sqlite3.Connection, pending: list) -> None:
        time.sleep(seconds)
        original(conn, pending)

    monkeypatch.setattr(embedded_group, "_attempt", slow)


def _stored(path: Path, topic: str) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value) of the topic, through a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT partition, offset, key, value FROM records WHERE topic=? ORDER BY partition, offset", (topic,)
        ).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_concurrent_batches_commit_in_groups_and_each_is_told_only_once_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Several producers append transactions (records and an offset, as a source task does) at
    once while commits are slow: batches share commits; every completion comes after its records
    are readable from a fresh connection; each partition holds each producer's records in the
    order it sent them, at dense offsets."""
    _slow_commits(monkeypatch, 0.01)
    rng = random.Random(seed)
    log = EmbeddedLog(tmp_path, synchronous="NORMAL")
    log.create_topics([TopicSpec("data", PARTITIONS), TopicSpec("offsets", 1, config={"cleanup.policy": "compact"})])
    producers = 4
    plans = [[rng.randint(1, 40) for _ in range(rng.randint(10, 25))] for _ in range(producers)]
    problems: list[str] = []
    completed: list[list[int]] = [[] for _ in range(producers)]

    def run(who: int) -> None:
        producer = log.producer()
        prng = random.Random(seed * 100 + who)
        seq = 0
        try:
            for batch, size in enumerate(plans[who]):
                delivered: list[object] = []
                producer.begin_transaction()
                for _ in range(size):
                    value = json.dumps({"p": who, "seq": seq}).encode()
                    producer.send(
                        "data",
                        value,
                        key=b"%d" % who,
                        partition=prng.randrange(PARTITIONS),
                        on_delivery=lambda r, e, delivered=delivered: delivered.append(e if e is not None else r),
                    )
                    seq += 1
                producer.send("offsets", json.dumps({"seq": seq}).encode(), key=b"producer-%d" % who)
                producer.commit_transaction()  # the completion: after it a task stores its offsets
                if len(delivered) != size or any(isinstance(d, Exception) for d in delivered):
                    problems.append(f"producer {who} batch {batch}: {delivered!r}")
                    return
                readable = {(r[0], r[1]) for r in _stored(tmp_path / "cdc.db", "data")}
                missing = [d for d in delivered if (d.partition, d.offset) not in readable]  # type: ignore[attr-defined]
                if missing:
                    problems.append(f"producer {who} batch {batch}: signalled before readable: {missing[:3]}")
                completed[who].append(seq)
                time.sleep(prng.random() * 0.005)
        except Exception as e:  # reported below: a thread's failure must fail the test
            problems.append(f"producer {who}: {e!r}")
        finally:
            producer.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not problems
    assert [len(c) for c in completed] == [len(p) for p in plans]
    # Batches did share commits (else this tested nothing): fewer transactions than writes.
    assert log._group.members > log._group.groups
    rows = _stored(tmp_path / "cdc.db", "data")
    assert len(rows) == sum(map(sum, plans))
    for partition in range(PARTITIONS):
        offsets = [r[1] for r in rows if r[0] == partition]
        assert offsets == list(range(len(offsets)))  # dense, from 0
        for who in range(producers):
            seqs = [json.loads(r[3])["seq"] for r in rows if r[0] == partition and r[2] == b"%d" % who]
            assert seqs == sorted(seqs)
    offsets_topic = {r[2]: json.loads(r[3])["seq"] for r in _stored(tmp_path / "cdc.db", "offsets")}
    assert offsets_topic == {b"producer-%d" % i: sum(plans[i]) for i in range(producers)}
    log.close()


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.001)


def _queued(log: EmbeddedLog, count: int) -> None:
    _until(lambda: len(log._group._queue) >= count, f"{count} writers queued")


def _committing(log: EmbeddedLog) -> None:
    _until(lambda: log._group._writing, "a commit in progress")


def test_one_writer_failing_in_a_group_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A body that raises is rolled back to its savepoint: its writer gets the error, the others
    of the group commit."""
    original = embedded_group._attempt
    release = threading.Event()
    first = [True]

    def held(conn: sqlite3.Connection, pending: list) -> None:
        if first[0]:
            first[0] = False
            release.wait(10)  # the first commit is in progress while the others queue
        original(conn, pending)

    log = EmbeddedLog(tmp_path, auto_create_topics=False)
    monkeypatch.setattr(embedded_group, "_attempt", held)
    outcomes: dict[str, object] = {}

    def append(name: str, topic: str) -> None:
        producer = log.producer()
        try:
            producer.begin_transaction()
            producer.send(topic, name.encode())
            producer.commit_transaction()
            outcomes[name] = "ok"
        except LogError as e:
            outcomes[name] = e
        finally:
            producer.close()

    leader = threading.Thread(target=log.create_topics, args=([TopicSpec("t"), TopicSpec("u")],))
    leader.start()
    _committing(log)  # the leader holds its commit
    threads = [
        threading.Thread(target=append, args=(name, topic))
        for name, topic in (("before", "t"), ("bad", "missing"), ("after", "u"))
    ]
    for i, t in enumerate(threads):
        t.start()
        _queued(log, i + 1)  # in this order
    release.set()
    leader.join(10)
    for t in threads:
        t.join(10)
    assert outcomes["before"] == "ok" and outcomes["after"] == "ok"
    assert isinstance(outcomes["bad"], UnknownTopicError)
    assert log._group.groups == 3 and log._group.members == 5  # schema check + create_topics, then the 3
    assert [r[3] for r in _stored(tmp_path / "cdc.db", "t")] == [b"before"]
    assert [r[3] for r in _stored(tmp_path / "cdc.db", "u")] == [b"after"]
    log.close()


def test_a_queued_writer_gives_up_at_its_busy_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer whose turn does not come within busy_timeout_ms fails with the log's busy error
    and leaves the queue; the writer holding the turn still commits."""
    log = EmbeddedLog(tmp_path, busy_timeout_ms=300)
    log.create_topics([TopicSpec("t")])
    _slow_commits(monkeypatch, 1.0)
    holder = threading.Thread(target=log.create_topics, args=([TopicSpec("u")],))
    holder.start()
    _committing(log)
    producer = log.producer()
    errors: list[Exception | None] = []
    producer.send("t", b"v", on_delivery=lambda r, e: errors.append(e))
    producer.flush()
    holder.join(10)
    assert len(errors) == 1 and isinstance(errors[0], LogError) and "stayed locked" in str(errors[0])
    assert log._group._queue == [] and "u" in log.list_topics()
    producer.close()
    log.close()


_WRITER = textwrap.dedent(
    """
    import json, random, sys, threading
    from cdc.log.embedded import EmbeddedLog
    lg = EmbeddedLog(sys.argv[1])
    topic = sys.argv[2]
    out = threading.Lock()

    def run(who):
        rng = random.Random(who)
        p = lg.producer()
        batch = 0
        while True:
            size = rng.randint(1, 30)
            p.begin_transaction()
            for i in range(size):
                p.send(topic, json.dumps([who, batch, i]).encode(), key=b"%d" % who, partition=rng.randrange(3))
            p.send("offsets", json.dumps({"batch": batch}).encode(), key=b"%s-%d" % (topic.encode(), who))
            p.commit_transaction()
            with out:  # completion signalled: the parent may count this batch as stored
                print(who, batch, size, flush=True)
            batch += 1

    for who in range(4):
        threading.Thread(target=run, args=(who,), daemon=True).start()
    threading.Event().wait()
    """
)


@pytest.mark.e2e
def test_kill_9_loses_no_batch_whose_completion_was_signalled(tmp_path: Path) -> None:
    """Four producer threads of a child process append concurrently (group commit at work); the
    child is killed with SIGKILL mid-stream. Every batch it reported complete is in the log,
    whole; each producer's stored batches have no gap, and each partition holds them in order."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    rng = random.Random(34)
    for run in range(3):
        topic = f"data-{run}"
        with EmbeddedLog(tmp_path) as lg:
            lg.create_topics([TopicSpec(topic, 3), TopicSpec("offsets", 1, config={"cleanup.policy": "compact"})])
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), topic], stdout=subprocess.PIPE, text=True, env=env
        )
        assert child.stdout is not None
        signalled: dict[tuple[int, int], int] = {}
        for _ in range(rng.randint(40, 120)):
            who, batch, size = map(int, child.stdout.readline().split())
            signalled[(who, batch)] = size
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        counts: dict[tuple[int, int], int] = {}
        in_partition: dict[tuple[int, int], list[tuple[int, int]]] = {}
        rows = _stored(tmp_path / "cdc.db", topic)
        for partition, _offset, _key, value in rows:
            who, batch, i = json.loads(value)
            counts[(who, batch)] = counts.get((who, batch), 0) + 1
            in_partition.setdefault((partition, who), []).append((batch, i))
        for key, size in signalled.items():
            assert counts.get(key) == size, f"batch {key} was signalled complete but is not stored whole"
        for who in range(4):
            batches = sorted(b for w, b in counts if w == who)
            assert batches == list(range(len(batches)))  # no gap: a later batch never without an earlier
        for seen in in_partition.values():
            assert seen == sorted(seen)
        with EmbeddedLog(tmp_path) as lg:
            ends = lg.end_offsets([TopicPartition(topic, p) for p in range(3)])
            assert sum(ends.values()) == len(rows)
            # Each producer's stored offset covers exactly its stored batches (one transaction).
            stored_offsets = {r[2]: json.loads(r[3])["batch"] for r in _stored(tmp_path / "cdc.db", "offsets")}
            for who in range(4):
                last = stored_offsets.get(b"%s-%d" % (topic.encode(), who))
                assert last == max((b for w, b in counts if w == who), default=None)

"""The embedded log under contention: many threads and processes on one state dir at once (issue 19).

A worker with many connectors has a dozen writers on one SQLite file (tasks' record+offset
transactions, offset flushes, status writes, sink group commits, the LogCleaner), and other
processes beside it (`task.isolation=process` children, `cdc status`, the Spark source's
ADBC reads). SQLite answers some of those collisions with SQLITE_BUSY *without* calling the
busy handler (switching a new file to WAL, upgrading a read to a write, WAL recovery), which
surfaced as `sqlite3.OperationalError: database is locked` in a task. A busy log must wait or
retry, never fail: these tests run every kind of client at once with a short busy timeout
and require no error at all, and dense, complete offsets afterwards.

Seeded: each actor draws its operations from `random.Random(seed)`; timing still varies.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cdc.log.base import TopicPartition, TopicSpec
from cdc.log.embedded import EmbeddedLog

# A wait that SQLite skips (BUSY at once) fails at any timeout; a deadlock fails after it. Not
# shorter: on a loaded 2-core CI machine, with another test file running beside this one, a
# fair queue of 16 writers can legitimately wait seconds, and a test must not assert timing.
BUSY_MS = 30_000
DATA_TOPICS = [f"data{i}" for i in range(4)]
RETAINED = [f"ret{i}" for i in range(2)]  # retention.ms=1: the cleaner deletes as writers append
OFFSETS = "stress-offsets"
ACTIONS = ["txn", "txn", "txn", "send", "create", "retention", "consume", "read", "reopen", "arrow", "delete"]


def _setup(state_dir: Path) -> None:
    log = EmbeddedLog(state_dir, busy_timeout_ms=BUSY_MS)
    try:
        log.create_topics(
            [TopicSpec(t, 3) for t in DATA_TOPICS]
            + [TopicSpec(t, 2, config={"retention.ms": "1"}) for t in RETAINED]
            + [TopicSpec(OFFSETS, 1, config={"cleanup.policy": "compact"})]
        )
    finally:
        log.close()


class _Actor:
    """One client thread: a seeded mix of everything a worker and its neighbours do to the log."""

    def __init__(self, log: EmbeddedLog, name: str, seed: int, ops: int) -> None:
        self.log, self.name, self.rng, self.ops = log, name, random.Random(seed), ops
        self.seq = 0
        self.stored: list[tuple[str, int, int, str]] = []  # topic, partition, offset, value
        self.errors: list[str] = []
        self.last_offset_seq = -1

    def run(self) -> None:
        producer = self.log.producer()
        try:
            for _ in range(self.ops):
                action = self.rng.choice(ACTIONS)
                try:
                    getattr(self, f"_{action}")(producer)
                except Exception:
                    self.errors.append(f"{self.name} {action}: {traceback.format_exc()}")
        finally:
            producer.close()

    def _callback(self, topic_value: str):
        def on_delivery(rec: Any, err: Exception | None) -> None:
            if err is not None:
                self.errors.append(f"{self.name} delivery of {topic_value}: {err!r}")
            else:
                self.stored.append((rec.topic, rec.partition, rec.offset, rec.value.decode()))

        return on_delivery

    def _next_value(self) -> str:
        self.seq += 1
        return f"{self.name}:{self.seq}"

    def _txn(self, producer: Any) -> None:
        """A source task's commit: records and the offset covering them in one transaction."""
        producer.begin_transaction()
        for _ in range(self.rng.randint(1, 30)):
            value = self._next_value()
            topic = self.rng.choice(DATA_TOPICS + RETAINED)
            producer.send(topic, value.encode(), key=value.encode(), on_delivery=self._callback(value))
        producer.send(OFFSETS, str(self.seq).encode(), key=self.name.encode())
        producer.commit_transaction()
        self.last_offset_seq = self.seq

    def _send(self, producer: Any) -> None:
        for _ in range(self.rng.randint(1, 20)):
            value = self._next_value()
            producer.send(self.rng.choice(DATA_TOPICS), value.encode(), on_delivery=self._callback(value))
        assert producer.flush() == 0

    def _create(self, producer: Any) -> None:
        self.log.create_topics([TopicSpec(f"created{self.rng.randint(0, 15)}", self.rng.randint(1, 3))])

    def _retention(self, producer: Any) -> None:
        self.log.enforce_retention()

    def _delete(self, producer: Any) -> None:
        tp = TopicPartition(self.rng.choice(RETAINED), self.rng.randint(0, 1))
        end = self.log.end_offsets([tp])[tp]
        self.log.delete_records({tp: self.rng.randint(0, end)})

    def _consume(self, producer: Any) -> None:
        """A sink task: group reads and commits."""
        group = f"sink{self.rng.randint(0, 3)}"
        consumer = self.log.group_consumer(group, pattern=r"data\d")
        try:
            records = consumer.poll(200, timeout=0.05)
            commits: dict[TopicPartition, int] = {}
            for r in records:
                commits[TopicPartition(r.topic, r.partition)] = r.offset + 1
            if commits:
                consumer.commit(commits)
        finally:
            consumer.close()

    def _read(self, producer: Any) -> None:
        reader = self.log.reader()
        try:
            tps = [TopicPartition(t, p) for t in DATA_TOPICS for p in range(3)]
            reader.assign(dict.fromkeys(tps, 0))
            reader.poll(300, timeout=0.01)
        finally:
            reader.close()

    def _reopen(self, producer: Any) -> None:
        """`cdc status` or a task process: a log of its own on the same file, opened and closed."""
        other = EmbeddedLog(self.log.state_dir, busy_timeout_ms=BUSY_MS)
        try:
            other.list_topics()
            other.end_offsets([TopicPartition(OFFSETS, 0)])
        finally:
            other.close()

    def _arrow(self, producer: Any) -> None:
        """The Spark source's bulk read through its own ADBC connection."""
        tp = TopicPartition(self.rng.choice(DATA_TOPICS), self.rng.randint(0, 2))
        end = self.log.end_offsets([tp])[tp]
        rows = sum(b.num_rows for b in self.log.read_arrow(tp.topic, tp.partition, 0, end))
        assert rows == end, f"{tp}: read {rows} of {end} records"


def _run_actors(state_dir: str, names: list[str], seeds: list[int], ops: int) -> dict[str, Any]:
    """Threads sharing one EmbeddedLog, as a worker's tasks do; returns what they stored and any error."""
    log = EmbeddedLog(state_dir, busy_timeout_ms=BUSY_MS)
    actors = [_Actor(log, n, s, ops) for n, s in zip(names, seeds, strict=True)]
    threads = [threading.Thread(target=a.run, name=a.name) for a in actors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    return {
        "stored": [s for a in actors for s in a.stored],
        "errors": [e for a in actors for e in a.errors],
        "offsets": {a.name: a.last_offset_seq for a in actors},
    }


@pytest.mark.e2e
def test_threads_and_processes_at_once_never_see_a_locked_log(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _setup(state)
    rng = random.Random(19)
    processes, threads_each, ops = 3, 4, 60
    groups = [[f"p{p}t{t}" for t in range(threads_each)] for p in range(processes + 1)]
    seeds = [[rng.randrange(2**32) for _ in g] for g in groups]
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_run_actors, str(state), groups[p], seeds[p], ops) for p in range(processes)]
        results = [_run_actors(str(state), groups[-1], seeds[-1], ops)]  # this process too, meanwhile
        results += [f.result() for f in futures]

    errors = [e for r in results for e in r["errors"]]
    assert errors == [], "\n".join(errors[:5])

    log = EmbeddedLog(state, busy_timeout_ms=BUSY_MS)
    try:
        stored = [s for r in results for s in r["stored"]]
        # Every record stored exactly once, at dense offsets 0..end-1 of its partition.
        by_tp: dict[tuple[str, int], list[int]] = {}
        for topic, partition, offset, _ in stored:
            by_tp.setdefault((topic, partition), []).append(offset)
        for (topic, partition), offsets in by_tp.items():
            tp = TopicPartition(topic, partition)
            assert sorted(offsets) == list(range(log.end_offsets([tp])[tp])), f"{tp}: offsets not dense"
        values = [v for *_, v in stored]
        assert len(values) == len(set(values))
        # What the data topics hold is exactly what the callbacks reported.
        reader = log.reader()
        reader.assign({TopicPartition(t, p): 0 for t in DATA_TOPICS for p in range(3)})
        read: list[tuple[str, int, int, str]] = []
        while batch := reader.poll(10_000, timeout=0):
            read += [(r.topic, r.partition, r.offset, r.value.decode()) for r in batch]
        reader.close()
        assert sorted(read) == sorted(s for s in stored if s[0] in DATA_TOPICS)
        # The offsets topic holds each actor's last committed offset (compacted).
        reader = log.reader()
        reader.assign({TopicPartition(OFFSETS, 0): 0})
        latest = {r.key.decode(): int(r.value) for r in reader.poll(10_000, timeout=0)}
        reader.close()
        expected = {k: v for r in results for k, v in r["offsets"].items() if v >= 0}
        assert latest == expected
    finally:
        log.close()


def _open_each_round(base: str, rounds: int, barrier: Any, errors: Any) -> None:
    for r in range(rounds):
        barrier.wait()
        try:
            log = EmbeddedLog(Path(base) / f"round{r}", busy_timeout_ms=BUSY_MS)
            producer = log.producer()
            producer.send("t", b"v")
            assert producer.flush() == 0
            producer.close()
            log.close()
        except Exception:
            errors.put(f"round {r}: {traceback.format_exc()}")


@pytest.mark.e2e
def test_processes_opening_a_new_log_at_once(tmp_path: Path) -> None:
    """Several processes creating one state dir at once (a worker and its task processes, two
    `cdc` commands): each switches the new file to WAL and creates the schema, which SQLite
    refuses at once with SQLITE_BUSY to all but one, whatever the busy timeout."""
    ctx = multiprocessing.get_context("spawn")
    processes, rounds = 6, 60
    barrier, errors = ctx.Barrier(processes), ctx.Queue()
    procs = [
        ctx.Process(target=_open_each_round, args=(str(tmp_path), rounds, barrier, errors)) for _ in range(processes)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == [], f"{len(found)} failed opens, the first: {found[0] if found else ''}"
    assert [p.exitcode for p in procs] == [0] * processes
    for r in range(rounds):
        log = EmbeddedLog(tmp_path / f"round{r}")
        tp = TopicPartition("t", 0)
        assert log.end_offsets([tp]) == {tp: processes}
        log.close()

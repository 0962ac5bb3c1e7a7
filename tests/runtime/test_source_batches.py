"""The source path writes whole poll batches (batch conversion, a writer thread, one transaction per
batch with its offsets, or per group of batches polled while the writer was busy): a write failing
in the middle of a batch stores no record of that batch and no offset past the last durable record,
and the task fails.

The failure is real: an SQLite trigger in the embedded log refuses the insert of one record,
chosen at random (seeded), so the transaction of its batch rolls back inside SQLite.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc.api import SourceRecord, SourceTask
from cdc.log.embedded import EmbeddedLog
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.source_task import WorkerSourceTask
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import State
from tests.runtime.connectors import GeneratorSource, GeneratorTask
from tests.support.logs import stored_offsets, topic_records

TOPIC = "gen.events"
COUNT = 200
BATCH = 10  # GeneratorTask's poll size
_RNG = random.Random(21)
SEEDS = [_RNG.randrange(COUNT) for _ in range(4)]  # the refused record's id, one per case


class PlainTask(GeneratorTask):
    """GeneratorTask without a commit_record: the runtime asks the log for no per-record offset."""

    commit_record = SourceTask.commit_record  # type: ignore[assignment]


class PlainSource(GeneratorSource):
    def task_class(self) -> type[SourceTask]:
        return PlainTask


@pytest.fixture(params=[True, False], ids=["pipelined", "inline"])
def state(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(WorkerSourceTask, "PIPELINE", request.param)
    yield tmp_path / "state"


def _herder(state: Path) -> StandaloneHerder:
    config = WorkerConfig({"transport": "embedded", "state.dir": str(state)})
    registry = PluginRegistry.discover()
    registry.add(GeneratorSource, "1.0", "test")
    registry.add(PlainSource, "1.0", "test")
    registry.add(BurstSource, "1.0", "test")
    log_ = open_log(config)
    worker = Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_), "w1")
    h = StandaloneHerder(worker)
    h.start()
    return h


def _refuse_id(state: Path, id_: int) -> None:
    """A trigger that makes the log's INSERT of the record with id `id_` on TOPIC fail (wherever it lands)."""
    log_ = EmbeddedLog(state)
    log_.close()
    conn = sqlite3.connect(state / "cdc.db")
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON records "
        f"WHEN NEW.topic='{TOPIC}' AND json_extract(CAST(NEW.value AS TEXT), '$.payload.id')={id_} "
        "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
    )
    conn.commit()
    conn.close()


def _wait(cond: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _slow_writes(monkeypatch: pytest.MonkeyPatch, seconds: float) -> list[int]:
    """Each log transaction takes `seconds` longer; returns the record counts of those written."""
    write = WorkerSourceTask._write_transaction
    written: list[int] = []

    def slow_write(self: WorkerSourceTask, txn: object) -> None:
        time.sleep(seconds)
        write(self, txn)  # type: ignore[arg-type]
        written.append(len(txn.records))  # type: ignore[attr-defined]

    monkeypatch.setattr(WorkerSourceTask, "_write_transaction", slow_write)
    return written


@pytest.mark.parametrize("slow", [0, 0.02], ids=["fast-log", "slow-log"])
@pytest.mark.parametrize("connector", ["GeneratorSource", "PlainSource"])
@pytest.mark.parametrize("bad", SEEDS)
def test_a_write_failing_mid_batch_stores_nothing_past_the_last_durable_batch(
    state: Path, connector: str, bad: int, slow: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a slow log, batches are waiting to join the next transaction when the failing one
    fails: they must be dropped, not written after the gap."""
    if slow:
        _slow_writes(monkeypatch, slow)
        monkeypatch.setattr(WorkerSourceTask, "GROUP_MAX_RECORDS", 3 * BATCH)  # many groups, each one full
    _refuse_id(state, bad)
    herder = _herder(state)
    try:
        herder.put_connector_config({"name": "gen", "connector.class": connector, "topic": TOPIC, "count": str(COUNT)})
        _wait(lambda: herder.worker.status_store.get_task("gen", 0).state is State.FAILED, "the task to fail")
        trace = herder.worker.status_store.get_task("gen", 0).trace or ""
        assert "injected failure" in trace
    finally:
        herder.stop()
    log_ = EmbeddedLog(state)
    try:
        ids = [json.loads(r.value)["payload"]["id"] for r in topic_records(log_, TOPIC)]
        # Whole poll batches before the refused record's (batches polled while the writer was busy
        # share a transaction, so the refused one may take several batches with it), none after it.
        durable = len(ids)
        assert ids == list(range(durable)) and durable <= bad - bad % BATCH and durable % BATCH == 0, ids
        offsets = list(stored_offsets(log_).values())
        assert offsets == ([{"n": durable}] if durable else [])
    finally:
        log_.close()


def test_batches_polled_while_the_writer_is_busy_share_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow log (each commit 30 ms here) makes the task poll on into the next transaction
    instead of waiting: fewer transactions than poll batches, every record once and in order, the
    offset of the last one stored, and commit_record called for each record in order."""
    written = _slow_writes(monkeypatch, 0.03)
    GeneratorTask.committed_records = []
    state = tmp_path / "state"
    herder = _herder(state)
    try:
        herder.put_connector_config(
            {"name": "gen", "connector.class": "GeneratorSource", "topic": TOPIC, "count": "2000"}
        )
        _wait(lambda: sum(written) == 2000, "every record to be written")
    finally:
        herder.stop()
    assert len(written) < 2000 // BATCH / 2, f"{len(written)} transactions for {2000 // BATCH} poll batches"
    assert all(n % BATCH == 0 for n in written), written  # whole poll batches
    committed = [r.source_offset["n"] for r in GeneratorTask.committed_records]
    assert committed == list(range(1, 2001))
    log_ = EmbeddedLog(state)
    try:
        ids = [json.loads(r.value)["payload"]["id"] for r in topic_records(log_, TOPIC)]
        assert ids == list(range(2000))
        assert list(stored_offsets(log_).values()) == [{"n": 2000}]
    finally:
        log_.close()


class BurstTask(GeneratorTask):
    """Two one-record polls back to back (a burst), then a poll that blocks until `quiet_over` is set:
    the source gone quiet, as a binlog reader waits for its next event."""

    quiet_over = threading.Event()

    def start(self, props: dict[str, str]) -> None:
        super().start(props)
        self.polls = 0

    def poll(self) -> list[SourceRecord] | None:
        self.polls += 1
        if self.polls <= 2:
            self.count = self.next + 1
            return super().poll()
        BurstTask.quiet_over.wait(30)
        return None


class BurstSource(GeneratorSource):
    def task_class(self) -> type[SourceTask]:
        return BurstTask


def test_the_last_batch_of_a_burst_is_written_without_waiting_for_the_next_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second batch arrives while the first is being written (50 ms here). It waits for that
    write (GROUP_WAIT_S, 1 s here) and is handed over, instead of joining a transaction that would
    be written only once the blocked poll returns."""
    _slow_writes(monkeypatch, 0.05)
    monkeypatch.setattr(WorkerSourceTask, "GROUP_WAIT_S", 1.0)
    BurstTask.quiet_over.clear()
    state = tmp_path / "state"
    herder = _herder(state)
    try:
        herder.put_connector_config({"name": "burst", "connector.class": "BurstSource", "topic": TOPIC, "count": "9"})
        reader = EmbeddedLog(state)
        try:
            # While the task's third poll is still blocked, both records must be in the log.
            _wait(lambda: len(topic_records(reader, TOPIC)) == 2, "the burst's last record in the log")
            assert not BurstTask.quiet_over.is_set()
            assert list(stored_offsets(reader).values()) == [{"n": 2}]
        finally:
            reader.close()
    finally:
        BurstTask.quiet_over.set()
        herder.stop()

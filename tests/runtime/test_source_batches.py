"""The source path writes whole poll batches (batch conversion, a writer thread, one transaction per
batch with its offsets): a write failing in the middle of a batch stores no record of that batch and
no offset past the last durable record, and the task fails.

The failure is real: an SQLite trigger in the embedded log refuses the insert of one record,
chosen at random (seeded), so the transaction of its batch rolls back inside SQLite.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc.api import SourceTask
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
SEEDS = [random.Random(21).randrange(COUNT) for _ in range(3)]


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
    log_ = open_log(config)
    worker = Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_), "w1")
    h = StandaloneHerder(worker)
    h.start()
    return h


def _refuse_offset(state: Path, offset: int) -> None:
    """A trigger that makes the log's INSERT of the record at `offset` of TOPIC fail."""
    log_ = EmbeddedLog(state)
    log_.close()
    conn = sqlite3.connect(state / "cdc.db")
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON records "
        f"WHEN NEW.topic='{TOPIC}' AND NEW.offset={offset} BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
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


@pytest.mark.parametrize("connector", ["GeneratorSource", "PlainSource"])
@pytest.mark.parametrize("bad", SEEDS)
def test_a_write_failing_mid_batch_stores_nothing_past_the_last_durable_batch(
    state: Path, connector: str, bad: int
) -> None:
    _refuse_offset(state, bad)
    herder = _herder(state)
    try:
        herder.put_connector_config({"name": "gen", "connector.class": connector, "topic": TOPIC, "count": str(COUNT)})
        _wait(lambda: herder.worker.status_store.get_task("gen", 0).state is State.FAILED, "the task to fail")
        trace = herder.worker.status_store.get_task("gen", 0).trace or ""
        assert "injected failure" in trace
    finally:
        herder.stop()
    durable = bad - bad % BATCH  # the batches before the refused record's
    log_ = EmbeddedLog(state)
    try:
        ids = [json.loads(r.value)["payload"]["id"] for r in topic_records(log_, TOPIC)]
        assert ids == list(range(durable))
        offsets = list(stored_offsets(log_).values())
        assert offsets == ([{"n": durable}] if durable else [])
    finally:
        log_.close()

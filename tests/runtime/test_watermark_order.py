"""A watermark record (a heartbeat) reaches the log only after everything the task sent before it.

The producer here records what the task asks of it (a stand-in for the log: the question is the
order of the task's calls, which no real log exposes). At least once, the task flushes before the
watermark; transactional, the watermark opens a transaction of its own after the data's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from cdc.api import WATERMARK_HEADER, Schema, SourceRecord, SourceTask
from cdc.converters.header import SimpleHeaderConverter
from cdc.converters.json import JsonConverter
from cdc.log.base import LogProducer
from cdc.runtime.errors import RetryWithToleranceOperator
from cdc.runtime.source_task import WorkerSourceTask, watermark_segments
from cdc.runtime.task import ConnectorTaskId
from cdc.storage.offsets import MemoryOffsetBackingStore
from cdc.transforms.chain import TransformationChain
from cdc_debezium.heartbeat import Heartbeat

pytestmark = pytest.mark.unit


def _data(n: int) -> SourceRecord:
    return SourceRecord({"s": 1}, {"pos": n}, "data", None, None, None, Schema.INT32_SCHEMA, n)


def _mark(n: int) -> SourceRecord:
    return Heartbeat(1, "__debezium-heartbeat.s", "s").record({"s": 1}, {"pos": n})


def test_a_batch_is_cut_before_each_watermark() -> None:
    d1, d2, m3, d4, m5, m6 = _data(1), _data(2), _mark(3), _data(4), _mark(5), _mark(6)
    assert watermark_segments([d1, d2]) == [(False, [d1, d2])]
    cut = [(False, [d1, d2]), (True, [m3, d4]), (True, [m5]), (True, [m6])]
    assert watermark_segments([d1, d2, m3, d4, m5, m6]) == cut
    assert watermark_segments([m3, d4]) == [(True, [m3, d4])]


def test_a_heartbeat_carries_the_offset_it_stands_at() -> None:
    header = _mark(7).headers.last_with_name(WATERMARK_HEADER)
    assert header is not None and json.loads(header.value) == {"pos": 7}
    assert len(_data(1).headers) == 0


class RecordingProducer(LogProducer):
    """Remembers the calls in order; a record is acknowledged only at flush (or commit)."""

    def __init__(self, transactional: bool) -> None:
        self._transactional = transactional
        self.calls: list[str] = []
        self.pending: list[Any] = []

    @property
    def transactional(self) -> bool:
        return self._transactional

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, headers: Sequence = (),
             timestamp: int | None = None, partition: int | None = None, on_delivery: Any = None) -> None:  # fmt: skip
        self.calls.append(f"send {topic}")
        if on_delivery is not None:
            self.pending.append(lambda: on_delivery(None, None))

    def send_many(self, records: Sequence, on_error: Any = None, on_success: Any = None) -> None:
        for r in records:
            self.calls.append(f"send {r[0]}")
            if on_success is not None:
                self.pending.append(on_success)

    def poll(self, timeout: float = 0.0) -> None:
        pass

    def flush(self, timeout: float | None = None) -> int:
        self.calls.append("flush")
        for done in self.pending:
            done()
        self.pending.clear()
        return 0

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def commit_transaction(self, timeout: float | None = None) -> None:
        self.calls.append("commit")
        self.pending.clear()

    def abort_transaction(self, timeout: float | None = None) -> None:
        self.calls.append("abort")

    def close(self) -> None:
        pass


class Script(SourceTask):
    """Hands out the given batches, one per poll, then stops its runner."""

    def __init__(self, batches: list[list[SourceRecord]]) -> None:
        self.batches = list(batches)
        self.runner: WorkerSourceTask | None = None

    def start(self, props: dict[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        if not self.batches:
            assert self.runner is not None
            self.runner.stop()
            return None
        return self.batches.pop(0)

    def stop(self) -> None:
        pass


class Creator:
    def ensure(self, topic: str) -> None:
        pass

    def history_log(self, topic: str) -> None:
        return None

    def signal_log(self, topic: str, group_id: str) -> None:
        return None


class Listener:
    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


class TransactionalStore(MemoryOffsetBackingStore):
    def stage(self, producer: LogProducer, entries: Any) -> None:
        producer.send("offsets", b"x")


def _run(batches: list[list[SourceRecord]], transactional: bool, pipeline: bool = True) -> list[str]:
    producer = RecordingProducer(transactional)
    task = Script(batches)
    store = TransactionalStore() if transactional else MemoryOffsetBackingStore()
    store.start()
    key, value = JsonConverter(), JsonConverter()
    key.configure({"schemas.enable": "false"}, True)
    value.configure({"schemas.enable": "false"}, False)
    cls = WorkerSourceTask if pipeline else type("NoPipeline", (WorkerSourceTask,), {"PIPELINE": False})
    runner = cls(
        ConnectorTaskId("c", 0),
        task,
        {},
        Listener(),  # type: ignore[arg-type]
        key_converter=key,
        value_converter=value,
        header_converter=SimpleHeaderConverter(),
        chain=TransformationChain(),
        producer=producer,
        offset_store=store,
        offset_reader=None,  # type: ignore[arg-type]
        errors=RetryWithToleranceOperator("c-0"),
        topic_creator=Creator(),  # type: ignore[arg-type]
        transactional=transactional,
    )
    task.runner = runner
    errors: list[BaseException] = []

    def execute() -> None:
        try:
            runner.execute()
        except BaseException as e:  # reported below
            errors.append(e)

    thread = threading.Thread(target=execute)
    thread.start()
    thread.join(30)
    assert not thread.is_alive() and not errors, errors
    return [c for c in producer.calls if c != "send offsets"]


@pytest.mark.parametrize("layout", [[[1, 2, "m", 3]], [[1, 2], ["m", 3]], [[1], [2], ["m"], [3]]])
def test_at_least_once_the_log_acknowledges_everything_before_the_watermark_is_sent(layout: list) -> None:
    batches = [[_mark(9) if x == "m" else _data(x) for x in b] for b in layout]
    calls = _run(batches, transactional=False)
    mark = calls.index("send __debezium-heartbeat.s")
    assert calls[:mark].count("send data") == 2 and calls[mark - 1] == "flush", calls
    assert calls[mark + 1 :].count("send data") == 1


@pytest.mark.parametrize("pipeline", [True, False])
@pytest.mark.parametrize("layout", [[[1, 2, "m", 3]], [[1, 2], ["m", 3]], [[1], [2], ["m"], [3]]])
def test_transactional_the_watermark_never_shares_a_transaction_with_what_precedes_it(
    layout: list, pipeline: bool
) -> None:
    batches = [[_mark(9) if x == "m" else _data(x) for x in b] for b in layout]
    calls = _run(batches, transactional=True, pipeline=pipeline)
    mark = calls.index("send __debezium-heartbeat.s")
    opened = max(i for i, c in enumerate(calls[:mark]) if c == "begin")
    before = calls[:opened]
    assert before.count("send data") == 2 and before[-1] == "commit", calls
    assert "send data" not in calls[opened:mark], calls

"""The `cdc` source's end offsets over a Kafka-protocol broker that is being written to (issue 40).

With probeEndOffsets=true (Tansu 0.6's high watermark stops inside the last record batch) the
end of a micro-batch is found by one bounded read, not by reading until the topic is quiet: a
steady writer must not keep the query from planning batches. Real brokers and a real producer
thread, no mocks; on librdkafka's mock cluster (an exact high watermark) the probe must neither
lose nor add records.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from cdc.log import LogRecord, TopicPartition
from cdc.log.kafka import KafkaLog
from cdc_spark.source import offsets as off
from cdc_spark.source.options import SourceOptions
from cdc_spark.source.reader import CdcStreamReader
from tests.rig import KafkaBroker

# The brokers come through request.getfixturevalue, which the tier check does not see.
pytestmark = pytest.mark.integration

PARTITIONS = 4  # the mock cluster auto-creates every topic with 4
BROKERS = ["tansu", "kafka_mock"]
T = TypeVar("T")


class Writer:
    """A producer thread: a burst of 2 records to each partition every 50 ms (about 160 records/s).

    Partitions are chosen explicitly and the producer is idempotent, so a partition's true end
    is the number of records acknowledged for it; bursts make multi-record batches, whose tail
    Tansu's high watermark leaves out.
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self._log = KafkaLog(bootstrap)
        self._producer = self._log.producer()
        self._acked = [0] * PARTITIONS
        self._offsets: list[set[int]] = [set() for _ in range(PARTITIONS)]
        self._errors: list[Exception] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="probe-test-writer", daemon=True)
        self._sent = 0

    def _delivered(self, record: LogRecord | None, error: Exception | None) -> None:
        with self._lock:
            if error is not None or record is None:
                self._errors.append(error or RuntimeError("no record"))
                return
            self._acked[record.partition] += 1
            self._offsets[record.partition].add(record.offset)

    def _burst(self, per_partition: int) -> None:
        for p in range(PARTITIONS):
            for _ in range(per_partition):
                self._sent += 1
                key = b"k%d" % self._sent
                self._producer.send(self.topic, b"v%d" % self._sent, key=key, partition=p, on_delivery=self._delivered)
        self._producer.poll(0)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._burst(2)
            self._stop.wait(0.05)

    def start(self) -> None:
        self._thread.start()

    def wait_for(self, records: int, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while sum(self._acked) < records:
            assert time.monotonic() < deadline, f"the writer got only {sum(self._acked)} records acknowledged"
            time.sleep(0.05)

    def stop(self) -> off.Offsets:
        """Stop writing, then one last burst of 5 records per partition (one batch each); the true ends."""
        self._stop.set()
        self._thread.join(30)
        assert self._producer.flush(30) == 0  # so that no earlier record joins the last batch
        self._burst(5)
        assert self._producer.flush(30) == 0
        with self._lock:
            assert not self._errors, self._errors
            for p in range(PARTITIONS):
                assert self._offsets[p] == set(range(self._acked[p])), f"partition {p}: offsets are not 0..n-1"
            return {TopicPartition(self.topic, p): self._acked[p] for p in range(PARTITIONS)}


def _topic(broker: KafkaBroker) -> str:
    topic = f"probe.{broker.kind}.t{uuid.uuid4().hex[:10]}"
    broker.create_topic(topic, partitions=PARTITIONS)
    return topic


def _source(broker: KafkaBroker, topic: str) -> dict[str, str]:
    return {"transport": "kafka", "bootstrap.servers": broker.bootstrap, "topics": topic, "probeEndOffsets": "true"}


def _within(seconds: float, call: Callable[[], T]) -> T | None:
    """call()'s result, or None if it has not returned within `seconds` (it runs on, in a daemon thread)."""
    box: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            box.append(call())
        except BaseException as e:  # re-raised in the test's thread
            failed.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if failed:
        raise failed[0]
    return box[0] if box else None


@pytest.mark.parametrize("broker_name", BROKERS)
def test_latest_offset_returns_while_a_producer_writes_and_ends_exactly_when_it_stops(
    broker_name: str, request: pytest.FixtureRequest
) -> None:
    broker: KafkaBroker = request.getfixturevalue(broker_name)
    topic = _topic(broker)
    reader = CdcStreamReader(SourceOptions.parse(_source(broker, topic)))
    writer = Writer(broker.bootstrap, topic)
    seen: list[off.Offsets] = []
    try:
        writer.start()
        writer.wait_for(100)
        start = reader.initialOffset()
        for trigger in range(3):
            # The old probe read until a poll came back empty: never, while the writer writes.
            end = _within(20, lambda s=start: reader.latestOffset(s, ReadAllAvailable()))
            assert end is not None, f"latestOffset (trigger {trigger}) did not return within 20 s while writing"
            seen.append(off.from_json(end))
            start = end
            time.sleep(0.2)  # the writer writes on between triggers
    finally:
        final = writer.stop()
    try:
        log = KafkaLog(broker.bootstrap)
        reported = log.end_offsets(list(final))
        log.close()
        if broker.exact_end_offsets:
            assert reported == final
        else:  # Tansu: the base offset of the last batch (5 records) + 1; the probe is what finds the rest
            assert all(reported[tp] == final[tp] - 4 for tp in final), (reported, final)
        # Quiet now: the probe finds the true end, neither short of it (Tansu) nor past it.
        assert off.from_json(reader.latestOffset(start, ReadAllAvailable())) == final
        reader.prepareForTriggerAvailableNow()
        assert off.from_json(reader.latestOffset(start, ReadAllAvailable())) == final
    finally:
        reader.stop()
    # While it wrote, each end was made of records that exist, and ends never went back.
    for earlier, later in zip(seen, [*seen[1:], final], strict=True):
        assert all(earlier[tp] <= later[tp] for tp in final), (earlier, later)
    assert seen[-1] != seen[0], "the ends did not move while the writer wrote"


@pytest.mark.parametrize("broker_name", BROKERS)
def test_micro_batches_are_planned_while_a_producer_writes_and_each_record_is_read_once(
    spark: Any, broker_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    broker: KafkaBroker = request.getfixturevalue(broker_name)
    topic = _topic(broker)
    source = _source(broker, topic)
    checkpoint = str(tmp_path / "ckpt")
    # batch id → its (partition, offset) rows; a replayed batch replaces its rows, as an idempotent sink does.
    batches: dict[int, list[tuple[int, int]]] = {}

    def collect(df: Any, batch_id: int) -> None:
        batches[batch_id] = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]

    def start(**trigger: Any) -> Any:
        stream = spark.readStream.format("cdc").options(**source).load()
        writer = stream.writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
        return writer.trigger(**trigger).start()

    writer = Writer(broker.bootstrap, topic)
    query = None
    try:
        writer.start()
        writer.wait_for(100)
        query = start(processingTime="500 milliseconds")
        deadline = time.monotonic() + 90
        while sum(1 for rows in list(batches.values()) if rows) < 3 and time.monotonic() < deadline and query.isActive:
            time.sleep(0.2)
        assert query.exception() is None, query.exception()
        during = sum(1 for rows in list(batches.values()) if rows)
        assert during >= 3, f"only {during} micro-batches with records were committed in 90 s while the writer wrote"
    finally:
        final = writer.stop()
        if query is not None:
            query.stop()
    # The rest, up to the end, on the same checkpoint.
    rest = start(availableNow=True)
    assert rest.awaitTermination(180), "the Trigger.AvailableNow query did not finish"
    assert rest.exception() is None, rest.exception()
    read = sorted(row for rows in batches.values() for row in rows)
    expected = [(tp.partition, o) for tp in sorted(final) for o in range(final[tp])]
    assert len(read) == len(expected) and len(set(read)) == len(read), "a record was read twice or lost"
    assert read == expected

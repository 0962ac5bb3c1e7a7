"""`spark.readStream.format("cdc")`: the topic log as a partition-parallel Spark stream.

One Spark input partition per topic partition with new records per micro-batch, so
N topic partitions run N tasks. Offsets live in Spark's checkpoint only: the log is
read with assign/seek and no consumer group, like Spark's own Kafka source.

With `watermark.topic` (a topic of watermark records, cdc.api.WATERMARK_HEADER: Debezium's
heartbeats), that topic's end is planned with the data topics, read before theirs, and never
read as rows: every record written before a watermark is in the log before it, so a batch whose
end covers a watermark covers all that precedes it, and once the batch commits the target holds
it. `cdc status` reads that from the checkpoint. The watermark does not move in a batch whose
data ends are not the log's (maxEventsPerTrigger cut them, or the end-offset probe did not
confirm one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from cdc.log import TopicLog, TopicPartition, decode_headers
from cdc.log.embedded_arrow import RecordsDeletedError
from cdc_spark.source import offsets as off
from cdc_spark.source.options import SourceOptions

logger = logging.getLogger(__name__)
SCHEMA = "topic string, partition int, offset bigint, key binary, value binary, timestamp_ms bigint"
ARROW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("timestamp_ms", pa.int64()),
    ]
)
HEADERS_SCHEMA = "headers array<struct<key:string,value:binary>>"
HEADERS_ARROW = pa.field("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
_BATCH = 10_000
_PROBE_MAX_RECORDS = 100_000  # an end-offset probe reads at most this many records
_PROBE_POLL = 0.05  # seconds: the probe's polls, short so that it stops as soon as all have answered


@dataclass(frozen=True)
class TopicPartitionRange(InputPartition):
    """Records [start, end) of one topic partition: the unit of one Spark task."""

    topic: str
    partition: int
    start: int
    end: int
    options: SourceOptions


class CdcDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "cdc"

    def schema(self) -> str:
        options = SourceOptions.parse(self.options)
        schema = SCHEMA
        if options.decode != "none":
            from cdc_spark.decode.events import DECODED_SCHEMA

            schema = DECODED_SCHEMA
        return f"{schema}, {HEADERS_SCHEMA}" if options.include_headers else schema

    def streamReader(self, schema: Any) -> CdcStreamReader:
        return CdcStreamReader(SourceOptions.parse(self.options))


class CdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._log: TopicLog | None = None
        self._target: off.Offsets | None = None  # Trigger.AvailableNow: never read past this

    @property
    def log(self) -> TopicLog:
        if self._log is None:
            self._log = self.options.open_log()
        return self._log

    def _partitions(self) -> list[TopicPartition]:
        """Partitions of the matching topics, re-listed each trigger so new tables' topics join."""
        return [
            TopicPartition(name, p)
            for name, d in sorted(self.log.list_topics().items())
            if not d.internal and self.options.matches(name)
            for p in range(d.partitions)
        ]

    def _watermark_partitions(self) -> list[TopicPartition]:
        topic = self.options.watermark_topic
        if topic is None:
            return []
        desc = self.log.list_topics().get(topic)
        return [TopicPartition(topic, p) for p in range(desc.partitions)] if desc is not None else []

    def _planned_ends(self, floor: off.Offsets | None = None) -> off.Offsets:
        """The data partitions' ends and, read before them, the watermark topic's (held at `floor`
        unless the probe confirmed every data end it was asked for; one not in `floor` yet then
        waits for the next trigger)."""
        marks = self._watermark_partitions()
        mark_ends = self.log.end_offsets(marks) if marks else {}  # first: what precedes them is in the log
        unanswered: set[TopicPartition] = set()
        ends = self._end_offsets(self._partitions(), floor, unanswered)
        if unanswered:
            held = floor or {}
            mark_ends = {tp: held[tp] for tp in mark_ends if tp in held}
        return {**ends, **mark_ends}

    def _end_offsets(
        self, tps: list[TopicPartition], floor: off.Offsets | None = None, unanswered: set[TopicPartition] | None = None
    ) -> off.Offsets:
        """The log's end offsets; with probeEndOffsets=true, corrected by one bounded read.

        Apache Kafka's high watermark (ListOffsets latest) is exact: leave the probe off there.
        Tansu 0.6 reports the base offset of the last record batch + 1, so the rest of that
        batch is missing, and Trigger.AvailableNow would stop short of the real end. The probe
        (`probe_end_offsets`) corrects that known error; `floor` is the query's position (a
        checkpointed end, which the log held when it was planned).
        """
        ends = self.log.end_offsets(tps)
        if not self.options.probe_end_offsets or not tps:
            return ends
        return probe_end_offsets(self.log, ends, floor or {}, self.options.idle_timeout, unanswered=unanswered)

    def initialOffset(self) -> dict:
        if self.options.starting == "latest":
            return off.to_json(self._planned_ends())
        return off.to_json(self.log.beginning_offsets(self._partitions() + self._watermark_partitions()))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_events is not None:
            return ReadMaxRows(self.options.max_events)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._planned_ends()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = off.from_json(start)
        end = dict(self._target) if self._target is not None else self._planned_ends(begin)
        new = [tp for tp in end if tp not in begin]
        if new:
            begin.update(self.log.beginning_offsets(new))
        mark = self.options.watermark_topic
        for tp in [tp for tp in end if tp.topic == mark and end[tp] < begin[tp]]:
            begin[tp] = end[tp]  # a watermark topic created again: positions, not data; nothing is lost
        for tp in sorted(tp for tp, o in end.items() if o < begin.get(tp, o)):
            rewound = off.LogRewoundError(tp, begin[tp], end[tp])
            if self.options.fail_on_data_loss:
                raise rewound
            # As Spark's Kafka source: report, then read on from the log's end.
            logger.warning("%s (failOnDataLoss=false: reading on from offset %d)", rewound, end[tp])
        # Partitions that vanished (topic deleted) keep their last position.
        end = {**{tp: o for tp, o in begin.items() if tp not in end}, **end}
        if isinstance(limit, ReadMaxRows):
            data = {tp: o for tp, o in end.items() if tp.topic != mark}
            capped = off.cap(begin, data, limit.max_rows)
            marks = {tp: o for tp, o in end.items() if tp.topic == mark}
            if capped != data:  # the batch stops short of the log's end: the watermark stays
                marks = {tp: begin.get(tp, o) for tp, o in marks.items()}
            end = {**capped, **marks}
        return off.to_json(end)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin = off.from_json(start)
        mark = self.options.watermark_topic
        return [
            TopicPartitionRange(tp.topic, tp.partition, begin.get(tp, 0), stop, self.options)
            for tp, stop in sorted(off.from_json(end).items())
            if stop > begin.get(tp, 0) and tp.topic != mark
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TopicPartitionRange)
        opts = partition.options
        if opts.decode == "none":
            return read_range(partition)
        # Decoding here, in the task that read the records, spares Spark a JVM↔Python round
        # trip of every raw value (the most expensive step of a batch otherwise).
        from cdc_spark.decode import JsonDeserializer
        from cdc_spark.decode.events import decode_batches
        from cdc_spark.decode.unavailable import Placeholder

        placeholder = Placeholder.parse(opts.unavailable_value_placeholder)
        if opts.decode == "debezium-avro":
            from cdc_spark.decode.avro import decode_avro_batches, schema_lookup

            schemas = schema_lookup(opts.transport, opts.state_dir, dict(opts.registry))
            return decode_avro_batches(read_range(partition), schemas, opts.latest_per_key, placeholder)
        des = JsonDeserializer(opts.schemas_enable)
        return decode_batches(read_range(partition), des, combine=opts.latest_per_key, placeholder=placeholder)

    def commit(self, end: dict) -> None:
        """Nothing to do: the checkpoint is the only record of progress."""

    def stop(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def probe_end_offsets(
    log: TopicLog,
    reported: off.Offsets,
    floor: off.Offsets,
    within: float,
    max_records: int = _PROBE_MAX_RECORDS,
    unanswered: set[TopicPartition] | None = None,
) -> off.Offsets:
    """End offsets past a high watermark that stops inside the last record batch (Tansu 0.6).

    One pass, never chasing writes that arrive meanwhile: each partition is read from the
    record before its known end (the reported end, or `floor` if that is further), so that
    its first fetch answers with at least that record and the whole batch holding it (a
    broker returns batches whole). The read stops once every partition has answered, after
    `max_records` records, or at the deadline `within` seconds away, whichever comes first.
    An end moves only past records that were read, so it never lies beyond records that
    exist. A partition that did not answer in time keeps max(reported, floor): the floor is
    an end the log held, and reading on would not confirm a rewind faster than the next
    trigger does. A partition whose record before the end was deleted (retention) or is a
    transaction marker only answers with later records, or not before the deadline. Those that
    did not answer are added to `unanswered` when given.
    """
    ends = dict(reported)
    starts = {tp: max(end, floor.get(tp, 0)) - 1 for tp, end in reported.items()}
    pending = {tp for tp, start in starts.items() if start >= 0}  # an empty partition has no batch to finish
    if not pending:
        return ends
    deadline = time.monotonic() + within
    reader = log.reader()
    read = 0
    try:
        reader.assign({tp: starts[tp] for tp in pending})
        full = False
        # A poll that came back full may have left the rest of a batch in the client's queue.
        while (pending or full) and read < max_records:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            want = min(_BATCH, max_records - read)
            # Short polls: librdkafka's consume() waits for the full count or the timeout.
            records = reader.poll(want, min(left, _PROBE_POLL))
            read += len(records)
            full = len(records) == want
            for r in records:
                tp = TopicPartition(r.topic, r.partition)
                ends[tp] = max(ends[tp], r.offset + 1)
                pending.discard(tp)
    finally:
        reader.close()
    for tp in pending:
        ends[tp] = max(ends[tp], floor.get(tp, 0))
    if unanswered is not None:
        unanswered.update(pending)
    if pending:
        logger.info(
            "end-offset probe: no answer within %.1fs from %s; their ends stay as reported (or the query's position)",
            within,
            ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(pending)),
        )
    return ends


def read_range(r: TopicPartitionRange) -> Iterator[pa.RecordBatch]:
    """Yield the range as Arrow batches (far cheaper than tuples across the Python worker)."""
    log = r.options.open_log()
    r = _available(r, log)
    if log.arrow_ranges:
        return _read_embedded(r, log)
    return _read_log(r, log)


def _available(r: TopicPartitionRange, log: TopicLog) -> TopicPartitionRange:
    """The range, checked against the log's start right before it is read.

    Retention may delete records between planning and reading; a Kafka consumer would then
    silently jump to the earliest offset (auto.offset.reset). As Spark's Kafka source, stop
    (failOnDataLoss=true) or skip the lost records with a warning.
    """
    tp = TopicPartition(r.topic, r.partition)
    try:
        earliest = log.beginning_offsets([tp])[tp]
    except Exception:
        log.close()
        raise
    if earliest <= r.start:
        return r
    error = off.DataLossError(tp, r.start, min(earliest, r.end))
    if r.options.fail_on_data_loss:
        log.close()
        raise error
    logger.warning("%s (failOnDataLoss=false: reading on from offset %d)", error, min(earliest, r.end))
    return replace(r, start=min(earliest, r.end))


def _read_embedded(r: TopicPartitionRange, log: TopicLog) -> Iterator[pa.RecordBatch]:
    """The log's own Arrow range reader (`TopicLog.read_arrow`), with this source's columns.

    Retention that reaches the range while it is read (RecordsDeletedError) is data loss, as
    before the read: stop (failOnDataLoss=true) or skip to what is left with a warning.
    """
    with_headers = r.options.include_headers
    schema = ARROW_SCHEMA.append(HEADERS_ARROW) if with_headers else ARROW_SCHEMA
    # The reader opens a connection per batch; the log's own one closes first, so that ADBC's
    # copy of SQLite may read the file (cdc.log.sqlite_copies).
    log.close()
    start = r.start
    while start < r.end:
        try:
            for batch in log.read_arrow(r.topic, r.partition, start, r.end, headers=with_headers):
                yield _with_columns(r, batch, schema, with_headers)
                start = batch.column("offset")[batch.num_rows - 1].as_py() + 1
            return
        except RecordsDeletedError as e:
            tp = TopicPartition(r.topic, r.partition)
            error = off.DataLossError(tp, e.position, min(e.start, r.end))
            if r.options.fail_on_data_loss:
                raise error from None
            logger.warning("%s (failOnDataLoss=false: reading on from offset %d)", error, min(e.start, r.end))
            start = min(e.start, r.end)


def _with_columns(r: TopicPartitionRange, batch: pa.RecordBatch, schema: pa.Schema, headers: bool) -> pa.RecordBatch:
    n = batch.num_rows
    arrays = [
        pa.array([r.topic] * n, pa.string()),
        pa.array([r.partition] * n, pa.int32()),
        batch.column("offset"),
        batch.column("key"),
        batch.column("value"),
        batch.column("timestamp_ms"),
    ]
    if headers:
        raw_headers = batch.column("headers").to_pylist()
        arrays.append(_headers_array([decode_headers(h) for h in raw_headers]))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _read_log(r: TopicPartitionRange, log: TopicLog) -> Iterator[pa.RecordBatch]:
    reader = log.reader()
    tp = TopicPartition(r.topic, r.partition)
    with_headers = r.options.include_headers
    width = 7 if with_headers else 6
    try:
        reader.assign({tp: r.start})
        cols: list[list[Any]] = [[] for _ in range(width)]
        timeout = r.options.poll_timeout
        position = r.start
        while position < r.end:
            # Ask for no more than the range still holds: librdkafka's consume() waits for the
            # full count (or the timeout) before returning.
            records = reader.poll(min(_BATCH, r.end - position), timeout)
            if not records:
                # Below the end mark yet nothing comes: transaction markers or compaction
                # left a gap at the end of the range. (A slow first fetch got poll_timeout.)
                if position < r.end:
                    logger.info(
                        "%s-%d: nothing after offset %d below the end mark %d within %.1fs; "
                        "taking it as a gap (transaction marker or compaction)",
                        r.topic,
                        r.partition,
                        position,
                        r.end,
                        timeout,
                    )
                break
            timeout = r.options.idle_timeout
            for rec in records:
                if rec.offset >= r.end:
                    position = r.end
                    break
                position = rec.offset + 1
                cols[0].append(rec.topic)
                cols[1].append(rec.partition)
                cols[2].append(rec.offset)
                cols[3].append(rec.key)
                cols[4].append(rec.value)
                cols[5].append(rec.timestamp)
                if with_headers:
                    cols[6].append(rec.headers)
            if len(cols[0]) >= _BATCH:
                yield _raw_batch(cols)
                cols = [[] for _ in range(width)]
        if cols[0]:
            yield _raw_batch(cols)
    finally:
        reader.close()
        log.close()


def _headers_array(headers: list[tuple[tuple[str, bytes | None], ...]]) -> pa.Array:
    return pa.array([[{"key": k, "value": v} for k, v in h] for h in headers], HEADERS_ARROW.type)


def _raw_batch(cols: list[list[Any]]) -> pa.RecordBatch:
    arrays = [pa.array(c, f.type) for c, f in zip(cols[:6], ARROW_SCHEMA, strict=True)]
    if len(cols) > 6:
        arrays.append(_headers_array(cols[6]))
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA.append(HEADERS_ARROW))
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)

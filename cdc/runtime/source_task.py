"""Runs a SourceTask: poll → SMTs → converters → log, and stores offsets only for durable records.

Two commit disciplines:
- at-least-once (Kafka): records are acknowledged asynchronously; every
  `offset.flush.interval.ms` the offsets of acknowledged records are stored. A crash
  replays at most the records after the last stored offset.
- transactional (embedded log, or Kafka exactly-once): each poll batch and its offsets
  commit in one transaction (with the batches polled while the previous transaction was being
  written), so a crash neither loses nor duplicates a record.

A watermark record (cdc.api.WATERMARK_HEADER: a heartbeat) is written only after everything the
task sent before it: at-least-once, the producer is flushed first; transactional, it opens a new
transaction. A reader that sees it in the log then sees all that came before, in every topic.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from itertools import pairwise
from typing import Any

from cdc.api.errors import RetriableException
from cdc.api.history import HistoryLog
from cdc.api.metrics import TaskMetrics
from cdc.api.records import WATERMARK_HEADER, SourceRecord
from cdc.api.signals import SignalLog
from cdc.api.source import RecordMetadata, SourceTask
from cdc.api.storage import Converter, HeaderConverter, OffsetStorageReader
from cdc.log.base import LogProducer, LogRecord, TopicLog, TopicSpec
from cdc.runtime.errors import SKIP, RetryWithToleranceOperator, Stage, ToleranceExceededError
from cdc.runtime.history_log import TopicHistoryLog
from cdc.runtime.signal_log import TopicSignalLog
from cdc.runtime.source_batches import SubmittedBatch, SubmittedBatches, latest_offsets
from cdc.runtime.submitted_records import SubmittedRecord, SubmittedRecords
from cdc.runtime.task import ConnectorTaskId, TaskStatusListener, WorkerTask
from cdc.runtime.task_meters import OffsetCommitMeter
from cdc.storage.offsets import OffsetBackingStore, OffsetStorageWriter
from cdc.transforms.chain import TransformationChain

log = logging.getLogger(__name__)

_Converted = tuple[SourceRecord, Any, Any, Any]
"""(transformed record, key bytes, value bytes, headers) of one record on its way to the log."""


def _to_bytes(
    converter: Converter, topics: list[str], schemas: list[Any], values: list[Any], records: list[SourceRecord]
) -> list[Any]:
    """The converter's bytes for each record: its `from_connect_batch` when it has one."""
    batch = getattr(converter, "from_connect_batch", None)
    if batch is not None:
        return batch(topics, schemas, values)  # type: ignore[no-any-return]
    convert = converter.from_connect_data
    return [convert(t, s, v, r.headers) for t, s, v, r in zip(topics, schemas, values, records, strict=True)]


def watermark_segments(records: list[SourceRecord]) -> list[tuple[bool, list[SourceRecord]]]:
    """The batch cut before each watermark record: (starts with a watermark, records), in order.
    One segment (the batch itself) when it holds none, the common case."""
    cuts = [i for i, r in enumerate(records) if len(r.headers) and r.headers.last_with_name(WATERMARK_HEADER)]
    if not cuts:
        return [(False, records)]
    bounds = [0, *cuts, len(records)] if cuts[0] else [*cuts, len(records)]
    return [(start in cuts, records[start:end]) for start, end in pairwise(bounds) if end > start]


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


class SourceTaskContextImpl:
    def __init__(
        self,
        configs: dict[str, str],
        reader: OffsetStorageReader,
        metrics: TaskMetrics | None = None,
        history: Callable[[str], HistoryLog | None] | None = None,
        signals: Callable[[str, str], SignalLog | None] | None = None,
    ) -> None:
        self._configs = configs
        self._reader = reader
        self._history = history
        self._signals = signals
        self._metrics = metrics if metrics is not None else TaskMetrics()

    def configs(self) -> dict[str, str]:
        return dict(self._configs)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader

    def transaction_context(self) -> None:
        return None

    def history_log(self, topic: str) -> HistoryLog | None:
        return self._history(topic) if self._history is not None else None

    def metrics(self) -> TaskMetrics:
        return self._metrics

    def signal_log(self, topic: str, group_id: str) -> SignalLog | None:
        """A signal topic of the worker's log (Debezium's kafka signal channel; cdc/runtime/signal_log.py)."""
        return self._signals(topic, group_id) if self._signals is not None else None


class TopicCreator:
    """Creates a connector's topics before first use (`topic.creation.default.*`)."""

    def __init__(self, log_: TopicLog, partitions: int | None, replication_factor: int) -> None:
        self._log = log_
        self._partitions = partitions
        self._replication = replication_factor
        self._known: set[str] = set()

    def ensure(self, topic: str) -> None:
        if topic in self._known:
            return
        if self._partitions is not None:
            partitions = self._partitions if self._partitions > 0 else 1
            self._log.ensure_topic(TopicSpec(topic, partitions, self._replication))
        self._known.add(topic)

    def history_log(self, topic: str) -> HistoryLog | None:
        """A connector's history topic in the worker's embedded log (one partition, kept forever).

        None on Kafka: there, as with Debezium, the connector's own history settings name the
        topic and its cluster, and the worker creates no topic the user did not ask for.
        """
        if not self._log.keeps_history_topics:
            return None
        return TopicHistoryLog(self._log, topic, self._replication)

    def signal_log(self, topic: str, group_id: str) -> SignalLog:
        return TopicSignalLog(self._log, topic, group_id, self._replication)


class _Transaction:
    """Poll batches on their way into the log with their offsets, as one log transaction
    (WorkerSourceTask._send_transaction). Batches polled while the previous transaction is still
    being written join the next one (`add`); `entries` are the offsets, taken when it is handed over."""

    __slots__ = ("converted", "entries", "failed", "future", "metadata", "records", "size")

    def __init__(self) -> None:
        self.records: list[SourceRecord] = []
        self.converted: list[_Converted | None] = []
        self.entries: dict[bytes, bytes | None] = {}
        self.failed: list[Exception] = []
        self.metadata: list[RecordMetadata | None] = []
        self.future: Future[None] | None = None
        self.size = 0  # bytes of keys and values

    def add(self, records: list[SourceRecord], converted: list[_Converted | None]) -> None:
        self.records.extend(records)
        self.converted.extend(converted)
        self.metadata.extend([None] * len(records))
        self.size += sum(len(c[1] or b"") + len(c[2] or b"") for c in converted if c is not None)


class WorkerSourceTask(WorkerTask):
    # Transactional tasks write each transaction on a writer thread while the next is polled.
    PIPELINE = True
    # While a transaction is being written, the batches polled meanwhile join the next one, up to
    # these bounds (then the task waits for the writer). Kafka's producer batches the same way
    # (linger while a request is in flight, up to batch.size); there is no Kafka Connect setting.
    GROUP_MAX_RECORDS = 20_000
    GROUP_MAX_BYTES = 16 * 1024 * 1024
    # How long a polled batch waits for a busy writer before it joins the next transaction instead:
    # a commit that ends by then (most do, in well under a millisecond) hands the batch over at once,
    # so the last batch of a burst is not held until the next poll returns (up to poll.interval.ms
    # or the source's heartbeat; measured: p90 1.0 s instead of 9 ms on bursts of 3 rows).
    GROUP_WAIT_S = 0.005

    def __init__(
        self,
        id: ConnectorTaskId,
        task: SourceTask,
        task_config: dict[str, str],
        listener: TaskStatusListener,
        *,
        key_converter: Converter,
        value_converter: Converter,
        header_converter: HeaderConverter,
        chain: TransformationChain,
        producer: LogProducer,
        offset_store: OffsetBackingStore,
        offset_reader: OffsetStorageReader,
        errors: RetryWithToleranceOperator,
        topic_creator: TopicCreator,
        transactional: bool,
        flush_interval_ms: int = 60000,
        flush_timeout_ms: int = 5000,
    ) -> None:
        super().__init__(id, listener)
        self.task = task
        self.task_config = task_config
        self.key_converter = key_converter
        self.value_converter = value_converter
        self.header_converter = header_converter
        self.chain = chain
        self.producer = producer
        self.offset_store = offset_store
        self.offset_reader = offset_reader
        self.writer = OffsetStorageWriter(offset_store, id.connector)
        self.errors = errors
        self.topic_creator = topic_creator
        self.transactional = transactional
        self.flush_interval = flush_interval_ms / 1000
        self.flush_timeout = flush_timeout_ms / 1000
        # SourceTask.commit_record is a no-op unless the task overrides it: then the log is asked
        # for no per-record offset, and acknowledgements are counted per poll batch.
        self._wants_record_metadata = type(task).commit_record is not SourceTask.commit_record
        self.submitted: SubmittedRecords | SubmittedBatches = (
            SubmittedRecords() if self._wants_record_metadata else SubmittedBatches()
        )
        self._send_error: Exception | None = None
        self._last_flush = time.monotonic()
        self.records_sent = 0
        self._in_flight: _Transaction | None = None
        self._next: _Transaction | None = None  # polled, converted, waiting for the writer
        self.transactions = 0  # log transactions written (each with its offsets)
        self.commits = OffsetCommitMeter()
        self._txn_writer: ThreadPoolExecutor | None = None
        if transactional and self.PIPELINE:
            self._txn_writer = ThreadPoolExecutor(1, thread_name_prefix=f"{id.connector}-{id.task}-writer")

    # -- lifecycle ---------------------------------------------------------------------------
    def execute(self) -> None:
        self.task.initialize(
            SourceTaskContextImpl(
                self.task_config,
                self.offset_reader,
                self.metrics,
                history=self.topic_creator.history_log,
                signals=self.topic_creator.signal_log,
            )
        )
        self.task.start(dict(self.task_config))
        self.report_started()
        try:
            while not self.stopping:
                if self.paused:
                    self._drain()
                    self._maybe_commit()
                    self.publish_metrics()
                    time.sleep(0.05)
                    continue
                try:
                    records = self.task.poll()
                except RetriableException as e:
                    log.warning("Task %s: poll() failed with a retriable error, retrying: %s", self.id, e)
                    time.sleep(0.1)
                    continue
                if records:
                    for watermark, segment in watermark_segments(records):
                        if self.transactional:
                            self._send_transaction(segment, watermark)
                        elif watermark and not self._await_sent():
                            break  # stopping: the rest is not sent, and its offsets are not stored
                        else:
                            self._send(segment)
                else:
                    self._drain()  # an idle source: what it polled is committed now
                self._check_send_error()
                self._maybe_commit()
                self.publish_metrics()
        finally:
            self._shutdown()

    def stop(self) -> None:
        super().stop()
        # Kafka Connect calls SourceTask.stop() from another thread so a blocking poll returns.
        try:
            self.task.stop()
        except Exception as e:
            log.warning("Task %s: stop() raised %s", self.id, e)

    def _shutdown(self) -> None:
        try:
            if self._txn_writer is not None:
                try:
                    self._drain()
                except Exception as e:
                    log.error("Task %s: the last batches were not stored (their offsets neither): %s", self.id, e)
                finally:
                    self._txn_writer.shutdown(wait=True)
            if not self.transactional:
                remaining = self.producer.flush(self.flush_timeout)
                if remaining:
                    log.warning(
                        "Task %s: %d records were not acknowledged within offset.flush.timeout.ms; "
                        "their offsets are not stored and they will be re-sent after restart",
                        self.id,
                        remaining,
                    )
                self._commit_offsets()
        finally:
            self.producer.close()

    # -- conversion --------------------------------------------------------------------------
    def _convert_batch(self, records: list[SourceRecord]) -> list[_Converted | None]:
        """Per polled record (same order): (transformed record, key, value, headers) in bytes, or
        None when an SMT dropped it or a tolerated error skipped it.

        The SMTs run once per record. The converters then see the whole batch at once
        (`from_connect_batch`, e.g. JsonConverter's); if anything in it fails, the batch is
        converted again record by record under errors.tolerance, so the failing record is
        reported, skipped or fails the task exactly as when every record was converted alone.
        Converters are pure functions of their input, so converting again is safe.
        """
        transformed = self._transform_all(records)
        live = [r for r in transformed if r is not None]
        try:
            fast = iter(self._convert_all(live))
        except Exception:
            return [None if r is None else self._convert_one(r) for r in transformed]
        return [None if r is None else next(fast) for r in transformed]

    def _transform_all(self, records: list[SourceRecord]) -> list[SourceRecord | None]:
        if not self.chain.stages:
            return list(records)
        out: list[SourceRecord | None] = []
        for record in records:
            try:
                t = self.errors.execute(
                    Stage.TRANSFORMATION, self.chain, lambda record=record: self.chain.apply(record), record
                )
            except ToleranceExceededError:
                # An earlier record's conversion failure comes first, as when each record was
                # transformed and converted in turn.
                for r in out:
                    if r is not None:
                        self._convert_one(r)
                raise
            out.append(None if t is SKIP or t is None else t)
        return out

    def _convert_all(self, live: list[SourceRecord]) -> list[_Converted]:
        """The batch through the converters without per-record error handling (any error propagates)."""
        topics = [r.topic for r in live]
        keys = _to_bytes(self.key_converter, topics, [r.key_schema for r in live], [r.key for r in live], live)
        values = _to_bytes(self.value_converter, topics, [r.value_schema for r in live], [r.value for r in live], live)
        headers = [self._headers(r) if r.headers else () for r in live]
        return list(zip(live, keys, values, headers, strict=True))

    def _convert_one(self, r: SourceRecord) -> _Converted | None:
        """One transformed record through the converters under errors.tolerance (None: skipped)."""
        key = self.errors.execute(
            Stage.KEY_CONVERTER,
            self.key_converter,
            lambda: self.key_converter.from_connect_data(r.topic, r.key_schema, r.key, r.headers),
            r,
        )
        if key is SKIP:
            return None
        value = self.errors.execute(
            Stage.VALUE_CONVERTER,
            self.value_converter,
            lambda: self.value_converter.from_connect_data(r.topic, r.value_schema, r.value, r.headers),
            r,
        )
        if value is SKIP:
            return None
        headers = self.errors.execute(Stage.HEADER_CONVERTER, self.header_converter, lambda: self._headers(r), r)
        if headers is SKIP:
            return None
        return r, key, value, headers

    def _headers(self, r: SourceRecord) -> list[tuple[str, bytes | None]]:
        return [
            (h.key, self.header_converter.from_connect_header(r.topic, h.key, h.schema, h.value)) for h in r.headers
        ]

    def _ensure_topics(self, converted: list[_Converted | None]) -> None:
        last: str | None = None
        for c in converted:
            if c is not None and c[0].topic is not last:
                last = c[0].topic
                self.topic_creator.ensure(last)
                self.track_topic(last)

    # -- at-least-once -----------------------------------------------------------------------
    def _send(self, records: list[SourceRecord]) -> None:
        converted = self._convert_batch(records)
        self._ensure_topics(converted)
        if isinstance(self.submitted, SubmittedBatches):
            live = [(r.topic, v, k, h, r.timestamp, r.kafka_partition) for r, k, v, h in filter(None, converted)]
            batch = self.submitted.submit(records, len(live))
            self.producer.send_many(live, partial(self._on_batch_error, batch), partial(self.submitted.ack, batch))
            self.records_sent += len(live)
            self.producer.poll(0)
            return
        send = self.producer.send
        for record, c in zip(records, converted, strict=True):
            sub = self.submitted.submit(record)
            if c is None:
                self.submitted.ack(sub)
                self._commit_record(record, None)
                continue
            r, key, value, headers = c
            send(
                r.topic,
                value,
                key=key,
                headers=headers,
                timestamp=r.timestamp,
                partition=r.kafka_partition,
                on_delivery=self._on_delivery(sub),
            )
            self.records_sent += 1
        self.producer.poll(0)

    def _await_sent(self) -> bool:
        """Before a watermark: every record sent so far is acknowledged (in the log). False when the
        task is stopping meanwhile; a failed record fails the task."""
        while self.producer.flush(self.flush_timeout) > 0:
            self._check_send_error()
            if self.stopping:
                return False
            log.warning("Task %s: the log has not acknowledged every record yet; still waiting", self.id)
        self._check_send_error()
        return True

    def _on_batch_error(self, batch: SubmittedBatch, error: Exception) -> None:
        if self.errors.tolerate_all:
            log.error("Task %s: record dropped by the producer (errors.tolerance=all): %s", self.id, error)
            self.submitted.ack(batch)  # type: ignore[arg-type]
            return
        self._send_error = error

    def _on_delivery(self, sub: SubmittedRecord) -> Any:
        def callback(stored: LogRecord | None, error: Exception | None) -> None:
            if error is not None:
                if self.errors.tolerate_all:
                    log.error("Task %s: record dropped by the producer (errors.tolerance=all): %s", self.id, error)
                    self.submitted.ack(sub)
                    return
                self._send_error = error
                return
            self.submitted.ack(sub)
            assert stored is not None
            self._commit_record(
                sub.record, RecordMetadata(stored.topic, stored.partition, stored.offset, stored.timestamp)
            )

        return callback

    def _check_send_error(self) -> None:
        if self._send_error is not None:
            raise RuntimeError(
                f"Task {self.id}: a record could not be written to the log and errors.tolerance=none: "
                f"{self._send_error}. Offsets after it are not stored; fix the transport and restart the task"
            )

    def _maybe_commit(self) -> None:
        if self.transactional:
            return
        self.producer.poll(0)
        if time.monotonic() - self._last_flush >= self.flush_interval:
            self._commit_offsets()

    def _commit_offsets(self) -> None:
        """Kafka's WorkerSourceTask.commitOffsets, timed for offset-commit-*: a flush with nothing new
        to store counts as a successful commit, as in Kafka."""
        self._last_flush = time.monotonic()
        started = time.perf_counter()
        for partition, offset in self.submitted.committable():
            self.writer.offset(partition, offset)
        if not self.writer.has_pending():
            self.commits.record(_ms_since(started), True)
            return
        try:
            self.writer.flush()
        except Exception as e:
            self.commits.record(_ms_since(started), False)
            log.error("Task %s: storing offsets failed, will retry at the next interval: %s", self.id, e)
            return
        self.commits.record(_ms_since(started), True)
        self._task_commit()

    # -- transactional -----------------------------------------------------------------------
    def _send_transaction(self, records: list[SourceRecord], watermark: bool = False) -> None:
        """Convert the batch here, then write it (records and offsets, one transaction) on the writer.

        While the writer thread commits transaction N (SQLite and fsync, or Kafka's commit,
        mostly outside the GIL) this thread polls and converts the next batches. A batch waits up
        to GROUP_WAIT_S for N; if N is still being written, the batch joins transaction N+1 and
        the task polls on, until N is done or N+1 reaches GROUP_MAX_RECORDS / GROUP_MAX_BYTES, so a
        source that polls many small batches (single-row transactions arriving faster than one
        commit each can be written) pays one commit per group, not per batch. At most one
        transaction is in flight, and N is finished (offsets applied, commit_record, commit) on
        this thread before N+1 is handed over, so order and the task callbacks stay as they
        were; a failed write fails the task before anything after it is written, and no offset
        is stored with a transaction before the records it covers.

        A batch that starts with a watermark (`watermark`) starts a new transaction: the ones
        before it commit first, so the watermark is never visible before what precedes it (a
        Kafka transaction's markers reach its partitions one by one; the next transaction of the
        same producer waits for them).
        """
        if watermark and self._next is not None:
            self._finish_in_flight()
            self._hand_over()
        converted = self._convert_batch(records)
        self._ensure_topics(converted)
        for partition, offset in latest_offsets(records).values():
            self.writer.offset(partition, offset)  # taken with the transaction the batch joins
        self.records_sent += sum(1 for c in converted if c is not None)
        txn = self._next
        if txn is None:
            txn = self._next = _Transaction()
        txn.add(records, converted)
        if self._txn_writer is None:
            self._hand_over()
            return
        in_flight = self._in_flight
        if (
            in_flight is not None
            and len(txn.records) < self.GROUP_MAX_RECORDS
            and txn.size < self.GROUP_MAX_BYTES
            and not wait([in_flight.future], self.GROUP_WAIT_S).done  # type: ignore[list-item]
        ):
            return  # the writer is still busy: poll on into the same transaction
        self._finish_in_flight()
        self._hand_over()

    def _hand_over(self) -> None:
        """The waiting transaction, with the offsets of every batch in it, to the writer (or
        written here when there is no writer thread)."""
        txn, self._next = self._next, None
        if txn is None:
            return
        txn.entries = self.writer.take()
        self.transactions += 1
        if self._txn_writer is None:
            self._write_transaction(txn)
            self._finish(txn)
            return
        txn.future = self._txn_writer.submit(self._write_transaction, txn)
        self._in_flight = txn

    def _drain(self) -> None:
        """Everything polled is written and finished when this returns (idle, paused, stopping)."""
        self._finish_in_flight()
        if self._next is not None:
            self._hand_over()
            self._finish_in_flight()

    def _write_transaction(self, txn: _Transaction) -> None:
        """On the writer thread: the batches and their offsets in one log transaction, timed as an
        offset commit (Kafka's ExactlyOnceWorkerSourceTask.commitTransaction, whose time includes
        waiting for the transaction's records too)."""
        started = time.perf_counter()
        self.producer.begin_transaction()
        try:
            if self._wants_record_metadata:
                self._send_each(txn.converted, txn.metadata, txn.failed)
            else:
                self.producer.send_many(
                    [(r.topic, v, k, h, r.timestamp, r.kafka_partition) for r, k, v, h in filter(None, txn.converted)],
                    txn.failed.append,
                )
            self.offset_store.stage(self.producer, txn.entries)
            self.producer.commit_transaction()
        except BaseException:
            self.commits.record(_ms_since(started), False)
            self.producer.abort_transaction()
            raise
        self.commits.record(_ms_since(started), not txn.failed)
        if not txn.failed:
            self.offset_store.applied(txn.entries)  # the store's map follows the log at once (it locks)

    def _finish_in_flight(self) -> None:
        """Wait for the transaction on the writer (raising its error) and finish it on this thread.

        If it failed, the batches polled meanwhile are dropped with their offsets: nothing after a
        record that is not durable may be written, or a restart would resume past the gap."""
        txn, self._in_flight = self._in_flight, None
        if txn is None:
            return
        assert txn.future is not None
        try:
            txn.future.result()
            self._finish(txn)
        except BaseException:
            self._next = None
            self.writer.take()
            raise

    def _finish(self, txn: _Transaction) -> None:
        if txn.failed:
            raise RuntimeError(f"Task {self.id}: transaction committed with failed records: {txn.failed[0]}")
        if self._wants_record_metadata:
            for record, meta in zip(txn.records, txn.metadata, strict=True):
                self._commit_record(record, meta)
        self._task_commit()

    def _send_each(
        self, converted: list[_Converted | None], metadata: list[RecordMetadata | None], failed: list[Exception]
    ) -> None:
        """One send per record, each reporting its stored offset (for a task's commit_record)."""
        for slot, c in enumerate(converted):
            if c is None:
                continue
            r, key, value, headers = c

            def on_delivery(stored: LogRecord | None, error: Exception | None, slot: int = slot) -> None:
                if error is not None:
                    failed.append(error)
                elif stored is not None:
                    metadata[slot] = RecordMetadata(stored.topic, stored.partition, stored.offset, stored.timestamp)

            self.producer.send(
                r.topic,
                value,
                key=key,
                headers=headers,
                timestamp=r.timestamp,
                partition=r.kafka_partition,
                on_delivery=on_delivery,
            )

    # -- callbacks into the task -------------------------------------------------------------
    def _commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        try:
            self.task.commit_record(record, metadata)
        except Exception as e:
            log.warning("Task %s: commit_record() raised %s", self.id, e)

    def _task_commit(self) -> None:
        try:
            self.task.commit()
        except Exception as e:
            log.warning("Task %s: commit() raised %s", self.id, e)

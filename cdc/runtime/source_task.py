"""Runs a SourceTask: poll → SMTs → converters → log, and stores offsets only for durable records.

Two commit disciplines:
- at-least-once (Kafka): records are acknowledged asynchronously; every
  `offset.flush.interval.ms` the offsets of acknowledged records are stored. A crash
  replays at most the records after the last stored offset.
- transactional (embedded log, or Kafka exactly-once): each poll batch and its offsets
  commit in one transaction, so a crash neither loses nor duplicates a record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from cdc.api.errors import RetriableException
from cdc.api.history import HistoryLog
from cdc.api.metrics import TaskMetrics
from cdc.api.records import SourceRecord
from cdc.api.signals import SignalLog
from cdc.api.source import RecordMetadata, SourceTask
from cdc.api.storage import Converter, HeaderConverter, OffsetStorageReader
from cdc.log.base import LogProducer, LogRecord, TopicLog, TopicSpec
from cdc.runtime.errors import SKIP, RetryWithToleranceOperator, Stage
from cdc.runtime.history_log import TopicHistoryLog
from cdc.runtime.signal_log import TopicSignalLog
from cdc.runtime.submitted_records import SubmittedRecord, SubmittedRecords
from cdc.runtime.task import ConnectorTaskId, TaskStatusListener, WorkerTask
from cdc.storage.offsets import OffsetBackingStore, OffsetStorageWriter
from cdc.transforms.chain import TransformationChain

log = logging.getLogger(__name__)


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


class WorkerSourceTask(WorkerTask):
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
        self.submitted = SubmittedRecords()
        self._send_error: Exception | None = None
        self._last_flush = time.monotonic()
        self.records_sent = 0

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
                    if self.transactional:
                        self._send_transaction(records)
                    else:
                        self._send(records)
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
    def _convert(self, record: SourceRecord) -> tuple[Any, ...] | None:
        """(topic, key, value, headers) in bytes, or None when a tolerated error skipped it."""
        transformed = self.errors.execute(Stage.TRANSFORMATION, self.chain, lambda: self.chain.apply(record), record)
        if transformed is SKIP or transformed is None:
            return None
        r: SourceRecord = transformed
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

    # -- at-least-once -----------------------------------------------------------------------
    def _send(self, records: list[SourceRecord]) -> None:
        for record in records:
            converted = self._convert(record)
            sub = self.submitted.submit(record)
            if converted is None:
                self.submitted.ack(sub)
                self._commit_record(record, None)
                continue
            r, key, value, headers = converted
            self.topic_creator.ensure(r.topic)
            self.track_topic(r.topic)
            self.producer.send(
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
        self._last_flush = time.monotonic()
        for partition, offset in self.submitted.committable():
            self.writer.offset(partition, offset)
        if not self.writer.has_pending():
            return
        try:
            self.writer.flush()
        except Exception as e:
            log.error("Task %s: storing offsets failed, will retry at the next interval: %s", self.id, e)
            return
        self._task_commit()

    # -- transactional -----------------------------------------------------------------------
    def _send_transaction(self, records: list[SourceRecord]) -> None:
        acked: list[tuple[SourceRecord, RecordMetadata | None]] = []
        latest: dict[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = {}
        failed: list[Exception] = []
        self.producer.begin_transaction()
        try:
            for record in records:
                if record.source_partition is not None:
                    latest[repr(sorted(record.source_partition.items()))] = (
                        record.source_partition,
                        record.source_offset,
                    )
                converted = self._convert(record)
                if converted is None:
                    acked.append((record, None))
                    continue
                r, key, value, headers = converted
                self.topic_creator.ensure(r.topic)
                self.track_topic(r.topic)
                slot = len(acked)
                acked.append((record, None))

                def on_delivery(stored: LogRecord | None, error: Exception | None, slot: int = slot) -> None:
                    if error is not None:
                        failed.append(error)
                    elif stored is not None:
                        acked[slot] = (
                            acked[slot][0],
                            RecordMetadata(stored.topic, stored.partition, stored.offset, stored.timestamp),
                        )

                self.producer.send(
                    r.topic,
                    value,
                    key=key,
                    headers=headers,
                    timestamp=r.timestamp,
                    partition=r.kafka_partition,
                    on_delivery=on_delivery,
                )
                self.records_sent += 1
            for partition, offset in latest.values():
                self.writer.offset(partition, offset)
            entries = self.writer.take()
            self.offset_store.stage(self.producer, entries)
            self.producer.commit_transaction()
        except BaseException:
            self.producer.abort_transaction()
            raise
        if failed:
            raise RuntimeError(f"Task {self.id}: transaction committed with failed records: {failed[0]}")
        self.offset_store.applied(entries)
        for record, metadata in acked:
            self._commit_record(record, metadata)
        self._task_commit()

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

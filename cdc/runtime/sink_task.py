"""Runs a SinkTask: read → converters → SMTs → put → commit what `pre_commit` says is durable."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Mapping

from cdc.api.errors import RetriableException
from cdc.api.header import Headers
from cdc.api.metrics import TaskMetrics
from cdc.api.records import SinkRecord
from cdc.api.sink import SinkTask, TopicPartition
from cdc.api.storage import Converter, HeaderConverter
from cdc.log.base import GroupConsumer, LogProducer, LogRecord, TopicLog
from cdc.log.base import TopicPartition as LogTP
from cdc.runtime.errors import SKIP, RetryWithToleranceOperator, Stage
from cdc.runtime.task import ConnectorTaskId, TaskStatusListener, WorkerTask
from cdc.runtime.task_meters import OffsetCommitMeter
from cdc.transforms.chain import TransformationChain

log = logging.getLogger(__name__)


class SinkTaskContextImpl:
    def __init__(self, configs: dict[str, str], owner: WorkerSinkTask) -> None:
        self._configs = configs
        self._owner = owner

    def configs(self) -> dict[str, str]:
        return dict(self._configs)

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._owner.rewinds.update(offsets)

    def timeout(self, timeout_ms: int) -> None:
        self._owner.retry_backoff = timeout_ms / 1000

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(tp.topic, tp.partition) for tp in self._owner.consumer.assignment()}

    def pause(self, *partitions: TopicPartition) -> None:
        self._owner.consumer.pause([LogTP(*p) for p in partitions])

    def resume(self, *partitions: TopicPartition) -> None:
        self._owner.consumer.resume([LogTP(*p) for p in partitions])

    def request_commit(self) -> None:
        self._owner.commit_requested = True

    def errant_record_reporter(self) -> None:
        return None

    def metrics(self) -> TaskMetrics:
        return self._owner.metrics


class WorkerSinkTask(WorkerTask):
    def __init__(
        self,
        id: ConnectorTaskId,
        task: SinkTask,
        task_config: dict[str, str],
        listener: TaskStatusListener,
        *,
        log_: TopicLog,
        topics: list[str],
        topics_regex: str | None,
        member: tuple[int, int],
        key_converter: Converter,
        value_converter: Converter,
        header_converter: HeaderConverter,
        chain: TransformationChain,
        errors: RetryWithToleranceOperator,
        commit_interval_ms: int = 60000,
        max_poll_records: int = 500,
        consumer_overrides: Mapping[str, str] | None = None,
        dlq_topic: str | None = None,
        dlq_context_headers: bool = False,
    ) -> None:
        super().__init__(id, listener)
        self.log = log_
        self.dlq_topic = dlq_topic or None
        self.dlq_context_headers = dlq_context_headers
        self._dlq_producer: LogProducer | None = None
        self._raw: LogRecord | None = None
        if self.dlq_topic is not None:
            errors.add_reporter(self._report_to_dlq)
        self.task = task
        self.task_config = task_config
        self.key_converter = key_converter
        self.value_converter = value_converter
        self.header_converter = header_converter
        self.chain = chain
        self.errors = errors
        self.commit_interval = commit_interval_ms / 1000
        self.max_poll_records = max_poll_records
        self._started = False  # rebalances before start() need no task callbacks
        self.consumer: GroupConsumer = log_.group_consumer(
            f"connect-{id.connector}",
            topics,
            topics_regex or None,
            on_rebalance=self._on_rebalance,
            member=member,
            **dict(consumer_overrides or {}),
        )
        self.current: dict[TopicPartition, int] = {}
        self.rewinds: dict[TopicPartition, int] = {}
        self.retry_backoff = 1.0
        self.commit_requested = False
        self._last_commit = time.monotonic()
        self.commits = OffsetCommitMeter()
        self.records_put = 0

    def execute(self) -> None:
        self.task.initialize(SinkTaskContextImpl(self.task_config, self))
        self.task.start(dict(self.task_config))
        self._started = True
        initial = [TopicPartition(tp.topic, tp.partition) for tp in self.consumer.assignment()]
        if initial:
            self.task.open(initial)
        self.report_started()
        try:
            while not self.stopping:
                if self.paused:
                    self.publish_metrics()
                    time.sleep(0.05)
                    continue
                self._iteration()
                self.publish_metrics()
        finally:
            try:
                self._commit()
                self.task.close(list(self.current))
            finally:
                self.task.stop()
                self.consumer.close()
                if self._dlq_producer is not None:
                    self._dlq_producer.close()

    def _iteration(self) -> None:
        polled = self.consumer.poll(self.max_poll_records, 0.5)
        batch = [r for r in (self._convert(m) for m in polled) if r is not None]
        if batch:
            self._deliver(batch)
        for m in polled:
            self.current[TopicPartition(m.topic, m.partition)] = m.offset + 1
            self.track_topic(m.topic)
        self._apply_rewinds()
        if self.commit_requested or time.monotonic() - self._last_commit >= self.commit_interval:
            self._commit()

    def _deliver(self, batch: list[SinkRecord]) -> None:
        while True:
            try:
                self.task.put(batch)
                self.records_put += len(batch)
                return
            except RetriableException as e:
                # Redeliver the same batch after the task's timeout, as Kafka Connect does.
                log.warning("Task %s: put() asked for a retry in %.1fs: %s", self.id, self.retry_backoff, e)
                if self.stopping:
                    raise
                time.sleep(self.retry_backoff)

    def _apply_rewinds(self) -> None:
        if not self.rewinds:
            return
        for tp, offset in self.rewinds.items():
            self.consumer.seek(LogTP(tp.topic, tp.partition), offset)
            self.current[tp] = offset
        self.rewinds.clear()

    def _convert(self, m: LogRecord) -> SinkRecord | None:
        self._raw = m
        key = self.errors.execute(
            Stage.KEY_CONVERTER, self.key_converter, lambda: self.key_converter.to_connect_data(m.topic, m.key), m
        )
        if key is SKIP:
            return None
        value = self.errors.execute(
            Stage.VALUE_CONVERTER,
            self.value_converter,
            lambda: self.value_converter.to_connect_data(m.topic, m.value),
            m,
        )
        if value is SKIP:
            return None
        headers = self.errors.execute(Stage.HEADER_CONVERTER, self.header_converter, lambda: self._headers(m), m)
        if headers is SKIP:
            return None
        record = SinkRecord(
            m.topic,
            m.partition,
            key.schema,
            key.value,
            value.schema,
            value.value,
            m.offset,
            m.timestamp,
            headers=headers,
        )
        out = self.errors.execute(Stage.TRANSFORMATION, self.chain, lambda: self.chain.apply(record), record)
        return None if out is SKIP else out

    def _headers(self, m: LogRecord) -> Headers:
        h = Headers()
        for k, v in m.headers:
            sv = self.header_converter.to_connect_header(m.topic, k, v)
            h.add(k, sv.value, sv.schema)
        return h

    def _report_to_dlq(self, record: object, error: Exception, stage: Stage) -> None:
        """Send the original bytes of a failed record to the dead letter queue (sink only, as in Kafka)."""
        m = self._raw
        if m is None or self.dlq_topic is None:
            return
        if self._dlq_producer is None:
            self._dlq_producer = self.log.producer()
        headers = list(m.headers)
        if self.dlq_context_headers:
            context = {
                "topic": m.topic,
                "partition": str(m.partition),
                "offset": str(m.offset),
                "connector.name": self.id.connector,
                "task.id": str(self.id.task),
                "stage": stage.value,
                "exception.class.name": f"{type(error).__module__}.{type(error).__qualname__}",
                "exception.message": str(error),
                "exception.stacktrace": "".join(traceback.format_exception(error)),
            }
            headers += [(f"__connect.errors.{k}", v.encode()) for k, v in context.items()]
        self._dlq_producer.send(self.dlq_topic, m.value, key=m.key, headers=headers, timestamp=m.timestamp)

    def _commit(self) -> None:
        """Timed for offset-commit-* (Kafka's WorkerSinkTask.onCommitCompleted): a commit with nothing to
        commit counts as a successful one, as Kafka's skipped commit does."""
        self._last_commit = time.monotonic()
        self.commit_requested = False
        started = time.perf_counter()
        try:
            self._commit_consumed()
        except BaseException:
            self.commits.record((time.perf_counter() - started) * 1000, False)
            raise
        self.commits.record((time.perf_counter() - started) * 1000, True)

    def _commit_consumed(self) -> None:
        if self._dlq_producer is not None and self._dlq_producer.flush(30):
            # A consumed offset moves past a failed record only once the record is in the DLQ.
            raise RuntimeError(f"Task {self.id}: dead letter queue {self.dlq_topic!r} did not acknowledge records")
        if not self.current:
            return
        committable = self.task.pre_commit(dict(self.current))
        assigned = {TopicPartition(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        offsets = {LogTP(tp.topic, tp.partition): off for tp, off in committable.items() if tp in assigned}
        if offsets:
            self.consumer.commit(offsets)

    def _on_rebalance(self, added: list[LogTP], revoked: list[LogTP]) -> None:
        if not self._started:
            return
        if revoked:
            gone = [TopicPartition(tp.topic, tp.partition) for tp in revoked]
            committable = self.task.pre_commit({tp: off for tp, off in self.current.items() if tp in gone})
            self.consumer.commit({LogTP(tp.topic, tp.partition): off for tp, off in committable.items()})
            self.task.close(gone)
            for tp in gone:
                self.current.pop(tp, None)
        if added:
            self.task.open([TopicPartition(tp.topic, tp.partition) for tp in added])

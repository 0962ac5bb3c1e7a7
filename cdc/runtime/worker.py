"""The worker: builds and runs connector tasks with their converters, SMTs, log clients and stores."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from cdc.api.config import ConfigValue
from cdc.api.connector import Connector
from cdc.api.sink import SinkTask
from cdc.api.source import SourceConnector, SourceTask
from cdc.api.storage import Converter, HeaderConverter
from cdc.log.base import TopicLog
from cdc.log.schema_registry import RegistryLimits, SchemaRegistryStore, open_schema_registry
from cdc.runtime.connector_config import SINK_CONFIG_DEF, SOURCE_CONFIG_DEF
from cdc.runtime.errors import RetryWithToleranceOperator
from cdc.runtime.log_cleaner import LogCleaner
from cdc.runtime.plugins import PluginKind, PluginRegistry
from cdc.runtime.sink_task import WorkerSinkTask
from cdc.runtime.source_task import TopicCreator, WorkerSourceTask
from cdc.runtime.task import ConnectorTaskId, TaskStatusListener, WorkerTask
from cdc.runtime.task_meters import meter_sink, meter_source
from cdc.runtime.traces import ResolvedSecrets, redact, sanitize_trace
from cdc.runtime.validation import ConnectorValidator
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import OffsetBackingStore, OffsetStorageReaderImpl
from cdc.storage.status import State, StatusBackingStore, TaskMetricsReport, TaskStatus
from cdc.transforms.chain import (
    TransformationChain,
    build_transformation_chain,
)

log = logging.getLogger(__name__)


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class StatusReporter(TaskStatusListener):
    """Writes task state changes to the status store, as Kafka Connect's TaskStatus.Listener.

    Failure traces are sanitized first (cdc.runtime.traces): the connector's resolved
    provider values hidden, the worker's install paths cut unless debug is on.
    """

    def __init__(self, store: StatusBackingStore, worker_id: str, secrets: ResolvedSecrets | None = None) -> None:
        self.store = store
        self.worker_id = worker_id
        self.secrets = secrets if secrets is not None else ResolvedSecrets()

    def redact(self, id: ConnectorTaskId, text: str) -> str:
        """`text` (a log line about the task) without its connector's resolved provider values."""
        return redact(text, self.secrets.of(id.connector))

    def _put(self, id: ConnectorTaskId, state: State, trace: str | None = None) -> None:
        self.store.put(TaskStatus(id.connector, id.task, state, self.worker_id, trace))

    def on_startup(self, id: ConnectorTaskId) -> None:
        self._put(id, State.RUNNING)

    def on_running(self, id: ConnectorTaskId) -> None:
        self._put(id, State.RUNNING)

    def on_pause(self, id: ConnectorTaskId) -> None:
        self._put(id, State.PAUSED)

    def on_failure(self, id: ConnectorTaskId, trace: str) -> None:
        self._put(id, State.FAILED, sanitize_trace(trace, self.secrets.of(id.connector)))

    def on_shutdown(self, id: ConnectorTaskId) -> None:
        self._put(id, State.UNASSIGNED)

    def on_topic(self, id: ConnectorTaskId, topic: str) -> None:
        self.store.put_topic(id.connector, topic, id.task, int(time.time() * 1000))

    def on_metrics(self, id: ConnectorTaskId, metrics: dict[str, Any]) -> None:
        report = TaskMetricsReport(id.connector, id.task, metrics, self.worker_id, int(time.time() * 1000))
        self.store.put_metrics(report)


def connector_kind(cls: type) -> PluginKind:
    return PluginKind.SOURCE if issubclass(cls, SourceConnector) else PluginKind.SINK


class Worker:
    def __init__(
        self,
        config: WorkerConfig,
        registry: PluginRegistry,
        log_: TopicLog,
        offset_store: OffsetBackingStore,
        status_store: StatusBackingStore,
        worker_id: str | None = None,
    ) -> None:
        self.config = config
        self.registry = registry
        self.validator = ConnectorValidator(registry, config.get("connector.client.config.override.policy"))
        self.log = log_
        self.offset_store = offset_store
        self.status_store = status_store
        self.worker_id = worker_id or config.get("worker.id") or default_worker_id()
        self.secrets = ResolvedSecrets()  # per connector, what providers resolved: never shown
        self.reporter = StatusReporter(status_store, self.worker_id, self.secrets)
        self.tasks: dict[ConnectorTaskId, WorkerTask] = {}
        self.cleaner: LogCleaner | None = None
        self._schema_registry: SchemaRegistryStore | None = None
        self._schema_registry_lock = threading.Lock()

    def start(self) -> None:
        self.offset_store.start()
        self.status_store.start()
        interval = self.config.get("log.retention.check.interval.ms")
        if self.log.owner_applies_retention and interval > 0:  # a Kafka broker applies its own retention
            self.cleaner = LogCleaner(self.log, interval)
            self.cleaner.start()

    def stop(self) -> None:
        if self.cleaner is not None:
            self.cleaner.stop()
        self.stop_and_await_tasks(list(self.tasks))
        self.status_store.stop()
        self.offset_store.stop()
        if self._schema_registry is not None:
            self._schema_registry.close()
        self.log.close()

    # -- connectors --------------------------------------------------------------------------
    def connector_class(self, props: Mapping[str, str]) -> type[Connector]:
        return self.validator.connector_class(props)

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        return self.validator.validate(props)

    def validate_infos(
        self, props: Mapping[str, str], masked_keys: Iterable[str] = (), *, connect: bool = False
    ) -> dict[str, Any]:
        return self.validator.validate_infos(props, masked_keys, connect=connect)

    def _resolve_for_chain(self, kind: str, name: str) -> type:
        return self.validator.resolve_for_chain(kind, name)

    def ensure_valid(self, props: Mapping[str, str]) -> None:
        self.validator.ensure_valid(props)

    def new_connector(self, props: Mapping[str, str]) -> Connector:
        return self.connector_class(props)()

    def schema_registry(self) -> SchemaRegistryStore | None:
        """The embedded log's schema registry (served over REST, used by converters); None on Kafka."""
        with self._schema_registry_lock:
            if self._schema_registry is None:
                self._schema_registry = open_schema_registry(self.log, RegistryLimits.from_config(self.config))
            return self._schema_registry

    # -- tasks -------------------------------------------------------------------------------
    def _converter(self, connector_props: Mapping[str, str], role: str) -> Any:
        kinds = [PluginKind.HEADER_CONVERTER] if role == "header.converter" else [PluginKind.CONVERTER]
        if connector_props.get(role):
            name = connector_props[role]
            configs = {k.removeprefix(role + "."): v for k, v in connector_props.items() if k.startswith(role + ".")}
            key = role
        else:
            name = self.config.get(role)
            configs = self.config.converter_configs(role)
            key = role
        instance = self.registry.new_instance(name, kinds, key)
        if role == "header.converter":
            assert isinstance(instance, HeaderConverter)
            instance.configure(configs)
        else:
            assert isinstance(instance, Converter)
            # Embedded transport, no registry URL: the converter (AvroConverter) uses the log's own
            # registry in process, before configure, which would otherwise ask for schema.registry.url.
            if hasattr(instance, "use_registry") and "schema.registry.url" not in configs:
                store = self.schema_registry()
                if store is not None:
                    # imported here: confluent_kafka.schema_registry takes 0.2 s, paid only by its users
                    from cdc.log.schema_registry_client import EmbeddedSchemaRegistryClient

                    instance.use_registry(EmbeddedSchemaRegistryClient(store))
            instance.configure(configs, role == "key.converter")
        return instance

    def start_task(
        self,
        id: ConnectorTaskId,
        connector_props: Mapping[str, str],
        task_props: dict[str, str],
        task_count: int = 1,
        paused: bool = False,
    ) -> WorkerTask:
        cls = self.connector_class(connector_props)
        if self.config.get("task.isolation") == "process":
            return self._start_process_task(id, connector_props, task_props, task_count, paused)
        connector = cls()
        task_cls = connector.task_class()
        task = task_cls()
        chain: TransformationChain = build_transformation_chain(connector_props, self._resolve_for_chain)
        if issubclass(cls, SourceConnector):
            parsed = SOURCE_CONFIG_DEF.parse(connector_props)
            assert isinstance(task, SourceTask)
            worker_task: WorkerTask = self._source_task(id, task, task_props, connector_props, parsed, chain)
        else:
            parsed = SINK_CONFIG_DEF.parse(connector_props)
            assert isinstance(task, SinkTask)
            worker_task = WorkerSinkTask(
                id,
                task,
                task_props,
                self.reporter,
                log_=self.log,
                topics=[t for t in parsed["topics"] if t],
                topics_regex=parsed["topics.regex"] or None,
                member=(id.task, task_count),
                key_converter=self._converter(connector_props, "key.converter"),
                value_converter=self._converter(connector_props, "value.converter"),
                header_converter=self._converter(connector_props, "header.converter"),
                chain=chain,
                errors=self._errors(id, parsed),
                commit_interval_ms=self.config.get("offset.flush.interval.ms"),
                max_poll_records=parsed["consumer.max.poll.records"],
                consumer_overrides={
                    k.removeprefix("consumer.override."): v
                    for k, v in connector_props.items()
                    if k.startswith("consumer.override.")
                },
                dlq_topic=parsed["errors.deadletterqueue.topic.name"] or None,
                dlq_context_headers=parsed["errors.deadletterqueue.context.headers.enable"],
            )
        # Kafka Connect's poll/read/put counters (cdc.runtime.task_meters), read by the /metrics scrape.
        if isinstance(worker_task, WorkerSourceTask):
            worker_task.meter = meter_source(task)
        elif isinstance(worker_task, WorkerSinkTask):
            worker_task.meter = meter_sink(task, worker_task.consumer)
        self.tasks[id] = worker_task
        worker_task.start(paused)
        return worker_task

    def _start_process_task(
        self,
        id: ConnectorTaskId,
        connector_props: Mapping[str, str],
        task_props: dict[str, str],
        task_count: int,
        paused: bool,
    ) -> WorkerTask:
        from cdc.runtime.task_process import ProcessWorkerTask

        spec = {
            "worker": {k: str(v) for k, v in self.config.originals().items()},
            "worker_id": self.worker_id,
            "connector": dict(connector_props),
            "task": dict(task_props),
            "id": [id.connector, id.task],
            "count": task_count,
        }
        timeout = self.config.get("task.shutdown.graceful.timeout.ms") / 1000
        task = ProcessWorkerTask(id, self.reporter, spec, timeout)
        self.tasks[id] = task
        task.start(paused)
        return task

    def _errors(self, id: ConnectorTaskId, parsed: Mapping[str, Any]) -> RetryWithToleranceOperator:
        return RetryWithToleranceOperator(
            str(id),
            parsed["errors.tolerance"],
            parsed["errors.log.enable"],
            parsed["errors.log.include.messages"],
            parsed["errors.retry.timeout"],
            parsed["errors.retry.delay.max.ms"],
        )

    def _source_task(
        self,
        id: ConnectorTaskId,
        task: SourceTask,
        task_props: dict[str, str],
        connector_props: Mapping[str, str],
        parsed: Mapping[str, Any],
        chain: TransformationChain,
    ) -> WorkerSourceTask:
        # Embedded: the offsets topic shares the SQLite file with the records, so both
        # commit in one transaction. Kafka: acknowledged records, flushed periodically.
        transactional = self.offset_store.transactional_log is self.log and self.config.transport == "embedded"
        overrides = {
            k.removeprefix("producer.override."): v
            for k, v in connector_props.items()
            if k.startswith("producer.override.")
        }
        transactional_id = self.transactional_id(id)
        if transactional_id is not None:
            # KIP-618: a new producer with this id fences any zombie still holding it.
            transactional = True
        producer = self.log.producer(transactional_id=transactional_id, **overrides)
        partitions = parsed["topic.creation.default.partitions"] if self.config.get("topic.creation.enable") else None
        return WorkerSourceTask(
            id,
            task,
            task_props,
            self.reporter,
            key_converter=self._converter(connector_props, "key.converter"),
            value_converter=self._converter(connector_props, "value.converter"),
            header_converter=self._converter(connector_props, "header.converter"),
            chain=chain,
            producer=producer,
            offset_store=self.offset_store,
            offset_reader=OffsetStorageReaderImpl(self.offset_store, id.connector),
            errors=self._errors(id, parsed),
            topic_creator=TopicCreator(self.log, partitions, parsed["topic.creation.default.replication.factor"]),
            transactional=transactional,
            flush_interval_ms=parsed["offset.flush.interval.ms"] or self.config.get("offset.flush.interval.ms"),
            flush_timeout_ms=self.config.get("offset.flush.timeout.ms"),
        )

    def transactional_id(self, id: ConnectorTaskId) -> str | None:
        """`${group.id}-${connector}-${task}` when exactly-once source support is on, else None."""
        group = self.config.get("group.id")
        if (
            self.config.get("exactly.once.source.support") != "enabled"
            or self.config.transport != "kafka"
            or not group
            or self.offset_store.transactional_log is not self.log
        ):
            return None
        return f"{group}-{id.connector}-{id.task}"

    def stop_and_await_tasks(self, ids: list[ConnectorTaskId]) -> None:
        timeout = self.config.get("task.shutdown.graceful.timeout.ms") / 1000
        for id in ids:
            t = self.tasks.get(id)
            if t is not None:
                t.stop()
        for id in ids:
            t = self.tasks.pop(id, None)
            if t is not None and not t.await_stop(timeout):
                log.error(
                    "Task %s did not stop within task.shutdown.graceful.timeout.ms (%.0f s); abandoning it",
                    id,
                    timeout,
                )

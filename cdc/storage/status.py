"""Connector and task status in Kafka Connect's `connect-status` format.

Keys `status-connector-<name>` and `status-task-<name>-<id>`; values
`{"state","trace","worker_id","generation"}`. Standalone Kafka Connect keeps status in
memory; we also persist it to a topic so `cdc status` can read it from another process.

cdc extension: `metrics-task-<name>-<id>` holds a task's latest metrics (cdc.api.metrics),
`{"metrics": {...}, "worker_id", "generation", "timestamp"}`. Kafka Connect's own
KafkaStatusBackingStore.read() logs "Discarding record with invalid key" for any key outside its
three prefixes and skips it, so a Java worker sharing this topic is unaffected (a WARN per record).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from cdc.log.base import TopicLog, TopicSpec
from cdc.storage._json import dumps, loads
from cdc.storage.offsets import read_topic

log = logging.getLogger(__name__)


class State(Enum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    DESTROYED = "DESTROYED"


@dataclass(frozen=True)
class ConnectorStatus:
    connector: str
    state: State
    worker_id: str
    trace: str | None = None
    generation: int = 0

    @property
    def key(self) -> str:
        return f"status-connector-{self.connector}"


@dataclass(frozen=True)
class TaskStatus:
    connector: str
    task: int
    state: State
    worker_id: str
    trace: str | None = None
    generation: int = 0

    @property
    def key(self) -> str:
        return f"status-task-{self.connector}-{self.task}"


@dataclass(frozen=True)
class TaskMetricsReport:
    """A task's latest metrics as one worker published them (`timestamp`: epoch ms of the publish)."""

    connector: str
    task: int
    metrics: dict[str, Any] = field(default_factory=dict)
    worker_id: str = ""
    timestamp: int = 0
    generation: int = 0

    @property
    def key(self) -> str:
        return metrics_key(self.connector, self.task)

    def value(self) -> bytes:
        return dumps(
            {
                "metrics": self.metrics,
                "worker_id": self.worker_id,
                "generation": self.generation,
                "timestamp": self.timestamp,
            }
        )


METRICS_PREFIX = "metrics-task-"


def metrics_key(connector: str, task: int) -> str:
    return f"{METRICS_PREFIX}{connector}-{task}"


Status = ConnectorStatus | TaskStatus


def status_value(s: Status) -> bytes:
    return dumps({"state": s.state.value, "trace": s.trace, "worker_id": s.worker_id, "generation": s.generation})


class StatusBackingStore:
    """In-memory status with an optional topic behind it."""

    def __init__(
        self,
        log_: TopicLog | None = None,
        topic: str = "connect-status",
        partitions: int = 5,
        replication_factor: int = -1,
    ) -> None:
        self._log = log_
        self.topic = topic
        self._partitions = partitions
        self._replication_factor = replication_factor
        self._connectors: dict[str, ConnectorStatus] = {}
        self._tasks: dict[tuple[str, int], TaskStatus] = {}
        self._topics: dict[str, dict[str, dict[str, object]]] = {}  # connector -> topic -> TopicStatus
        self._metrics: dict[tuple[str, int], TaskMetricsReport] = {}
        self._lock = threading.Lock()
        self._producer = None
        self._listeners: list[Callable[[Status], None]] = []
        self._follower: threading.Thread | None = None
        self._follow_stop = threading.Event()

    def start(self) -> None:
        if self._log is None:
            return
        self._log.ensure_topic(
            TopicSpec(self.topic, self._partitions, self._replication_factor, {"cleanup.policy": "compact"})
        )
        self._producer = self._log.producer()
        self.refresh()

    def refresh(self) -> None:
        """Read the topic again to its end: another process's latest writes (the topic is compacted)."""
        if self._log is None:
            return
        records = read_topic(self._log, self.topic)
        with self._lock:
            for rec in records:
                self._load_record(rec.key, rec.value, rec.partition, rec.offset)

    def _load_record(self, key: bytes | None, value: bytes | None, partition: int, offset: int) -> None:
        """Apply one record; skip one that is not Kafka Connect's format, as KafkaStatusBackingStore does.

        The topic may be shared with other tools or hold a torn write: one bad record must neither
        stop the worker from starting nor stop it from following every later status.
        """
        if key is None:
            return
        try:
            self._load(key.decode(), value)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            log.warning(
                "Discarding unreadable record %r at %s-%d@%d of the status topic: %s",
                key,
                self.topic,
                partition,
                offset,
                e,
            )

    def _load(self, key: str, value: bytes | None) -> None:
        if key.startswith(METRICS_PREFIX):
            name, _, task = key.removeprefix(METRICS_PREFIX).rpartition("-")
            if not task.isdigit():
                return  # not ours: metrics are advisory, never worth failing a start over
            if value is None:
                self._metrics.pop((name, int(task)), None)
                return
            v = loads(value)
            self._metrics[(name, int(task))] = TaskMetricsReport(
                name, int(task), v.get("metrics") or {}, v.get("worker_id", ""), v.get("timestamp", 0),
                v.get("generation", 0),
            )  # fmt: skip
        elif key.startswith("status-topic-"):
            topic, _, connector = key.removeprefix("status-topic-").partition(":connector-")
            if value is None:
                self._topics.get(connector, {}).pop(topic, None)
            else:
                self._topics.setdefault(connector, {})[topic] = loads(value)["topic"]
        elif key.startswith("status-connector-"):
            name = key.removeprefix("status-connector-")
            if value is None:
                self._connectors.pop(name, None)
                return
            v = loads(value)
            self._connectors[name] = ConnectorStatus(
                name, State(v["state"]), v.get("worker_id", ""), v.get("trace"), v.get("generation", 0)
            )
        elif key.startswith("status-task-"):
            name, _, task = key.removeprefix("status-task-").rpartition("-")
            if value is None:
                self._tasks.pop((name, int(task)), None)
                return
            v = loads(value)
            self._tasks[(name, int(task))] = TaskStatus(
                name, int(task), State(v["state"]), v.get("worker_id", ""), v.get("trace"), v.get("generation", 0)
            )

    def follow(self) -> None:
        """Distributed mode: keep applying every worker's writes, read from the topic on a thread."""
        if self._log is None or self._follower is not None:
            return
        self._follow_stop.clear()
        self._follower = threading.Thread(target=self._follow, name="status-topic", daemon=True)
        self._follower.start()

    def _follow(self) -> None:
        assert self._log is not None
        reader = self._log.reader()
        reader.assign(self._log.beginning_offsets(self._log.partitions(self.topic)))
        try:
            while not self._follow_stop.is_set():
                for rec in reader.poll(500, 0.2):
                    with self._lock:
                        self._load_record(rec.key, rec.value, rec.partition, rec.offset)
        finally:
            reader.close()

    def add_listener(self, listener: Callable[[Status], None]) -> None:
        self._listeners.append(listener)

    def put(self, status: Status) -> None:
        with self._lock:
            if isinstance(status, ConnectorStatus):
                self._connectors[status.connector] = status
            else:
                self._tasks[(status.connector, status.task)] = status
            if self._producer is not None:
                self._producer.send(self.topic, status_value(status), key=status.key.encode())
                if self._follower is not None:
                    # Distributed: asynchronous like Kafka's KafkaStatusBackingStore, so stopping
                    # tasks while cut off from the broker never waits on status writes.
                    self._producer.poll(0)
                else:
                    self._producer.flush(10)
        for listener in self._listeners:
            listener(status)

    def delete(self, connector: str) -> None:
        with self._lock:
            self._connectors.pop(connector, None)
            tasks = [k for k in self._tasks if k[0] == connector]
            for k in tasks:
                del self._tasks[k]
            metrics = [k for k in self._metrics if k[0] == connector]
            for k in metrics:
                del self._metrics[k]
            if self._producer is not None:
                self._producer.send(self.topic, None, key=f"status-connector-{connector}".encode())
                for _, t in tasks:
                    self._producer.send(self.topic, None, key=f"status-task-{connector}-{t}".encode())
                for _, t in metrics:
                    self._producer.send(self.topic, None, key=metrics_key(connector, t).encode())
                self._producer.flush(10)

    def delete_task(self, connector: str, task: int) -> None:
        with self._lock:
            self._tasks.pop((connector, task), None)
            had_metrics = self._metrics.pop((connector, task), None) is not None
            if self._producer is not None:
                self._producer.send(self.topic, None, key=f"status-task-{connector}-{task}".encode())
                if had_metrics:
                    self._producer.send(self.topic, None, key=metrics_key(connector, task).encode())
                self._producer.flush(10)

    # -- task metrics (cdc extension) ---------------------------------------------------------
    def put_metrics(self, report: TaskMetricsReport) -> None:
        """Latest metrics of a task; like `put`, synchronous in standalone and asynchronous when following."""
        with self._lock:
            self._metrics[(report.connector, report.task)] = report
            if self._producer is not None:
                self._producer.send(self.topic, report.value(), key=report.key.encode())
                if self._follower is not None:
                    self._producer.poll(0)
                else:
                    self._producer.flush(10)

    def get_task_metrics(self, connector: str, task: int) -> TaskMetricsReport | None:
        return self._metrics.get((connector, task))

    def task_metrics(self, connector: str) -> list[TaskMetricsReport]:
        """The latest metrics of each of the connector's tasks that reported any, by task id."""
        return sorted((m for (c, _), m in list(self._metrics.items()) if c == connector), key=lambda m: m.task)

    # -- active topics (KIP-558): `status-topic-<topic>:connector-<name>` ---------------------
    def put_topic(self, connector: str, topic: str, task: int, discover_ms: int) -> None:
        with self._lock:
            known = self._topics.setdefault(connector, {})
            if topic in known:
                return
            status = {"name": topic, "connector": connector, "task": task, "discoverTimestamp": discover_ms}
            known[topic] = status
            if self._producer is not None:
                key = f"status-topic-{topic}:connector-{connector}".encode()
                self._producer.send(self.topic, dumps({"topic": status}), key=key)
                self._producer.flush(10)

    def topics(self, connector: str) -> list[str]:
        return sorted(self._topics.get(connector, {}))

    def delete_topics(self, connector: str) -> None:
        with self._lock:
            topics = self._topics.pop(connector, {})
            if self._producer is not None and topics:
                for t in topics:
                    self._producer.send(self.topic, None, key=f"status-topic-{t}:connector-{connector}".encode())
                self._producer.flush(10)

    def get_connector(self, connector: str) -> ConnectorStatus | None:
        return self._connectors.get(connector)

    def get_task(self, connector: str, task: int) -> TaskStatus | None:
        return self._tasks.get((connector, task))

    def tasks(self, connector: str) -> list[TaskStatus]:
        return sorted((t for (c, _), t in self._tasks.items() if c == connector), key=lambda t: t.task)

    def connectors(self) -> list[str]:
        return sorted(self._connectors)

    def stop(self) -> None:
        self._follow_stop.set()
        if self._follower is not None:
            self._follower.join(5)
            self._follower = None
            if self._producer is not None:
                self._producer.flush(5)
        if self._producer is not None:
            self._producer.close()
            self._producer = None

"""The config topic in Kafka Connect's format (KafkaConfigBackingStore), followed by every worker.

Keys and values, one partition, JSON without schemas:

- `connector-<n>`       `{"properties": {...}}` (null: deleted)
- `task-<n>-<i>`        `{"properties": {...}}`, visible only once `commit-<n>` arrives
- `commit-<n>`          `{"tasks": <count>}`
- `target-state-<n>`    `{"state": "STARTED"|"PAUSED", "state.v2": "STARTED"|"PAUSED"|"STOPPED"}`
- `restart-connector-<n>` `{"include-tasks": bool, "only-failed": bool}`
- `session-key`         `{"key", "algorithm", "creation-timestamp"}`, written by the leader; we add
                        `"leader.url"` so other workers know where to forward requests.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc.api.errors import ConfigException
from cdc.log.base import LogProducer, TopicLog, TopicPartition, TopicSpec
from cdc.runtime.herder import TargetState
from cdc.storage._json import dumps, loads

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RestartRecord:
    offset: int
    connector: str
    include_tasks: bool
    only_failed: bool
    timestamp: int = 0


@dataclass
class ClusterConfigState:
    """What the config topic says, as of `offset` (the next record to read)."""

    offset: int = 0
    connectors: dict[str, dict[str, str]] = field(default_factory=dict)
    targets: dict[str, TargetState] = field(default_factory=dict)
    tasks: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    pending_tasks: dict[str, dict[int, dict[str, str]]] = field(default_factory=dict)
    restarts: list[RestartRecord] = field(default_factory=list)
    leader_url: str | None = None

    def target(self, name: str) -> TargetState:
        return self.targets.get(name, TargetState.STARTED)

    def apply(self, offset: int, key: str, value: Any, timestamp: int = 0) -> None:
        self.offset = offset + 1
        kind, name = _split_key(key)
        if kind == "connector":
            if value is None:
                self.connectors.pop(name, None)
                self.targets.pop(name, None)
                self.tasks.pop(name, None)
                self.pending_tasks.pop(name, None)
            else:
                self.connectors[name] = dict(value["properties"])
        elif kind == "task":
            connector, _, index = name.rpartition("-")
            if value is not None:
                self.pending_tasks.setdefault(connector, {})[int(index)] = dict(value["properties"])
        elif kind == "commit":
            if value is not None:
                count = int(value["tasks"])
                pending = self.pending_tasks.pop(name, {})
                old = self.tasks.get(name, [])
                self.tasks[name] = [pending.get(i) or (old[i] if i < len(old) else {}) for i in range(count)]
        elif kind == "target-state":
            if value is None:
                self.targets.pop(name, None)
            else:
                self.targets[name] = TargetState(value.get("state.v2") or value["state"])
        elif kind == "restart-connector":
            if value is not None:
                self.restarts.append(
                    RestartRecord(
                        offset, name, bool(value.get("include-tasks")), bool(value.get("only-failed")), timestamp
                    )
                )
                del self.restarts[:-100]
        elif kind == "session-key":
            if value is not None:
                self.leader_url = value.get("leader.url")
        else:
            log.debug("Ignoring config topic record with unknown key %r", key)


_PREFIXES = ("restart-connector-", "target-state-", "connector-", "task-", "commit-")


def _split_key(key: str) -> tuple[str, str]:
    if key == "session-key":
        return "session-key", ""
    for prefix in _PREFIXES:
        if key.startswith(prefix):
            return prefix[:-1], key[len(prefix) :]
    return "", key


class ConfigTopic:
    """Writes Kafka Connect's config records and follows the topic on a background thread."""

    def __init__(self, log_: TopicLog, topic: str, on_change: Callable[[], None], replication_factor: int = -1) -> None:
        self._log = log_
        self.topic = topic
        self._replication_factor = replication_factor
        self._on_change = on_change
        self.state = ClusterConfigState()
        self.lock = threading.RLock()
        self._producer: LogProducer | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen = threading.Condition(self.lock)
        self._position = 0  # the follower's next offset to read, markers and skipped records included

    def start(self) -> None:
        described = self._log.ensure_topic(
            TopicSpec(self.topic, 1, self._replication_factor, {"cleanup.policy": "compact"})
        )
        if described.partitions != 1:
            # Kafka Connect refuses such a topic too: configs are only ordered within one partition.
            raise ConfigException(
                f"Topic {self.topic!r} supplied via the 'config.storage.topic' property is required to have a "
                f"single partition in order to guarantee consistency of connector configurations, but found "
                f"{described.partitions} partitions. Point config.storage.topic at a new topic (the worker "
                "creates it with one partition) or recreate this one with a single partition",
                "config.storage.topic",
            )
        self._producer = self._log.producer()
        self._thread = threading.Thread(target=self._follow, name="config-topic", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._producer is not None:
            self._producer.close()

    def _follow(self) -> None:
        reader = self._log.reader()
        tp = TopicPartition(self.topic, 0)
        reader.assign(self._log.beginning_offsets([tp]))
        try:
            while not self._stop.is_set():
                batch = reader.poll(500, 0.2)
                if not batch:
                    with self.lock:
                        self._position = reader.position(tp)
                        self._seen.notify_all()
                    continue
                with self.lock:
                    for r in batch:
                        if r.key is None:
                            continue
                        try:
                            self.state.apply(
                                r.offset, r.key.decode(), None if r.value is None else loads(r.value), r.timestamp or 0
                            )
                        except (ValueError, KeyError, TypeError) as e:
                            log.warning("Skipping unreadable config record %r at offset %d: %s", r.key, r.offset, e)
                    self._position = reader.position(tp)
                    self._seen.notify_all()
                self._on_change()
        finally:
            reader.close()

    # -- writes ------------------------------------------------------------------------------
    def _send(self, records: list[tuple[str, Any]]) -> None:
        assert self._producer is not None, "config topic not started"
        errors: list[Exception] = []
        for key, value in records:
            self._producer.send(
                self.topic,
                None if value is None else dumps(value),
                key=key.encode(),
                partition=0,
                on_delivery=lambda rec, err: errors.append(err) if err else None,
            )
        if self._producer.flush(30) or errors:
            raise RuntimeError(f"could not write to the config topic {self.topic!r}: {errors[:1] or 'timed out'}")

    def wait_for(self, cond: Callable[[ClusterConfigState], bool], timeout: float = 30.0) -> bool:
        """Block until our own follower has read a write (read-your-writes for REST answers)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while not cond(self.state):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._seen.wait(left)
            return True

    def read_to_end(self, timeout: float) -> bool:
        """Block until the follower has applied every record written before this call.

        Kafka Connect reads the config topic to its end before it acts on an assignment
        (`readConfigToEnd`); acting on a partial read would, for instance, start a connector whose
        later `target-state` record says STOPPED. False when that did not happen within `timeout`.
        """
        tp = TopicPartition(self.topic, 0)
        end = self._log.end_offsets([tp])[tp]
        return self.wait_for(lambda _: self._position >= end, timeout)

    def put_connector(self, name: str, props: Mapping[str, str], target: TargetState | None = None) -> None:
        records: list[tuple[str, Any]] = [(f"connector-{name}", {"properties": dict(props)})]
        if target is not None:
            records.insert(0, (f"target-state-{name}", _target_value(target)))
        self._send(records)

    def remove_connector(self, name: str) -> None:
        self._send([(f"connector-{name}", None), (f"target-state-{name}", None)])

    def put_target_state(self, name: str, target: TargetState) -> None:
        self._send([(f"target-state-{name}", _target_value(target))])

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        records: list[tuple[str, Any]] = [(f"task-{name}-{i}", {"properties": c}) for i, c in enumerate(configs)]
        records.append((f"commit-{name}", {"tasks": len(configs)}))
        self._send(records)

    def put_restart_request(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        self._send([(f"restart-connector-{name}", {"include-tasks": include_tasks, "only-failed": only_failed})])

    def put_session_key(self, leader_url: str) -> None:
        import base64
        import os

        value = {
            "key": base64.b64encode(os.urandom(32)).decode(),
            "algorithm": "HmacSHA256",
            "creation-timestamp": int(time.time() * 1000),
            "leader.url": leader_url,
        }
        self._send([("session-key", value)])


def _target_value(target: TargetState) -> dict[str, str]:
    # Workers older than KIP-875 read only "state" and know no STOPPED: they see PAUSED.
    v1 = TargetState.PAUSED.value if target is TargetState.STOPPED else target.value
    return {"state": v1, "state.v2": target.value}

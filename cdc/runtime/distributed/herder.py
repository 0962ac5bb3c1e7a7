"""Distributed mode: workers with the same `group.id` share connectors and tasks.

- Configs live in the config topic (Kafka Connect's keys); every worker follows it.
- Who runs what comes from Kafka's consumer-group protocol (see `membership`): each
  connector and task hashes to a slot, and the slot's owner runs it.
- The leader (owner of slot 0) writes connector configs and target states; other workers
  forward such REST requests to it. The owner of a connector's slot runs its Connector
  instance and writes its task configs (`task-<n>-<i>` + `commit-<n>`).
- Status goes to the status topic, which every worker follows too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api.connector import Connector
from cdc.api.errors import ConfigException
from cdc.config.providers import ConfigTransformer, has_references, reverse_transform
from cdc.runtime.abstract_herder import AbstractHerder, config_secrets, keep_hidden_passwords
from cdc.runtime.distributed.config_topic import ClusterConfigState, ConfigTopic
from cdc.runtime.distributed.membership import GroupMembership, GroupTimeouts, slot_of
from cdc.runtime.distributed.rebalance_metrics import RebalanceMetrics
from cdc.runtime.herder import (
    ForwardRequired,
    NotFoundError,
    RestartRequest,
    TargetState,
    not_found,
    stopped_required,
)
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.traces import redact
from cdc.runtime.worker import Worker
from cdc.storage.status import State

log = logging.getLogger(__name__)


@dataclass
class _RunningConnector:
    config: dict[str, str]
    target: TargetState
    instance: Connector | None  # None: it failed to start with this config


class _Context:
    def __init__(self, herder: DistributedHerder, name: str, instance: Connector) -> None:
        self._herder, self._name, self._instance = herder, name, instance

    def request_task_reconfiguration(self) -> None:
        self._herder._reconfigure.add(self._name)

    def raise_error(self, error: Exception) -> None:
        running = self._herder.running.get(self._name)
        if running is not None and running.instance is self._instance:
            self._herder._put_status(self._name, State.FAILED, self._herder._trace(self._name, error))


class DistributedHerder(AbstractHerder):
    """Kafka's DistributedHerder: configs in the config topic, writes applied by the leader."""

    def __init__(self, worker: Worker, transformer: ConfigTransformer | None = None) -> None:
        config = worker.config
        self.group_id = config.get("group.id")
        if not self.group_id:
            raise ConfigException("group.id is required in distributed mode: name the Connect cluster", "group.id")
        if config.transport != "kafka":
            raise ConfigException("distributed mode needs transport=kafka (workers meet in Kafka)", "transport")
        super().__init__(worker, transformer)
        self.url = ""
        self.configs = ConfigTopic(
            worker.log,
            config.get("config.storage.topic"),
            self._wake,
            config.get("config.storage.replication.factor"),
        )
        self._sync_timeout = config.get("worker.sync.timeout.ms") / 1000
        # True once the config topic was read to its end after the latest assignment: until then
        # this worker starts nothing, as Kafka Connect's herder (readConfigToEnd).
        self._synced = False
        self.membership = GroupMembership(
            {"bootstrap.servers": ",".join(config.get("bootstrap.servers")), **config.kafka_common()},
            self.group_id,
            config.get("offset.storage.topic"),
            worker.worker_id,
            GroupTimeouts.from_worker_config(config),
            self._on_assigned,
            self._on_revoked,
        )
        self.rebalance = RebalanceMetrics()  # connect-worker-rebalance-metrics
        self.running: dict[str, _RunningConnector] = {}
        self.task_sources: dict[ConnectorTaskId, tuple[dict[str, str], dict[str, str]]] = {}
        self._woken = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._started_ms = 0
        self._restart_offset = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, url: str) -> None:
        """`url` is this worker's advertised REST URL, where others forward requests."""
        self.url = url
        self._started_ms = int(time.time() * 1000)
        self.worker.start()
        self.worker.status_store.follow()
        self.configs.start()
        self._synced = self._read_config_to_end(self._sync_timeout)
        slots = len(self.worker.log.partitions(self.worker.config.get("offset.storage.topic")))
        self.membership.start(slots)
        self._thread = threading.Thread(target=self._run, name="herder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(30)
        with self._lock:
            self._stop_owned(set(range(self.membership.slot_count)))
        self.membership.close()
        self.configs.stop()
        self.worker.stop()

    def _wake(self) -> None:
        self._woken.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.membership.poll(0.1)
            try:
                with self._lock:
                    self._reconcile()
            except Exception:
                log.exception("herder: reconciling failed; retrying")
            self._woken.wait(0.2)
            self._woken.clear()

    # -- membership callbacks (on the herder thread, inside poll) ---------------------------
    def _read_config_to_end(self, timeout: float) -> bool:
        try:
            return self.configs.read_to_end(timeout)
        except Exception as e:  # the broker may be gone; never let a rebalance callback raise
            log.warning("Could not read the config topic %r to its end: %s", self.configs.topic, e)
            return False

    def _on_assigned(self, slots: set[int]) -> None:
        self.rebalance.started(self.membership.generation)
        self._synced = self._read_config_to_end(self._sync_timeout)
        if not self._synced:
            log.warning(
                "Could not read the config topic %r to its end within worker.sync.timeout.ms (%.0f ms); "
                "starting nothing until it is read",
                self.configs.topic,
                self._sync_timeout * 1000,
            )
        if 0 in slots:
            log.info("This worker (%s) is the leader of group %s", self.url, self.group_id)
            self.configs.put_session_key(self.url)
        with self._lock:
            self._reconcile()

    def _on_revoked(self, slots: set[int]) -> None:
        with self._lock:
            self._stop_owned(slots)

    def _stop_owned(self, slots: set[int]) -> None:
        """Stop (and wait for) every task and Connector instance in `slots`: revoke before reassign."""
        n = self.membership.slot_count or 1
        tasks = [id for id in self.worker.tasks if slot_of(f"task-{id.connector}-{id.task}", n) in slots]
        self.worker.stop_and_await_tasks(tasks)
        for id in tasks:
            self.task_sources.pop(id, None)
        for name in [c for c in self.running if slot_of(f"connector-{c}", n) in slots]:
            self._stop_connector(name, State.UNASSIGNED)

    def _owns(self, key: str) -> bool:
        n = self.membership.slot_count
        return n > 0 and slot_of(key, n) in self.membership.slots

    # -- reconciling what runs here with the config topic -----------------------------------
    def _snapshot(self) -> ClusterConfigState:
        with self.configs.lock:
            s = self.configs.state
            return ClusterConfigState(
                s.offset,
                {k: dict(v) for k, v in s.connectors.items()},
                dict(s.targets),
                {k: [dict(c) for c in v] for k, v in s.tasks.items()},
                {},
                list(s.restarts),
                s.leader_url,
            )

    def _resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """The config to run with; its provider values are added to those remembered, so traces and
        logs hide them (task configs are resolved here too, and a worker runs a connector's tasks
        from configs it did not resolve itself)."""
        resolved, _, secrets = self._transform(config)
        # and the values of its secret keys (cdc.api.sensitive), which a failure may quote too
        secrets |= config_secrets(self.worker, resolved)
        if config.get("name") and secrets:
            self.worker.secrets.set(config["name"], self.worker.secrets.of(config["name"]) | secrets)
        return resolved

    def _reconcile(self) -> None:
        if not self._synced:
            self._synced = self._read_config_to_end(min(self._sync_timeout, 1.0))
            if not self._synced:
                return
        state = self._snapshot()
        for name in list(self.running):
            if name not in state.connectors:
                self._stop_connector(name, None)  # deleted: its status was removed, do not recreate it
            elif not self._owns(f"connector-{name}"):
                self._stop_connector(name, State.UNASSIGNED)
        for name, props in state.connectors.items():
            if self._owns(f"connector-{name}"):
                self._reconcile_connector(name, props, state)
        self._reconcile_tasks(state)
        # The config topic is read and the assigned work started: a rebalance under way is complete
        # (Kafka's handleRebalanceCompleted, after startWork).
        self.rebalance.succeeded()
        self._handle_restarts(state)
        for id in self.restarts.due({i: t.failure is not None for i, t in self.worker.tasks.items()}):
            self._restart_task_here(id, state)

    def _reconcile_connector(self, name: str, props: dict[str, str], state: ClusterConfigState) -> None:
        target = state.target(name)
        running = self.running.get(name)
        if target is TargetState.STOPPED:
            if running is not None:
                self._stop_connector(name, State.STOPPED)
            if state.tasks.get(name):
                self.configs.put_task_configs(name, [])  # KIP-875: a stopped connector has no tasks
                self.configs.wait_for(lambda s: not s.tasks.get(name), 10)
            status = self.worker.status_store.get_connector(name)
            if status is None or status.state is not State.STOPPED or status.worker_id != self.worker.worker_id:
                self._put_status(name, State.STOPPED)
            return
        if running is not None and running.config != props:
            self._stop_connector(name, None)
            running = None
        if running is None:
            running = self._start_connector(name, props, target)
        elif running.target is not target:
            running.target = target
            if running.instance is not None:
                self._put_status(name, State.PAUSED if target is TargetState.PAUSED else State.RUNNING)
        if running.instance is not None and (name in self._reconfigure or name not in state.tasks):
            self._reconfigure.discard(name)
            self._write_task_configs(name, running, state)

    def _start_connector(self, name: str, props: dict[str, str], target: TargetState) -> _RunningConnector:
        running = _RunningConnector(props, target, None)
        self.running[name] = running
        try:
            resolved = self._resolve(props)
            instance = self.worker.new_connector(resolved)
            instance.initialize(_Context(self, name, instance))
            instance.start(dict(resolved))
        except Exception as e:
            log.error("Connector %s failed to start: %s", name, redact(str(e), self.worker.secrets.of(name)))
            self._put_status(name, State.FAILED, self._trace(name, e))
            return running  # its tasks keep their last configs and keep running, as in Kafka Connect
        running.instance = instance
        self._put_status(name, State.PAUSED if target is TargetState.PAUSED else State.RUNNING)
        self._reconfigure.add(name)
        return running

    def _write_task_configs(self, name: str, running: _RunningConnector, state: ClusterConfigState) -> None:
        assert running.instance is not None
        resolved = self._resolve(running.config)
        max_tasks = int(resolved.get("tasks.max", "1"))
        try:
            # Kafka's reverseTransform: the config topic gets the references, not their values.
            referenced = [k for k, v in running.config.items() if has_references(v)]
            configs = [
                reverse_transform(running.config, referenced, c) for c in running.instance.task_configs(max_tasks)
            ]
        except Exception as e:
            self._put_status(name, State.FAILED, self._trace(name, e))
            return
        if len(configs) > max_tasks and resolved.get("tasks.max.enforce", "true").lower() == "true":
            self._put_status(
                name, State.FAILED, f"The connector {name} has generated {len(configs)} tasks, more than tasks.max"
            )
            return
        if configs != state.tasks.get(name):
            self.configs.put_task_configs(name, configs)
            self.configs.wait_for(lambda s: s.tasks.get(name) == configs, 10)

    def _stop_connector(self, name: str, status: State | None) -> None:
        running = self.running.pop(name, None)
        if running is None or running.instance is None:
            if running is not None and status is not None:
                self._put_status(name, status)
            return
        try:
            running.instance.stop()
        except Exception as e:
            log.warning("Connector %s: stop() raised %s", name, e)
        if status is not None:
            self._put_status(name, status)

    def _reconcile_tasks(self, state: ClusterConfigState) -> None:
        desired: dict[ConnectorTaskId, tuple[dict[str, str], dict[str, str]]] = {}
        for name, configs in state.tasks.items():
            if name not in state.connectors or state.target(name) is TargetState.STOPPED:
                continue
            for i, task_config in enumerate(configs):
                if self._owns(f"task-{name}-{i}"):
                    desired[ConnectorTaskId(name, i)] = (state.connectors[name], task_config)
        stale = [id for id in self.worker.tasks if id not in desired or self.task_sources.get(id) != desired[id]]
        if stale:
            self.worker.stop_and_await_tasks(stale)
            for id in stale:
                self.task_sources.pop(id, None)
                if id.connector not in state.connectors:
                    # Deleted: the task's last words (UNASSIGNED) must not outlive the connector, so
                    # this worker tombstones its status after stopping it (Kafka Connect's onDeletion).
                    self.worker.status_store.delete_task(id.connector, id.task)
        for id, source in desired.items():
            if id not in self.worker.tasks:
                self._start_task(id, source, len(state.tasks[id.connector]), state.target(id.connector))
            else:
                task = self.worker.tasks[id]
                paused = state.target(id.connector) is TargetState.PAUSED
                if paused and not task.paused:
                    task.pause()
                elif not paused and task.paused:
                    task.resume()

    def _start_task(
        self, id: ConnectorTaskId, source: tuple[dict[str, str], dict[str, str]], count: int, target: TargetState
    ) -> None:
        connector_props, task_config = source
        self.task_sources[id] = source
        refresh = getattr(self.worker.offset_store, "refresh", None)
        if refresh is not None:
            refresh()  # the previous owner's last offsets
        try:
            resolved_task = self._resolve(task_config) if self.transformer is not None else task_config
            self.worker.start_task(
                id, self._resolve(connector_props), resolved_task, count, paused=target is TargetState.PAUSED
            )
        except Exception as e:
            self._task_start_failed(id, e)

    def _restart_task_here(self, id: ConnectorTaskId, state: ClusterConfigState) -> None:
        source = self.task_sources.get(id)
        if source is None:
            return
        self.worker.stop_and_await_tasks([id])
        self._start_task(id, source, len(state.tasks.get(id.connector, [])), state.target(id.connector))

    def _handle_restarts(self, state: ClusterConfigState) -> None:
        for r in state.restarts:
            if r.offset < self._restart_offset or (r.timestamp and r.timestamp < self._started_ms):
                continue
            self._restart_offset = r.offset + 1
            if r.connector not in state.connectors:
                continue
            request = RestartRequest(r.connector, r.only_failed, r.include_tasks)
            connector_status = self.worker.status_store.get_connector(r.connector)
            if r.connector in self.running and request.restart_connector(
                connector_status.state.value if connector_status else "UNASSIGNED"
            ):
                self._stop_connector(r.connector, None)
                self._reconcile_connector(r.connector, state.connectors[r.connector], state)
            for id in [i for i in self.worker.tasks if i.connector == r.connector]:
                task_status = self.worker.status_store.get_task(id.connector, id.task)
                failed = self.worker.tasks[id].failure is not None
                shown = "FAILED" if failed else (task_status.state.value if task_status else "UNASSIGNED")
                if request.restart_task(shown):
                    self.restarts.forget(id)
                    self._restart_task_here(id, state)

    # -- REST: writes go through the leader -------------------------------------------------
    def leader_url(self) -> str | None:
        """The group leader's REST URL (Kafka's leaderUrl(), the leader-name metric): this worker's own
        when it leads, else the one the leader last wrote to the config topic."""
        return self.url if self.membership.is_leader else self.configs.state.leader_url

    def _require_leader(self) -> None:
        if not self.membership.is_leader:
            raise ForwardRequired(self.configs.state.leader_url)

    def put_connector_config(
        self, config: Mapping[str, str], initial_state: TargetState | None = None, *, trusted: bool = False
    ) -> bool:
        """`trusted`: not from the REST API (every REST-submitted config passes SubmittedConfigPolicy)."""
        self._require_leader()
        name = config.get("name", "")
        existing = self.configs.state.connectors.get(name)
        config = {k: str(v) for k, v in config.items()}
        if existing is not None:
            config = keep_hidden_passwords(existing, config)
        self._check_config(config, existing, trusted)
        target = initial_state if existing is None else None
        self.configs.put_connector(name, config, target or (TargetState.STARTED if existing is None else None))
        self.configs.wait_for(lambda s: s.connectors.get(name) == config)
        return existing is None

    def delete_connector(self, name: str) -> None:
        self._require_leader()
        self._config(name)
        self.configs.remove_connector(name)
        self.configs.wait_for(lambda s: name not in s.connectors)
        self.worker.status_store.delete(name)
        self.worker.secrets.forget(name)

    def _put_target(self, name: str, target: TargetState) -> None:
        self._require_leader()
        self._config(name)
        self.configs.put_target_state(name, target)
        self.configs.wait_for(lambda s: s.target(name) is target)

    def pause_connector(self, name: str) -> None:
        self._put_target(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._put_target(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        self._put_target(name, TargetState.STOPPED)

    def restart_connector(self, name: str) -> None:
        self._require_leader()
        self._config(name)
        self.configs.put_restart_request(name, False, False)

    def restart_connector_and_tasks(self, request: RestartRequest) -> dict[str, Any]:
        self._require_leader()
        plan = self.connector_status(request.connector)
        if request.restart_connector(plan["connector"]["state"]):
            plan["connector"] = {**plan["connector"], "state": State.RESTARTING.value}
            plan["connector"].pop("trace", None)
        plan["tasks"] = [
            {"id": t["id"], "state": State.RESTARTING.value, "worker_id": t["worker_id"]}
            if request.restart_task(t["state"])
            else t
            for t in plan["tasks"]
        ]
        self.configs.put_restart_request(request.connector, request.include_tasks, request.only_failed)
        return plan

    def restart_task(self, id: ConnectorTaskId) -> None:
        """Served by the worker running the task; others forward to it (by its worker id, host:port)."""
        tasks = self.configs.state.tasks.get(id.connector)
        self._config(id.connector)
        if tasks is None or not 0 <= id.task < len(tasks):
            raise NotFoundError(f"Task {id} not found")
        with self._lock:
            if id in self.worker.tasks:
                self.restarts.forget(id)
                self._restart_task_here(id, self._snapshot())
                return
        status = self.worker.status_store.get_task(id.connector, id.task)
        owner = status.worker_id if status is not None and status.worker_id != self.worker.worker_id else None
        raise ForwardRequired(f"http://{owner}" if owner else None, "the worker running the task")

    # -- where configs live: this worker's copy of the config topic -----------------------
    def connector_names(self) -> list[str]:
        return sorted(self.configs.state.connectors)

    def _config(self, name: str) -> dict[str, str]:
        props = self.configs.state.connectors.get(name)
        if props is None:
            raise not_found(name)
        return props

    def _task_configs_of(self, name: str) -> list[dict[str, str]]:
        self._config(name)
        return self.configs.state.tasks.get(name, [])  # written with references unresolved

    def _require_stopped(self, name: str) -> dict[str, str]:
        config = self._config(name)
        if self.configs.state.target(name) is not TargetState.STOPPED or self.configs.state.tasks.get(name):
            raise stopped_required(name)
        return config

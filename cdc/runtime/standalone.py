"""Standalone mode: one worker process runs every connector; the REST API drives it.

Kafka Connect semantics kept on purpose (users rely on them):

- one Connector instance plus up to `tasks.max` tasks per connector, each with its own status;
- a Connector instance that fails does not stop its tasks, and a task that fails does not
  fail its connector; `POST /connectors/{n}/restart` alone restarts only the Connector
  instance (KIP-745 keeps that for compatibility);
- a config update restarts the Connector instance; tasks restart only when their configs
  change, so a connector whose new config fails to start is FAILED while the old tasks run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from cdc.api.connector import Connector
from cdc.api.errors import ConfigException
from cdc.config.providers import ConfigTransformer, has_references, reverse_transform
from cdc.log.base import TopicPartition
from cdc.runtime import logging_context
from cdc.runtime.abstract_herder import AbstractHerder, config_secrets, keep_hidden_passwords
from cdc.runtime.herder import (
    AlreadyExistsError,
    NotFoundError,
    RestartRequest,
    TargetState,
    not_found,
    state_info,
    stopped_required,
)
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.traces import redact, status_trace
from cdc.runtime.worker import Worker
from cdc.storage.status import State, TaskStatus

log = logging.getLogger(__name__)


@dataclass
class _ConnectorState:
    name: str
    config: dict[str, str]  # as submitted: `${provider:...}` references stay unresolved
    target: TargetState = TargetState.STARTED
    connector: Connector | None = None
    task_configs: list[dict[str, str]] = field(default_factory=list)
    started_config: dict[str, str] | None = None  # the config the running tasks were built from


class _Context:
    """ConnectorContext handed to each Connector instance."""

    def __init__(self, herder: StandaloneHerder, name: str, instance: Connector) -> None:
        self._herder = herder
        self._name = name
        self._instance = instance

    def request_task_reconfiguration(self) -> None:
        self._herder.request_reconfiguration(self._name)

    def raise_error(self, error: Exception) -> None:
        # Only the live instance may fail its connector; a stale one's errors are ignored.
        state = self._herder.connectors.get(self._name)
        if state is not None and state.connector is self._instance:
            self._herder.connector_failed(self._name, error)


class StandaloneHerder(AbstractHerder):
    """Kafka's StandaloneHerder: configs in memory, every write applied here under one lock."""

    def __init__(
        self,
        worker: Worker,
        transformer: ConfigTransformer | None = None,
        tick_interval: float = 0.25,
        *,
        warn_unknown_keys: bool = True,
    ) -> None:
        super().__init__(worker, transformer)
        self.warn_unknown_keys = warn_unknown_keys  # `cdc run` reports them itself, with the job file's lines
        self.connectors: dict[str, _ConnectorState] = {}
        self._tick_interval = tick_interval
        self._ticker: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.worker.start()
        self._ticker = threading.Thread(target=self._tick_loop, name="herder-tick", daemon=True)
        self._ticker.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._ticker is not None:
            self._ticker.join(5)
        with self._lock:
            for name in list(self.connectors):
                self._stop_tasks(name)
                self._stop_connector_instance(self.connectors[name])
            self.connectors.clear()
        self.worker.stop()

    def _tick_loop(self) -> None:
        while not self._stopping.wait(self._tick_interval):
            try:
                self.tick()
            except Exception:
                log.exception("herder tick failed; retrying on the next tick")

    def tick(self) -> None:
        """Apply requested task reconfigurations and due automatic task restarts."""
        with self._lock:
            while self._reconfigure:
                state = self.connectors.get(self._reconfigure.pop())
                if state is not None and state.connector is not None:
                    self._reconfigure_tasks(state, force=False)
            for id in self.restarts.due(self._task_failures()):
                state = self.connectors.get(id.connector)
                if state is not None and state.target is TargetState.STARTED and id.task < len(state.task_configs):
                    log.info("Task %s: automatic restart attempt %d", id, self.restarts.attempts(id))
                    self._restart_task(state, id)

    def _task_failures(self) -> dict[ConnectorTaskId, bool]:
        return {id: t.failure is not None for id, t in self.worker.tasks.items()}

    # -- config ------------------------------------------------------------------------------
    def _resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """The config to run with; its provider values are remembered so traces and logs hide them."""
        resolved, _, secrets = self._transform(config)
        if config.get("name"):
            # and the values of its secret keys (cdc.api.sensitive), which a failure may quote too
            self.worker.secrets.set(config["name"], secrets | config_secrets(self.worker, resolved))
        return resolved

    def put_connector_config(
        self,
        config: Mapping[str, str],
        initial_state: TargetState | None = None,
        *,
        allow_replace: bool = True,
        trusted: bool = False,
    ) -> bool:
        """Create or replace a connector and (re)start it; True when it was created.

        Raises ConfigException with every invalid key (Kafka's 400 message) before anything starts.
        `trusted` is for configs from the operator's own files (`cdc standalone`'s arguments,
        `cdc run`): they skip SubmittedConfigPolicy, which every REST-submitted config passes.
        """
        config = {k: str(v) for k, v in config.items()}
        name = config.get("name", "")
        if not name:
            raise ConfigException('Missing required configuration "name" which has no default value.', "name")
        with self._lock:
            existing = self.connectors.get(name)
            if existing is not None:
                if not allow_replace:
                    raise AlreadyExistsError(f"Connector {name} already exists")
                config = keep_hidden_passwords(existing.config, config)
            self._check_config(config, existing.config if existing is not None else None, trusted)
            if existing is None:
                state = _ConnectorState(name, config, initial_state or TargetState.STARTED)
                self.connectors[name] = state
            else:
                state = existing
                self._stop_connector_instance(state)
                state.config = config
                if initial_state is not None:
                    state.target = initial_state
            self.restarts.forget_connector(name)
            self._apply_target(state, force_tasks=False)
            return existing is None

    def delete_connector(self, name: str) -> None:
        with self._lock:
            state = self._state(name)
            self._stop_tasks(name)
            self._stop_connector_instance(state)
            del self.connectors[name]
            self.restarts.forget_connector(name)
            self.worker.status_store.delete(name)
            self.worker.secrets.forget(name)

    # -- target states -----------------------------------------------------------------------
    def pause_connector(self, name: str) -> None:
        with self._lock:
            state = self._state(name)
            state.target = TargetState.PAUSED
            self._apply_target(state, force_tasks=False)

    def resume_connector(self, name: str) -> None:
        with self._lock:
            state = self._state(name)
            state.target = TargetState.STARTED
            self._apply_target(state, force_tasks=False)

    def stop_connector(self, name: str) -> None:
        """KIP-875 STOPPED: the Connector instance and every task are shut down; the config stays."""
        with self._lock:
            state = self._state(name)
            state.target = TargetState.STOPPED
            self._apply_target(state, force_tasks=False)

    def _apply_target(self, state: _ConnectorState, force_tasks: bool) -> None:
        if state.target is TargetState.STOPPED:
            self._stop_tasks(state.name)
            self._stop_connector_instance(state)
            for t in self.worker.status_store.tasks(state.name):
                self.worker.status_store.delete_task(state.name, t.task)
            state.task_configs = []
            state.started_config = None
            self._put_status(state.name, State.STOPPED)
            return
        if state.connector is None:
            if not self._start_connector_instance(state):
                return  # FAILED: the tasks keep running with their old configs, as in Kafka Connect
        elif state.target is TargetState.PAUSED:
            self._put_status(state.name, State.PAUSED)
        else:
            self._put_status(state.name, State.RUNNING)
        self._reconfigure_tasks(state, force=force_tasks)
        for id, task in list(self.worker.tasks.items()):
            if id.connector != state.name:
                continue
            if state.target is TargetState.PAUSED and not task.paused:
                task.pause()
            elif state.target is TargetState.STARTED and task.paused:
                task.resume()

    # -- the Connector instance --------------------------------------------------------------
    def _start_connector_instance(self, state: _ConnectorState) -> bool:
        try:
            resolved = self._resolve(state.config)
            instance = self.worker.new_connector(resolved)
            instance.initialize(_Context(self, state.name, instance))
            with logging_context.for_connector(state.name):  # its lines say `[name|worker] `
                instance.start(dict(resolved))
        except Exception as e:
            secrets = self._secrets(state.name)
            log.error("Connector %s failed to start: %s", state.name, redact(str(e), secrets))
            self._put_status(state.name, State.FAILED, status_trace(e, secrets))
            return False
        state.connector = instance
        self._put_status(state.name, State.PAUSED if state.target is TargetState.PAUSED else State.RUNNING)
        return True

    def _stop_connector_instance(self, state: _ConnectorState) -> None:
        instance, state.connector = state.connector, None
        if instance is None:
            return
        try:
            instance.stop()
        except Exception as e:
            log.warning("Connector %s: stop() raised %s", state.name, e)

    def connector_failed(self, name: str, error: Exception) -> None:
        """ConnectorContext.raise_error: the connector is FAILED; its tasks are not touched."""
        secrets = self._secrets(name)
        log.error("Connector %s failed: %s", name, redact(str(error), secrets))
        self._put_status(name, State.FAILED, status_trace(error, secrets))

    def request_reconfiguration(self, name: str) -> None:
        self._reconfigure.add(name)

    # -- tasks -------------------------------------------------------------------------------
    def _reconfigure_tasks(self, state: _ConnectorState, force: bool) -> None:
        assert state.connector is not None
        resolved = self._resolve(state.config)
        max_tasks = int(resolved.get("tasks.max", "1"))
        try:
            with logging_context.for_connector(state.name):
                configs = state.connector.task_configs(max_tasks)
        except Exception as e:
            self.connector_failed(state.name, e)
            return
        if len(configs) > max_tasks and resolved.get("tasks.max.enforce", "true").lower() == "true":
            self.connector_failed(
                state.name,
                ConfigException(
                    f"The connector {state.name} has generated {len(configs)} tasks, which is greater than "
                    f"{max_tasks}, the maximum number of tasks it is configured to create. Lower the connector's "
                    "task count or raise tasks.max",
                    "tasks.max",
                ),
            )
            return
        running = {id for id in self.worker.tasks if id.connector == state.name}
        unchanged = configs == state.task_configs and resolved == state.started_config and len(running) == len(configs)
        if unchanged and not force:
            return
        self._stop_tasks(state.name)
        for t in self.worker.status_store.tasks(state.name):
            if t.task >= len(configs):
                self.worker.status_store.delete_task(state.name, t.task)
        state.task_configs = configs
        state.started_config = resolved
        for i in range(len(configs)):
            self._start_task(state, ConnectorTaskId(state.name, i))

    def _start_task(self, state: _ConnectorState, id: ConnectorTaskId) -> None:
        assert state.started_config is not None
        try:
            self.worker.start_task(
                id,
                state.started_config,
                state.task_configs[id.task],
                len(state.task_configs),
                paused=state.target is TargetState.PAUSED,
            )
        except Exception as e:
            self._task_start_failed(id, e)

    def _stop_tasks(self, name: str) -> None:
        self.worker.stop_and_await_tasks([id for id in self.worker.tasks if id.connector == name])

    def _restart_task(self, state: _ConnectorState, id: ConnectorTaskId) -> None:
        self.worker.stop_and_await_tasks([id])
        if state.started_config is None:
            state.started_config = self._resolve(state.config)
        self._start_task(state, id)

    def restart_task(self, id: ConnectorTaskId) -> None:
        """`POST /connectors/{n}/tasks/{id}/restart`: that task only; the connector's state is untouched."""
        with self._lock:
            state = self._state(id.connector)
            if id.task < 0 or id.task >= len(state.task_configs):
                raise NotFoundError(f"Task {id} not found")
            self.restarts.forget(id)
            self._restart_task(state, id)

    def restart_connector(self, name: str) -> None:
        """`POST /connectors/{n}/restart` without parameters: the Connector instance only (KIP-745)."""
        with self._lock:
            state = self._state(name)
            self._restart_connector(state)

    def _restart_connector(self, state: _ConnectorState) -> None:
        if state.target is TargetState.STOPPED:
            self._put_status(state.name, State.STOPPED)
            return
        self._stop_connector_instance(state)
        if self._start_connector_instance(state):
            self._reconfigure_tasks(state, force=False)

    def restart_connector_and_tasks(self, request: RestartRequest) -> dict[str, Any]:
        """KIP-745: restart what the request selects; returns the status with those as RESTARTING."""
        with self._lock:
            state = self._state(request.connector)
            plan = self.connector_status(request.connector)
            restart_connector = request.restart_connector(plan["connector"]["state"])
            restart_tasks = [t["id"] for t in plan["tasks"] if request.restart_task(t["state"])]
            restarting = state_info(State.RESTARTING.value, self.worker.worker_id, None)
            if restart_connector:
                plan["connector"] = dict(restarting)
                self._put_status(state.name, State.RESTARTING)
            plan["tasks"] = [{"id": t["id"], **restarting} if t["id"] in restart_tasks else t for t in plan["tasks"]]
            for task_id in restart_tasks:
                self.worker.status_store.put(TaskStatus(state.name, task_id, State.RESTARTING, self.worker.worker_id))
            if restart_connector:
                self._restart_connector(state)
            for task_id in restart_tasks:
                id = ConnectorTaskId(state.name, task_id)
                self.restarts.forget(id)
                if task_id < len(state.task_configs):
                    self._restart_task(state, id)
            return plan

    # -- where configs live: in memory ------------------------------------------------------
    def _rest_lock(self) -> AbstractContextManager[Any]:
        return self._lock

    def _state(self, name: str) -> _ConnectorState:
        state = self.connectors.get(name)
        if state is None:
            raise not_found(name)
        return state

    def connector_names(self) -> list[str]:
        with self._lock:
            return sorted(self.connectors)

    def _config(self, name: str) -> dict[str, str]:
        return self._state(name).config

    def _task_configs_of(self, name: str) -> list[dict[str, str]]:
        state = self._state(name)
        # Task configs come from the resolved config: show the references, not what they resolved to.
        referenced = [k for k, v in state.config.items() if has_references(v)]
        return [reverse_transform(state.config, referenced, c) for c in state.task_configs]

    def _require_stopped(self, name: str) -> dict[str, str]:
        state = self._state(name)
        if state.target is not TargetState.STOPPED or any(id.connector == name for id in self.worker.tasks):
            raise stopped_required(name)
        return state.config


__all__ = ["StandaloneHerder", "TargetState", "TopicPartition"]

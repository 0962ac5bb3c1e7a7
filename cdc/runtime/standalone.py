"""Standalone mode: one worker process runs the connectors given on its command line."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from cdc.api.connector import Connector
from cdc.api.errors import ConfigException, ConnectException
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.worker import Worker
from cdc.storage.status import ConnectorStatus, State

log = logging.getLogger(__name__)


@dataclass
class _ConnectorState:
    name: str
    config: dict[str, str]
    connector: Connector
    task_configs: list[dict[str, str]] = field(default_factory=list)


class _Context:
    """ConnectorContext handed to each Connector instance."""

    def __init__(self, herder: StandaloneHerder, name: str) -> None:
        self._herder = herder
        self._name = name

    def request_task_reconfiguration(self) -> None:
        self._herder.request_reconfiguration(self._name)

    def raise_error(self, error: Exception) -> None:
        self._herder.connector_failed(self._name, error)


class StandaloneHerder:
    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.connectors: dict[str, _ConnectorState] = {}
        self._lock = threading.RLock()
        self._reconfigure: set[str] = set()

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        with self._lock:
            for name in list(self.connectors):
                self._stop_connector(name)
        self.worker.stop()

    def put_connector_config(self, config: Mapping[str, str]) -> None:
        """Validate, then start the connector and its tasks; raises ConfigException naming the key."""
        config = dict(config)
        name = config.get("name", "")
        if not name:
            raise ConfigException('Missing required configuration "name" which has no default value.', "name")
        self.worker.ensure_valid(config)
        with self._lock:
            if name in self.connectors:
                self._stop_connector(name)
            connector = self.worker.new_connector(config)
            state = _ConnectorState(name, config, connector)
            self.connectors[name] = state
            connector.initialize(_Context(self, name))
            try:
                connector.start(dict(config))
            except Exception as e:
                self.connector_failed(name, e)
                raise ConnectException(f"connector {name} failed to start: {e}") from e
            self._put_status(name, State.RUNNING)
            self._start_tasks(state)

    def _start_tasks(self, state: _ConnectorState) -> None:
        max_tasks = int(state.config.get("tasks.max", "1"))
        configs = state.connector.task_configs(max_tasks)
        if len(configs) > max_tasks and state.config.get("tasks.max.enforce", "true").lower() == "true":
            raise ConnectException(
                f"connector {state.name} generated {len(configs)} task configs but tasks.max is {max_tasks}"
            )
        state.task_configs = configs
        for i, task_config in enumerate(configs):
            self.worker.start_task(ConnectorTaskId(state.name, i), state.config, task_config, len(configs))

    def _stop_connector(self, name: str) -> None:
        state = self.connectors.pop(name, None)
        if state is None:
            return
        ids = [id for id in self.worker.tasks if id.connector == name]
        self.worker.stop_and_await_tasks(ids)
        try:
            state.connector.stop()
        except Exception as e:
            log.warning("connector %s: stop() raised %s", name, e)
        self._put_status(name, State.UNASSIGNED)

    def restart_task(self, id: ConnectorTaskId) -> None:
        with self._lock:
            state = self.connectors[id.connector]
            self.worker.stop_and_await_tasks([id])
            self.worker.start_task(id, state.config, state.task_configs[id.task], len(state.task_configs))

    def request_reconfiguration(self, name: str) -> None:
        self._reconfigure.add(name)

    def tick(self) -> None:
        """Apply pending task reconfigurations (called periodically by the main loop)."""
        with self._lock:
            while self._reconfigure:
                name = self._reconfigure.pop()
                state = self.connectors.get(name)
                if state is None:
                    continue
                new = state.connector.task_configs(int(state.config.get("tasks.max", "1")))
                if new != state.task_configs:
                    ids = [id for id in self.worker.tasks if id.connector == name]
                    self.worker.stop_and_await_tasks(ids)
                    self._start_tasks(state)

    def connector_failed(self, name: str, error: Exception) -> None:
        log.error("connector %s failed: %s", name, error)
        self._put_status(name, State.FAILED, f"{type(error).__name__}: {error}")

    def _put_status(self, name: str, state: State, trace: str | None = None) -> None:
        self.worker.status_store.put(ConnectorStatus(name, state, self.worker.worker_id, trace))

    def failed_tasks(self) -> list[ConnectorTaskId]:
        return [id for id, t in self.worker.tasks.items() if t.failure is not None]

"""Kafka Connect's AbstractHerder: what the standalone and the distributed herder do the same way.

Both answer the REST API's reads alike (ConnectorInfo, configs with secrets hidden, the
status assembled from the status store, task configs and states, KIP-558 active topics,
KIP-875 offsets), validate submitted configs alike (SubmittedConfigPolicy, the worker's
ConfigDefs, unknown-key warnings, provider values redacted) and create or patch a connector
by reading and then delegating to `put_connector_config`.

A subclass says only what differs:

- where configs live: `connector_names`, `_config` (the submitted config) and
  `_task_configs_of` (the task configs, references unresolved): in memory for the standalone
  herder, this worker's copy of the config topic for the distributed one;
- how a config is resolved for running (`_resolve`, which remembers the secrets it saw);
- when offsets may change (`_require_stopped`);
- how writes are applied (`put_connector_config`, delete, target states, restarts), who may
  apply them (`_require_leader`: the distributed herder forwards to the leader) and what a
  REST call holds meanwhile (`_rest_lock`).
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from cdc.api.errors import ConfigException
from cdc.api.sensitive import keep_hidden, mask_config
from cdc.config.providers import ConfigTransformer
from cdc.config.validation import invalid_config_message
from cdc.runtime.connector_offsets import ConnectorOffsets
from cdc.runtime.herder import (
    AlreadyExistsError,
    BadRequestError,
    NotFoundError,
    TargetState,
    state_info,
)
from cdc.runtime.submitted_config import SubmittedConfigPolicy
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.task_restarts import TaskRestartBackoff
from cdc.runtime.traces import redact, redact_infos, status_trace
from cdc.runtime.worker import Worker, connector_kind
from cdc.storage.status import ConnectorStatus, State, TaskStatus

log = logging.getLogger(__name__)

OFFSETS_ALTERED = (
    "The Connect framework-managed offsets for this connector have been altered successfully. "
    "However, if this connector manages offsets externally, they will need to be manually altered "
    "in the system that the connector uses."
)
OFFSETS_RESET = (
    "The Connect framework-managed offsets for this connector have been reset successfully. "
    "However, if this connector manages offsets externally, they will need to be manually reset "
    "in the system that the connector uses."
)


class AbstractHerder(ABC):
    """The read side and validation of Kafka's AbstractHerder; see the module docstring for the hooks."""

    warn_unknown_keys: bool = True
    """Log Kafka's "supplied but isn't a known config" per unknown key on create and update
    (`cdc run` turns it off: it reports them itself, with the job file's lines)."""

    def __init__(self, worker: Worker, transformer: ConfigTransformer | None) -> None:
        self.worker = worker
        self.transformer = transformer
        self.restarts = TaskRestartBackoff.from_worker_config(worker.config)
        self.offsets = ConnectorOffsets(worker)
        self.policy = SubmittedConfigPolicy.from_worker_config(worker.config)
        self._lock = threading.RLock()
        self._reconfigure: set[str] = set()

    # -- what a subclass says ----------------------------------------------------------------
    @abstractmethod
    def connector_names(self) -> list[str]:
        """Every connector's name, sorted."""

    @abstractmethod
    def _config(self, name: str) -> dict[str, str]:
        """The config as submitted (`${provider:...}` references unresolved); `not_found` if none."""

    @abstractmethod
    def _task_configs_of(self, name: str) -> list[dict[str, str]]:
        """The connector's current task configs, references shown as written, not their values."""

    @abstractmethod
    def _require_stopped(self, name: str) -> dict[str, str]:
        """The config of a connector whose offsets may change now; `stopped_required` otherwise."""

    @abstractmethod
    def _resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """The config to run with; the secrets it carries are remembered so traces and logs hide them."""

    @abstractmethod
    def put_connector_config(
        self, config: Mapping[str, str], initial_state: TargetState | None = None, *, trusted: bool = False
    ) -> bool:
        """Create or replace a connector; True when it was created (see cdc.runtime.herder.Herder)."""

    def _require_leader(self) -> None:
        """Raise ForwardRequired where another worker must apply a write; a lone worker applies all."""

    def _rest_lock(self) -> AbstractContextManager[Any]:
        """What a REST call holds while it reads or applies: nothing unless a subclass says so."""
        return nullcontext()

    # -- reads -------------------------------------------------------------------------------
    def connector_type(self, name: str) -> str:
        return connector_type_of(self.worker, self._config(name))

    def connector_config(self, name: str) -> dict[str, str]:
        """The submitted config with PASSWORD-typed values shown as `[hidden]`."""
        with self._rest_lock():
            return self._masked(self._config(name))

    def _masked(self, config: Mapping[str, str]) -> dict[str, str]:
        return mask_passwords(self.worker, config)

    def connector_info(self, name: str) -> dict[str, Any]:
        with self._rest_lock():
            config = self._config(name)
            tasks = self._task_configs_of(name)
            return {
                "name": name,
                "config": self._masked(config),
                "tasks": [{"connector": name, "task": i} for i in range(len(tasks))],
                "type": connector_type_of(self.worker, config),
            }

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        with self._rest_lock():
            return [
                {"id": {"connector": name, "task": i}, "config": self._masked(c)}
                for i, c in enumerate(self._task_configs_of(name))
            ]

    def connector_status(self, name: str) -> dict[str, Any]:
        """Kafka's ConnectorStateInfo; tasks beyond the current task count (stale statuses) are left out."""
        with self._rest_lock():
            config = self._config(name)
            count = len(self._task_configs_of(name))
            store = self.worker.status_store
            status = store.get_connector(name)
            tasks = {t.task: t for t in store.tasks(name) if t.task < count}
            return {
                "name": name,
                "connector": self._state_info(status),
                "tasks": [{"id": i, **self._state_info(tasks.get(i))} for i in range(count)],
                "type": connector_type_of(self.worker, config),
            }

    def _state_info(self, status: ConnectorStatus | TaskStatus | None) -> dict[str, Any]:
        """The status as Kafka's AbstractState. None (configured, but no worker has reported on it
        yet: just created, or not yet started after a rebalance) reads UNASSIGNED, reported by
        this worker, so a client can follow a connector from the moment its create succeeded."""
        if status is None:
            return state_info(State.UNASSIGNED.value, self.worker.worker_id, None)
        return state_info(status.state.value, status.worker_id, status.trace)

    def task_status(self, id: ConnectorTaskId) -> dict[str, Any]:
        with self._rest_lock():
            count = len(self._task_configs_of(id.connector))
            t = self.worker.status_store.get_task(id.connector, id.task)
            if t is None and not 0 <= id.task < count:
                raise NotFoundError(f"No status found for task {id}")
            return {"id": id.task, **self._state_info(t)}

    def connector_topics(self, name: str) -> list[str]:
        with self._rest_lock():
            self._config(name)
            return self.worker.status_store.topics(name)

    def reset_connector_topics(self, name: str) -> None:
        with self._rest_lock():
            self._config(name)
            self.worker.status_store.delete_topics(name)

    # -- offsets (KIP-875) -------------------------------------------------------------------
    def connector_offsets(self, name: str) -> dict[str, Any]:
        with self._rest_lock():
            config = self._config(name)
            return {"offsets": self.offsets.get(name, self._resolve(config), connector_type_of(self.worker, config))}

    def alter_connector_offsets(self, name: str, offsets: list[Mapping[str, Any]]) -> dict[str, str]:
        with self._rest_lock():
            self._require_leader()
            config = self._require_stopped(name)
            self.offsets.alter(name, self._resolve(config), connector_type_of(self.worker, config), offsets)
            return {"message": OFFSETS_ALTERED}

    def reset_connector_offsets(self, name: str) -> dict[str, str]:
        with self._rest_lock():
            self._require_leader()
            config = self._require_stopped(name)
            self.offsets.reset(name, self._resolve(config), connector_type_of(self.worker, config))
            return {"message": OFFSETS_RESET}

    # -- validation --------------------------------------------------------------------------
    def _transform(self, config: Mapping[str, str]) -> tuple[dict[str, str], frozenset[str], frozenset[str]]:
        """The resolved config, the keys that had references, and the values providers returned."""
        if self.transformer is None:
            return dict(config), frozenset(), frozenset()
        result = self.transformer.transform(config)
        return result.data, result.resolved_keys, result.secrets

    def validate_connector_config(self, config: Mapping[str, str], *, trusted: bool = False) -> dict[str, Any]:
        """The `PUT /connector-plugins/{type}/config/validate` body; secrets stay masked.

        Untrusted (REST) configs pass SubmittedConfigPolicy first: providers and paths.
        """
        return self._validate(config, None, trusted)

    def _validate(self, config: Mapping[str, str], previous: Mapping[str, str] | None, trusted: bool) -> dict[str, Any]:
        """Untrusted (REST) configs are also checked against the live source when every key is valid
        (`Connector.validate_connection`): a wrong password or host is refused with 400 there, as
        Kafka Connect refuses it through Debezium's `validate`, not accepted with 201 to fail in the
        task. The operator's own files (`cdc standalone` arguments, `cdc run`) start without it:
        their task reports such a failure in its status, and `cdc validate` checks a job beforehand."""
        if not trusted:
            self.policy.check_references(config, previous)
        resolved, secret_keys, secrets = self._transform(config)
        if not trusted:
            self.policy.check_paths(config, resolved, previous)
        infos = self.worker.validate_infos(resolved, masked_keys=secret_keys, connect=not trusted)
        return redact_infos(infos, secrets)  # `Invalid value <secret> for configuration ...`

    def _check_config(self, config: Mapping[str, str], previous: Mapping[str, str] | None, trusted: bool) -> None:
        """Raise ConfigException with every invalid key (Kafka's 400 message); warn of unknown keys."""
        infos = self._validate(config, previous, trusted)
        if infos["error_count"]:
            raise ConfigException(invalid_config_message(infos))
        if not trusted:
            self.policy.prepare(config)  # state.dir/connectors/<name>: where the files it names live
        if self.warn_unknown_keys:
            log_config_warnings(config.get("name", ""), infos)

    # -- writes that read, then delegate -----------------------------------------------------
    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState = TargetState.STARTED,
        *,
        trusted: bool = False,
    ) -> dict[str, Any]:
        with self._rest_lock():
            self._require_leader()
            if name in self.connector_names():
                raise AlreadyExistsError(f"Connector {name} already exists")
            self.put_connector_config({**config, "name": name}, initial_state, trusted=trusted)
            return self.connector_info(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> dict[str, Any]:
        """KIP-477: merge `patch` into the config; a null value deletes the key."""
        with self._rest_lock():
            self._require_leader()
            # From the masked config, so a stored secret the patch does not give again reaches
            # put_connector_config as `[hidden]` and stays bound to its destination (keep_hidden).
            merged = self._masked(self._config(name))
            for k, v in patch.items():
                if v is None:
                    merged.pop(k, None)
                else:
                    merged[k] = str(v)
            if merged.get("name", name) != name:
                raise BadRequestError(
                    f"Connector name configuration ({merged['name']}) doesn't match connector name in the URL ({name})"
                )
            self.put_connector_config({**merged, "name": name})
            return self.connector_info(name)

    # -- status and secrets ------------------------------------------------------------------
    def _put_status(self, name: str, state: State, trace: str | None = None) -> None:
        self.worker.status_store.put(ConnectorStatus(name, state, self.worker.worker_id, trace))

    def _secrets(self, name: str) -> frozenset[str]:
        """The provider values and secret-key values of `name`'s configs, which traces and logs hide."""
        return self.worker.secrets.of(name)

    def _trace(self, name: str, e: BaseException) -> str:
        return status_trace(e, self._secrets(name))

    def _task_start_failed(self, id: ConnectorTaskId, e: Exception) -> None:
        """A task that could not start is FAILED with its trace; the connector is not touched."""
        secrets = self._secrets(id.connector)
        log.error("Task %s failed to start: %s", id, redact(str(e), secrets))
        self.worker.status_store.put(
            TaskStatus(id.connector, id.task, State.FAILED, self.worker.worker_id, status_trace(e, secrets))
        )


def connector_type_of(worker: Worker, config: Mapping[str, str]) -> str:
    """`source`, `sink`, or `unknown` when the config names no installed connector class."""
    try:
        return connector_kind(worker.connector_class(config)).value
    except ConfigException:
        return "unknown"


def mask_passwords(worker: Worker, config: Mapping[str, str]) -> dict[str, str]:
    """Secret values as `[hidden]`: keys a ConfigDef (connector, common or SMT) declares PASSWORD and
    keys shaped like secrets (cdc.api.sensitive); a `${provider:...}` reference shows as written."""
    return mask_config(config, worker.validator.password_keys(config))


def keep_hidden_passwords(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """GET shows secrets as [hidden]; PUTting that back must not replace the stored secret."""
    return keep_hidden(old, new)


def config_secrets(worker: Worker, config: Mapping[str, str]) -> frozenset[str]:
    """The values of `config`'s secret keys, which status traces and log lines must not show."""
    return worker.validator.secret_values(config)


def log_config_warnings(name: str, infos: Mapping[str, Any]) -> None:
    """Kafka's "The configuration ... was supplied but isn't a known config." for each unknown key
    a validation found (`infos["warnings"]`), once per create or update of the connector."""
    for warning in infos.get("warnings") or []:
        log.warning("Connector %s: %s", name, warning["message"])

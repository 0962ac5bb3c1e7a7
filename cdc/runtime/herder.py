"""What every herder shares: the `Herder` protocol the REST layer and the CLI call, the errors the
REST layer maps to HTTP codes, target states, restart plans.

Kafka Connect's `Herder` interface is what its REST resources call; ours is the same
shape so the REST layer serves standalone and distributed workers alike. What both herders
do the same way lives once in cdc.runtime.abstract_herder (Kafka's AbstractHerder).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cdc.runtime.task import ConnectorTaskId
    from cdc.runtime.worker import Worker


class HerderError(Exception):
    """An error the REST layer returns as `{"error_code", "message"}` with `status`."""

    status = 500


class BadRequestError(HerderError):
    status = 400


class NotFoundError(HerderError):
    status = 404


class AlreadyExistsError(HerderError):
    status = 409


class ForwardRequired(HerderError):
    """This worker cannot serve the request; `url` (the leader, or a task's worker) can."""

    status = 409

    def __init__(self, url: str | None, why: str = "the leader") -> None:
        super().__init__(
            f"Cannot complete the request here and {why} is not known yet (a rebalance is probably in progress); "
            "retry in a few seconds"
        )
        self.url = url


class TargetState(Enum):
    """What the user asked for; the connector's status says what actually happens."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    @classmethod
    def from_initial_state(cls, value: str | None) -> TargetState:
        """POST /connectors `initial_state` (KIP-980): RUNNING, PAUSED or STOPPED."""
        if value is None:
            return cls.STARTED
        mapping = {"RUNNING": cls.STARTED, "PAUSED": cls.PAUSED, "STOPPED": cls.STOPPED}
        state = mapping.get(str(value).upper())
        if state is None:
            raise BadRequestError(
                f"Invalid initial state {value!r}: use one of RUNNING, PAUSED or STOPPED (or omit it for RUNNING)"
            )
        return state


@dataclass(frozen=True)
class RestartRequest:
    """KIP-745: which of a connector's instances a `POST /connectors/{n}/restart` restarts."""

    connector: str
    only_failed: bool = False
    include_tasks: bool = False

    @property
    def connector_only(self) -> bool:
        """The pre-KIP-745 request: restart the Connector instance only, answer 204."""
        return not self.only_failed and not self.include_tasks

    def restart_connector(self, state: str) -> bool:
        return not self.only_failed or state == "FAILED"

    def restart_task(self, state: str) -> bool:
        return self.include_tasks and (not self.only_failed or state == "FAILED")


def not_found(connector: str) -> NotFoundError:
    return NotFoundError(f"Connector {connector} not found")


def stopped_required(connector: str) -> BadRequestError:
    return BadRequestError(
        "Connectors must be in the STOPPED state before their offsets can be modified. This can be done "
        f"for the specified connector by issuing a 'PUT' request to the '/connectors/{connector}/stop' endpoint"
    )


def state_info(state: str, worker_id: str, trace: str | None) -> dict[str, Any]:
    """Kafka's ConnectorStateInfo.AbstractState: `trace` only when there is one."""
    out: dict[str, Any] = {"state": state, "worker_id": worker_id}
    if trace:
        out["trace"] = trace
    return out


class Herder(Protocol):
    """Kafka Connect's `Herder`: the one door to a Connect cluster's connectors and tasks.

    The REST resources (cdc.rest.resources) and the CLI are thin wrappers over it, so a
    standalone worker (cdc.runtime.standalone, configs in memory) and a distributed one
    (cdc.runtime.distributed.herder, configs in the config topic) serve the same API.

    What a herder guarantees to its callers:

    - a method that names a connector (or task) that does not exist raises `NotFoundError`
      (404); a malformed request raises `BadRequestError` (400), an invalid config
      `ConfigException` with every invalid key (400), a name taken `AlreadyExistsError` (409);
    - in distributed mode a write that only the leader (or the worker running a task) can
      apply raises `ForwardRequired` with that worker's URL, and the REST layer forwards it;
    - every config it returns has its secret values shown as `[hidden]`, and a
      `${provider:...}` reference shows as written, never what it resolved to;
    - calls may block (stopping a task waits for it): the REST layer runs them on a thread pool.
    """

    worker: Worker
    """The worker whose plugin registry, status store and tasks this herder drives."""

    # -- reads -------------------------------------------------------------------------------
    def connector_names(self) -> list[str]:
        """`GET /connectors`: every connector's name, sorted."""
        ...

    def connector_info(self, name: str) -> dict[str, Any]:
        """`GET /connectors/{name}`: Kafka's ConnectorInfo, `{"name", "config", "tasks", "type"}`."""
        ...

    def connector_config(self, name: str) -> dict[str, str]:
        """`GET /connectors/{name}/config`: the submitted config, secrets `[hidden]`."""
        ...

    def connector_status(self, name: str) -> dict[str, Any]:
        """`GET /connectors/{name}/status`: Kafka's ConnectorStateInfo from the status store;
        `NotFoundError` while the connector has no status yet."""
        ...

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        """`GET /connectors/{name}/tasks`: `[{"id": {"connector", "task"}, "config"}]`, secrets hidden."""
        ...

    def task_status(self, id: ConnectorTaskId) -> dict[str, Any]:
        """`GET /connectors/{name}/tasks/{id}/status`: one task's `{"id", "state", "worker_id", "trace"?}`."""
        ...

    def connector_topics(self, name: str) -> list[str]:
        """KIP-558 `GET /connectors/{name}/topics`: the topics the connector has used."""
        ...

    def reset_connector_topics(self, name: str) -> None:
        """KIP-558 `PUT /connectors/{name}/topics/reset`: forget the connector's active topics."""
        ...

    def validate_connector_config(self, config: Mapping[str, str], *, trusted: bool = False) -> dict[str, Any]:
        """`PUT /connector-plugins/{type}/config/validate`: Kafka's ConfigInfos, secrets masked.

        Untrusted (REST) configs pass the worker's SubmittedConfigPolicy (providers, paths) first and,
        when every key is valid, the connector's live check (`Connector.validate_connection`)."""
        ...

    # -- offsets (KIP-875) -------------------------------------------------------------------
    def connector_offsets(self, name: str) -> dict[str, Any]:
        """`GET /connectors/{name}/offsets`: `{"offsets": [{"partition", "offset"}]}`."""
        ...

    def alter_connector_offsets(self, name: str, offsets: list[Mapping[str, Any]]) -> dict[str, str]:
        """`PATCH /connectors/{name}/offsets`: only for a STOPPED connector; `{"message"}`."""
        ...

    def reset_connector_offsets(self, name: str) -> dict[str, str]:
        """`DELETE /connectors/{name}/offsets`: only for a STOPPED connector; `{"message"}`."""
        ...

    # -- writes ------------------------------------------------------------------------------
    def create_connector(
        self, name: str, config: Mapping[str, str], initial_state: TargetState = TargetState.STARTED
    ) -> dict[str, Any]:
        """`POST /connectors`: create and start (KIP-980 `initial_state`); the new ConnectorInfo."""
        ...

    def put_connector_config(
        self, config: Mapping[str, str], initial_state: TargetState | None = None, *, trusted: bool = False
    ) -> bool:
        """`PUT /connectors/{name}/config`: create or replace; True when it was created.

        A `[hidden]` value keeps the stored secret. `trusted` configs (the operator's own files,
        not the REST API) skip SubmittedConfigPolicy and the connector's live check."""
        ...

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> dict[str, Any]:
        """KIP-477 `PATCH /connectors/{name}/config`: merge `patch` (null deletes a key); the ConnectorInfo."""
        ...

    def delete_connector(self, name: str) -> None:
        """`DELETE /connectors/{name}`: stop it and forget its config and status (its offsets stay)."""
        ...

    def pause_connector(self, name: str) -> None:
        """`PUT /connectors/{name}/pause`: target state PAUSED; the connector and its tasks pause."""
        ...

    def resume_connector(self, name: str) -> None:
        """`PUT /connectors/{name}/resume`: target state STARTED, from PAUSED or STOPPED."""
        ...

    def stop_connector(self, name: str) -> None:
        """KIP-875 `PUT /connectors/{name}/stop`: the instance and every task shut down; the config stays."""
        ...

    def restart_connector(self, name: str) -> None:
        """`POST /connectors/{name}/restart` without parameters: the Connector instance only."""
        ...

    def restart_connector_and_tasks(self, request: RestartRequest) -> dict[str, Any]:
        """KIP-745: restart what `request` selects; the status with those instances RESTARTING."""
        ...

    def restart_task(self, id: ConnectorTaskId) -> None:
        """`POST /connectors/{name}/tasks/{id}/restart`: that task only."""
        ...

    # -- lifecycle (the CLI) -----------------------------------------------------------------
    def stop(self) -> None:
        """Stop every connector and task this worker runs, then the worker (the CLI, on exit).

        `start` is not part of the protocol: a distributed herder starts with its advertised URL."""
        ...

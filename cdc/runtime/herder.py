"""What every herder shares: the errors the REST layer maps to HTTP codes, target states, restart plans.

Kafka Connect's `Herder` interface is what its REST resources call; ours is the same
shape so the REST layer serves standalone and distributed workers alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class HerderError(Exception):
    """An error the REST layer returns as `{"error_code", "message"}` with `status`."""

    status = 500


class BadRequestError(HerderError):
    status = 400


class NotFoundError(HerderError):
    status = 404


class AlreadyExistsError(HerderError):
    status = 409


class RebalanceNeededError(HerderError):
    """Kafka's 409 while the group rebalances or a request reached a worker that cannot serve it."""

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

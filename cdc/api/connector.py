"""Connector and task life cycle (Kafka Connect's `connector` package)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from cdc.api.config import ConfigDef, ConfigValue

T = TypeVar("T")


class ConnectorContext(Protocol):
    """What a connector may ask of the runtime."""

    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call `task_configs` again (for example: new tables appeared)."""

    def raise_error(self, error: Exception) -> None:
        """Fail the connector from a background thread of its own."""


class Task(ABC):
    """One unit of work; the runtime may run many per connector."""

    def version(self) -> str:
        return "unknown"

    @abstractmethod
    def start(self, props: dict[str, str]) -> None: ...

    @abstractmethod
    def stop(self) -> None:
        """Signal the task to stop; may be called from another thread while it polls."""


class Connector(ABC):
    """Splits a job into task configs and declares its configuration.

    The runtime runs exactly one Connector instance per configured connector and
    `tasks.max` or fewer Task instances, each with its own status.
    """

    context: ConnectorContext | None = None

    def initialize(self, context: ConnectorContext) -> None:
        self.context = context

    def version(self) -> str:
        return "unknown"

    @abstractmethod
    def start(self, props: dict[str, str]) -> None: ...

    @abstractmethod
    def task_class(self) -> type[Task]: ...

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def config(self) -> ConfigDef: ...

    def validate(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key results; override to add cross-field checks (for example a live connection)."""
        return self.config().validate(connector_configs)


def group_partitions(elements: Sequence[T], num_groups: int) -> list[list[T]]:
    """Split elements into `num_groups` contiguous, nearly equal groups (ConnectorUtils)."""
    if num_groups <= 0:
        raise ValueError("Number of groups must be positive.")
    per, extra = divmod(len(elements), num_groups)
    groups: list[list[T]] = []
    start = 0
    for i in range(num_groups):
        size = per + (1 if i < extra else 0)
        groups.append(list(elements[start : start + size]))
        start += size
    return groups


def config_value_errors(values: list[ConfigValue]) -> dict[str, list[str]]:
    """Only the keys that have errors, for a compact report."""
    return {v.name: list(v.errors) for v in values if v.errors}


__all__ = [
    "Connector",
    "ConnectorContext",
    "Task",
    "config_value_errors",
    "group_partitions",
]

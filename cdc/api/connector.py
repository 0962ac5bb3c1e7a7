"""Connector and task life cycle (Kafka Connect's `connector` package).

A plugin ships a `Connector` (one per configured connector, it plans the work) and a `Task`
class (the runtime runs up to `tasks.max` of them, each doing a share of the work). Sources
subclass `cdc.api.source.SourceConnector`/`SourceTask`, sinks `cdc.api.sink.SinkConnector`/`SinkTask`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from cdc.api.config import ConfigDef, ConfigValue

T = TypeVar("T")


class ConnectorContext(Protocol):
    """What a running connector may ask of the runtime (Kafka Connect's ConnectorContext).

    The runtime hands one to `Connector.initialize` before `start`. Both methods are safe to call
    from a thread the connector owns (for example one that watches the source for new tables).
    """

    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call `task_configs` again (for example: new tables appeared).

        The runtime calls it soon after, on its own thread, and restarts the tasks only if the
        returned configs differ from the running ones.
        """

    def raise_error(self, error: Exception) -> None:
        """Fail the connector from a background thread of its own.

        The connector's status becomes FAILED with `error` as its trace; running tasks are left
        alone. Calls from an instance the runtime has already replaced are ignored.
        """


class Task(ABC):
    """One unit of work; the runtime may run many per connector (Kafka Connect's Task).

    The runtime creates each task with no arguments, calls `initialize(context)` and then
    `start(props)` with one of the dicts `Connector.task_configs` returned, all on the task's own
    thread. Tasks may run in another process than their connector (`task.isolation=process`), so
    they must get everything they need from `props` and their context, never from the
    Connector instance.
    """

    def version(self) -> str:
        """The plugin's version, as listed by `cdc plugins list`; usually the connector's version."""
        return "unknown"

    @abstractmethod
    def start(self, props: dict[str, str]) -> None:
        """Parse `props` (one of the connector's task configs, all values strings) and open resources.

        Called once, on the task's thread, after `initialize`. Raising fails the task: raise a
        ConfigException naming the key for a bad setting, a ConnectException with advice for an
        unreachable system.
        """

    @abstractmethod
    def stop(self) -> None:
        """Signal the task to stop; may be called from another thread while it polls.

        See `SourceTask` and `SinkTask` for when each runtime calls it; it must return quickly
        and must not fail when called before `start` finished.
        """


class Connector(ABC):
    """Splits a job into task configs and declares its configuration (Kafka Connect's Connector).

    The runtime runs exactly one started Connector instance per configured connector and
    `tasks.max` or fewer Task instances, each with its own status. Its life cycle:
    `initialize(context)`, `start(props)`, then `task_configs(max_tasks)` (again whenever the
    connector calls `context.request_task_reconfiguration()` or its config changes), and `stop()`
    when the connector is deleted, stopped or reconfigured.

    The runtime also creates throwaway instances, never initialized or started, to call
    `version`, `config`, `validate` and `task_class`. The class must therefore be constructible
    with no arguments, and those four methods must not depend on `start`.
    """

    context: ConnectorContext | None = None

    def initialize(self, context: ConnectorContext) -> None:
        """Receive the runtime's context before `start`; overrides must keep `self.context` set."""
        self.context = context

    def version(self) -> str:
        """The plugin's version, as `cdc plugins list` and `GET /connector-plugins` show it.

        "unknown" (the default) makes the runtime show the installed distribution's version.
        """
        return "unknown"

    @abstractmethod
    def start(self, props: dict[str, str]) -> None:
        """Start with the connector's config (all values strings, `${...}` references resolved).

        Parse it with the `ConfigDef` from `config()` and keep what `task_configs` needs. Raising
        marks the connector FAILED with the error as its trace, so raise a ConfigException naming
        the key when a setting is wrong.
        """

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The Task subclass the runtime instantiates for each task config (called on a fresh instance)."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """One config dict (string values) per task to run, at most `max_tasks` of them.

        Called after `start` and again after a reconfiguration request. Return fewer when the
        work does not split (one file, one replication stream); returning more than `max_tasks`
        fails the connector unless `tasks.max.enforce=false`. `group_partitions` helps split
        a list of tables or files evenly.
        """

    @abstractmethod
    def stop(self) -> None:
        """Release what `start` opened (threads, connections); the tasks are stopped separately."""

    @abstractmethod
    def config(self) -> ConfigDef:
        """The connector's own settings; the runtime adds the common ones (`name`, `tasks.max`, converters, ...).

        Used for validation, for `GET /connector-plugins/{type}/config` and to mask PASSWORD values.
        Called on a fresh instance, so return a module-level or freshly built ConfigDef.
        """

    def validate(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key results; override to add cross-field checks.

        Called on a fresh instance by the validate endpoint, before a connector is created or
        updated, and by offline checks (`cdc validate --offline`), so it must not connect
        anywhere: a check against the live system goes in `validate_connection`. Any ConfigValue
        with errors refuses the config. Keep the default's results and add errors to them rather
        than raising.
        """
        return self.config().validate(connector_configs)

    def validate_connection(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key errors of reaching the system the config names (Debezium's `validateConnection`); none by default.

        Called on a fresh instance only when `validate` found no error, for a config submitted over
        REST (create, update, and the validate endpoint): an error refuses the create or update with
        400, as Kafka Connect's herder does when Debezium's `validate` reports a failed login. The
        REST call waits for it, so bound every wait to a few seconds, and change nothing on the
        server (no slot, no replication stream, no lock). Put each error on the key to fix
        (`database.hostname` when it could be any of them); never quote a secret.
        """
        return []


def group_partitions(elements: Sequence[T], num_groups: int) -> list[list[T]]:
    """Split elements into `num_groups` contiguous, nearly equal groups (ConnectorUtils).

    Typical use in `task_configs`: `group_partitions(tables, min(max_tasks, len(tables)))`, one
    task config per non-empty group. Groups may be empty when there are fewer elements than groups.
    """
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
    """Only the keys that have errors, for a compact report (for example from `Connector.validate`)."""
    return {v.name: list(v.errors) for v in values if v.errors}


__all__ = [
    "Connector",
    "ConnectorContext",
    "Task",
    "config_value_errors",
    "group_partitions",
]

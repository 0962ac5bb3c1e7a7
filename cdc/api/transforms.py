"""Single Message Transforms and their predicates (Kafka Connect's `transforms` package).

A connector config lists them (`transforms=a,b`, `transforms.a.type=...`); the runtime builds one
chain per task and applies it to every record: to source records after `poll` and before the
converters, to sink records after the converters and before `put`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from cdc.api.config import ConfigDef
from cdc.api.records import ConnectRecord

R = TypeVar("R", bound=ConnectRecord)


class Transformation(ABC, Generic[R]):
    """Rewrites (or drops, by returning None) one record at a time (Kafka Connect's Transformation).

    The runtime creates each instance with no arguments and calls `configure` once; `apply` then
    runs on the task's thread only, one record at a time. The same class serves sources and
    sinks, so use `record.new_record(...)` to build the result rather than a concrete record class.
    """

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Receive this transform's keys with the `transforms.<alias>.` prefix stripped (and `type`).

        Parse them with `config()`; a ConfigException naming the key is reported under its full
        connector-config name (`transforms.<alias>.<key>`).
        """

    @abstractmethod
    def apply(self, record: R) -> R | None:
        """The transformed record, the same record unchanged, or None to drop it.

        An exception fails the task unless `errors.tolerance=all`, which skips the record (and
        sends a sink's original bytes to the dead letter queue). A dropped source record's offset
        is still stored.
        """

    def config(self) -> ConfigDef:
        """The transform's settings, for validation and `GET /connector-plugins/{type}/config`."""
        return ConfigDef()

    def close(self) -> None:
        """Release what `configure` opened.

        The runtime calls it for instances it configured only to validate a config, or when
        building the chain fails; a running task's chain is not closed at task stop, so keep
        nothing here that must be flushed.
        """


class Predicate(ABC, Generic[R]):
    """Decides whether a transform applies to a record (`transforms.X.predicate`; Kafka Connect's Predicate).

    Declared under `predicates=<alias>` with `predicates.<alias>.type=...`; each transform that
    names it gets its own configured instance. `transforms.X.negate=true` inverts the answer.
    """

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Receive this predicate's keys with the `predicates.<alias>.` prefix stripped (and `type`)."""

    @abstractmethod
    def test(self, record: R) -> bool:
        """True when the transform should apply to `record`; called on the task's thread."""

    def config(self) -> ConfigDef:
        """The predicate's settings, for validation and `GET /connector-plugins/{type}/config`."""
        return ConfigDef()

    def close(self) -> None:
        """Release what `configure` opened.

        The runtime calls it for instances it configured only to validate a config, or when
        building the chain fails; a running task's chain is not closed at task stop, so keep
        nothing here that must be flushed.
        """

"""Single Message Transforms and their predicates."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from cdc.api.config import ConfigDef
from cdc.api.records import ConnectRecord

R = TypeVar("R", bound=ConnectRecord)


class Transformation(ABC, Generic[R]):
    """Rewrites (or drops, by returning None) one record at a time."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    @abstractmethod
    def apply(self, record: R) -> R | None: ...

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        pass


class Predicate(ABC, Generic[R]):
    """Decides whether a transform applies to a record (`transforms.X.predicate`)."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    @abstractmethod
    def test(self, record: R) -> bool: ...

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        pass

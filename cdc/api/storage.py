"""Converters between Connect data and bytes, and offset reading for source tasks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from cdc.api.config import ConfigDef
from cdc.api.data import SchemaAndValue
from cdc.api.data.schema import Schema
from cdc.api.header import Headers


class Converter(ABC):
    """Serializes keys or values; configured once for either side (`is_key`)."""

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Receives the converter's own keys, prefix stripped (`value.converter.X` → `X`)."""

    @abstractmethod
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None: ...

    @abstractmethod
    def to_connect_data(self, topic: str, value: bytes | None, headers: Headers | None = None) -> SchemaAndValue: ...

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        pass


class HeaderConverter(ABC):
    """Serializes one header value at a time."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    @abstractmethod
    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None: ...

    @abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue: ...

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        pass


class OffsetStorageReader(ABC):
    """Read-only access to the offsets the runtime stored for this connector.

    A source task calls this in `start` to resume where the last acknowledged record
    left off. Partitions and offsets are the dicts the task put on its SourceRecords.
    """

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.offsets([partition])[0]

    @abstractmethod
    def offsets(self, partitions: list[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        """Offsets aligned with `partitions`; None where nothing was stored."""

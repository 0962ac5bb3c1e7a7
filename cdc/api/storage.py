"""Converters between Connect data and bytes, and offset reading for source tasks.

Kafka Connect's `storage` package: `Converter` and `HeaderConverter` (chosen per connector
with `key.converter`, `value.converter`, `header.converter`, or the worker's defaults) and
`OffsetStorageReader`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from cdc.api.config import ConfigDef
from cdc.api.data import SchemaAndValue
from cdc.api.data.schema import Schema
from cdc.api.header import Headers


class Converter(ABC):
    """Serializes keys or values; configured once for either side (`is_key`) (Kafka Connect's Converter).

    The runtime creates one instance per role (key, value) per task with no arguments, calls
    `configure` once, then calls it on the task's thread only: `from_connect_data` for source
    records on their way into the log, `to_connect_data` for sink records on their way out. An
    exception fails the task unless `errors.tolerance=all` skips the record.
    """

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Receives the converter's own keys, prefix stripped (`value.converter.X` → `X`)."""

    @abstractmethod
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None:
        """Serialize `value` (described by `schema`, None when schemaless) for `topic`; None stays None.

        `headers` are the record's (the runtime passes them for source records); a converter
        may add to them, and the added headers are written too. Raise DataException when the
        value cannot be written.
        """

    @abstractmethod
    def to_connect_data(self, topic: str, value: bytes | None, headers: Headers | None = None) -> SchemaAndValue:
        """The schema and value that `value` (bytes read from `topic`) holds; `SchemaAndValue.NULL` for None.

        The inverse of `from_connect_data`; raise DataException for bytes it cannot read.
        This runtime passes no `headers` here (None).
        """

    def config(self) -> ConfigDef:
        """The converter's settings, for validation and `GET /connector-plugins/{type}/config`."""
        return ConfigDef()

    def close(self) -> None:
        """Release what `configure` opened; a task's converters live as long as the task's process."""


class HeaderConverter(ABC):
    """Serializes one header value at a time (Kafka Connect's HeaderConverter).

    Created and configured once per task, like `Converter`, and called on the task's thread
    for each header of each record.
    """

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Receives the header converter's own keys, prefix stripped (`header.converter.X` → `X`)."""

    @abstractmethod
    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        """Serialize one header value of a record bound for `topic`; None stays None."""

    @abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        """The schema and value of one header read from `topic` (the inverse of `from_connect_header`)."""

    def config(self) -> ConfigDef:
        """The header converter's settings, for validation and `GET /connector-plugins/{type}/config`."""
        return ConfigDef()

    def close(self) -> None:
        """Release what `configure` opened; a task's header converter lives as long as the task's process."""


class OffsetStorageReader(ABC):
    """Read-only access to the offsets the runtime stored for this connector.

    A source task calls this in `start` to resume where the last acknowledged record
    left off. Partitions and offsets are the dicts the task put on its SourceRecords.
    """

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The offset last stored for `partition` (key order does not matter), or None if none was."""
        return self.offsets([partition])[0]

    @abstractmethod
    def offsets(self, partitions: list[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        """Offsets aligned with `partitions`; None where nothing was stored.

        One round trip for many partitions (a task reading many tables or files at start).
        """

"""What a source task sees of the runtime when a test drives it in-process: its config and an
offset store that round-trips offsets through JSON, as the real store does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cdc.api import OffsetStorageReader


class MemoryOffsets(OffsetStorageReader):
    def __init__(self) -> None:
        self.stored: dict[str, dict[str, Any]] = {}

    def offsets(self, partitions: list[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        return [self.stored.get(json.dumps(dict(p), sort_keys=True)) for p in partitions]

    def put(self, partition: Mapping[str, Any], offset: dict[str, Any]) -> None:
        # Round-trip through JSON, as the real offset store does.
        self.stored[json.dumps(dict(partition), sort_keys=True)] = json.loads(json.dumps(offset))


class TaskContext:
    """A SourceTaskContext with the task's config and `offsets`, and no transactions."""

    def __init__(self, props: dict[str, str], offsets: MemoryOffsets) -> None:
        self._props, self._offsets = props, offsets

    def configs(self) -> dict[str, str]:
        return dict(self._props)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._offsets

    def transaction_context(self) -> None:
        return None

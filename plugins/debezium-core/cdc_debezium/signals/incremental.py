"""The incremental snapshot's state: what is left to read, where the next chunk starts, the open window.

Mirrors Debezium's AbstractIncrementalSnapshotContext and the window logic of
AbstractIncrementalSnapshotChangeEventSource (the DBLog algorithm, arXiv 2010.12597): a chunk
of rows is read between a low and a high watermark written to the signal table; a streamed
change, inside the window, to a key of the chunk drops that key's row (the stream already
carries a newer or equal value); at the high watermark the rest is emitted as `op: r`.
The algorithm is incremental_source.py's; reading and watermark writing, the connector's subclass of it.

Offset keys, by Debezium's names, present only while a snapshot runs:
`incremental_snapshot_collections` (a JSON array of
`{"incremental_snapshot_collections_id", "..._additional_condition", "..._surrogate_key"}`),
`incremental_snapshot_primary_key`, `incremental_snapshot_maximum_key` (keys.py) and
`incremental_snapshot_correlation_id` (the signal id that started it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc_debezium.signals import keys

log = logging.getLogger(__name__)

PREFIX = "incremental_snapshot"
COLLECTIONS = f"{PREFIX}_collections"
PRIMARY_KEY = f"{PREFIX}_primary_key"
MAXIMUM_KEY = f"{PREFIX}_maximum_key"
CORRELATION_ID = f"{PREFIX}_correlation_id"
_ID = f"{COLLECTIONS}_id"
_CONDITION = f"{COLLECTIONS}_additional_condition"
_SURROGATE = f"{COLLECTIONS}_surrogate_key"
OFFSET_KEYS = (COLLECTIONS, PRIMARY_KEY, MAXIMUM_KEY, CORRELATION_ID)


@dataclass
class Collection:
    id: str  # db.table (MySQL) or schema.table (PostgreSQL)
    condition: str | None = None
    surrogate_key: str | None = None


class IncrementalSnapshotContext:
    def __init__(self) -> None:
        self.collections: list[Collection] = []
        self.last_key: tuple[Any, ...] | None = None  # the last key read of the current collection
        self.maximum_key: tuple[Any, ...] | None = None
        self.correlation_id: str | None = None
        self.paused = False
        # the chunk in flight: its id, whether its window is open, its rows by key
        self.chunk_id: str | None = None
        self.window_open = False
        self.window: dict[Any, Any] = {}
        self.chunk_end: tuple[Any, ...] | None = None  # the last key the chunk's SELECT read
        self.chunk_full = False
        # Keys changed inside the window before the chunk's rows were registered (a stream on
        # another thread may see the low watermark before the SELECT returns).
        self._seen: set[Any] = set()
        self._rows_ready = False

    # -- what runs ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return bool(self.collections)

    @property
    def current(self) -> Collection | None:
        return self.collections[0] if self.collections else None

    def add(self, collections: list[Collection], correlation_id: str | None) -> list[Collection]:
        """Queues the collections not queued yet; returns those added."""
        known = {c.id for c in self.collections}
        added = [c for c in collections if c.id not in known]
        self.collections.extend(added)
        if added and self.correlation_id is None:
            self.correlation_id = correlation_id
        return added

    def remove(self, ids: set[str] | None) -> list[str]:
        """stop-snapshot: drops the named collections (all when None); returns those dropped."""
        dropped = [c.id for c in self.collections if ids is None or c.id in ids]
        current = self.current
        self.collections = [c for c in self.collections if c.id not in dropped]
        if current is not None and current.id in dropped:
            self.next_collection()
        if not self.collections:
            self.correlation_id = None
        return dropped

    def keep_captured(self, captured: Iterable[str]) -> list[str]:
        """Drops the queued collections not in `captured` (a resumed snapshot of a table the include/exclude
        lists no longer capture: its rows must not be emitted); says so and returns them."""
        known = {c.lower() for c in captured}
        gone = {c.id for c in self.collections if c.id.lower() not in known}
        if not gone:
            return []
        dropped = self.remove(gone)
        log.warning(
            "Incremental snapshot of %s dropped: no longer captured (the include/exclude lists changed since it "
            "was queued); send execute-snapshot again after capturing it to read it",
            ", ".join(dropped),
        )
        return dropped

    def next_collection(self) -> None:
        """The current collection is done (or dropped): the next one starts from its first key."""
        current = self.current
        if current is not None and self.collections and self.collections[0] is current:
            self.collections.pop(0)
        self.last_key = self.maximum_key = None
        self.forget_chunk()
        if not self.collections:
            self.correlation_id = None

    # -- the chunk window --------------------------------------------------------------------
    def begin_chunk(self, chunk_id: str) -> None:
        """Before the low watermark is written: the stream may see it from now on."""
        self.chunk_id, self.window, self.chunk_end, self.chunk_full = chunk_id, {}, None, False
        self.window_open, self._seen, self._rows_ready = False, set(), False

    def set_rows(self, rows: dict[Any, Any], end: tuple[Any, ...] | None, full: bool) -> None:
        """The chunk's rows by key, registered before the high watermark is written."""
        self.window = {k: v for k, v in rows.items() if k not in self._seen}
        self.chunk_end, self.chunk_full, self._rows_ready = end, full, True
        self._seen = set()

    def forget_chunk(self) -> None:
        self.chunk_id, self.window, self.chunk_end, self.window_open = None, {}, None, False
        self._seen, self._rows_ready = set(), False

    def deduplicate(self, key: Any) -> None:
        """A streamed change to `key` inside the open window: the chunk's row for it is stale or equal."""
        if not self.window_open:
            return
        if self._rows_ready:
            self.window.pop(key, None)
        else:
            self._seen.add(key)

    def close_window(self) -> list[Any]:
        """The high watermark: the rows left to emit; the next chunk starts after this one's end."""
        rows = list(self.window.values())
        if self.chunk_full and self.chunk_end is not None:
            self.last_key = self.chunk_end
            self.forget_chunk()
        else:
            self.next_collection()
        return rows

    # -- offsets -----------------------------------------------------------------------------
    def offset(self) -> dict[str, Any]:
        if not self.collections:
            return {}
        out: dict[str, Any] = {
            COLLECTIONS: json.dumps(
                [{_ID: c.id, _CONDITION: c.condition, _SURROGATE: c.surrogate_key} for c in self.collections]
            ),
        }
        if self.last_key is not None:
            out[PRIMARY_KEY] = keys.dumps(self.last_key)
        if self.maximum_key is not None:
            out[MAXIMUM_KEY] = keys.dumps(self.maximum_key)
        if self.correlation_id:
            out[CORRELATION_ID] = self.correlation_id
        return out

    @classmethod
    def load(cls, stored: Mapping[str, Any] | None) -> IncrementalSnapshotContext:
        ctx = cls()
        if not stored or not stored.get(COLLECTIONS):
            return ctx
        raw = stored[COLLECTIONS]
        items = json.loads(raw) if isinstance(raw, str) else raw
        ctx.collections = [Collection(str(i[_ID]), i.get(_CONDITION) or None, i.get(_SURROGATE) or None) for i in items]
        ctx.last_key = keys.loads(stored.get(PRIMARY_KEY))
        ctx.maximum_key = keys.loads(stored.get(MAXIMUM_KEY))
        ctx.correlation_id = stored.get(CORRELATION_ID) or None
        return ctx


def offset_keys(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The incremental snapshot's keys of a stored offset."""
    return {k: stored[k] for k in OFFSET_KEYS if k in stored}

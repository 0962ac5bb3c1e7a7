"""Source offset storage in Kafka Connect's `connect-offsets` format.

Key: the JSON `["<connector>", {<source partition>}]`; value: the JSON offset map; a null
value is a tombstone (reset). Three backing stores: memory (tests), a file (standalone
`offset.storage.file.filename`) and a compacted topic in either transport (`offset.storage.topic`).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cdc.api.storage import OffsetStorageReader
from cdc.log.base import LogProducer, LogReader, LogRecord, TopicLog, TopicPartition, TopicSpec
from cdc.log.private_files import make_private_dir
from cdc.storage._json import dumps, loads

log = logging.getLogger(__name__)


class OffsetStoreError(Exception):
    pass


def offset_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    return dumps([connector, dict(partition)])


def offset_value(offset: Mapping[str, Any] | None) -> bytes | None:
    return None if offset is None else dumps(dict(offset))


def parse_key(key: bytes) -> tuple[str, dict[str, Any]] | None:
    """(connector, partition) of a stored key, or None when it is not in Connect's format."""
    try:
        parsed = loads(key)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str) and isinstance(parsed[1], dict):
        return parsed[0], parsed[1]
    return None


def _canonical(key: bytes) -> bytes:
    # Stored keys keep the connector's own map order (as Kafka Connect writes them), but a
    # lookup must not depend on the order in which a task builds its partition dict.
    parsed = parse_key(key)
    if parsed is None:
        return key
    return json.dumps([parsed[0], parsed[1]], sort_keys=True, separators=(",", ":")).encode()


class OffsetBackingStore(ABC):
    """A map of serialized offset keys to serialized values that survives restarts."""

    def __init__(self) -> None:
        self._data: dict[bytes, bytes] = {}
        self._raw_keys: dict[bytes, bytes] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def get(self, keys: list[bytes]) -> dict[bytes, bytes | None]:
        with self._lock:
            return {k: self._data.get(_canonical(k)) for k in keys}

    def all(self) -> dict[bytes, bytes]:
        """Every live entry, keyed by the key bytes as stored."""
        with self._lock:
            return {self._raw_keys[c]: v for c, v in self._data.items()}

    def _apply(self, entries: Mapping[bytes, bytes | None]) -> None:
        with self._lock:
            for k, v in entries.items():
                c = _canonical(k)
                if v is None:
                    self._data.pop(c, None)
                    self._raw_keys.pop(c, None)
                else:
                    self._data[c] = v
                    self._raw_keys[c] = k

    @abstractmethod
    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        """Store durably; returns only when the entries would survive a crash."""

    def stage(self, producer: LogProducer, entries: Mapping[bytes, bytes | None]) -> None:
        """Write through a caller's transactional producer; call `applied` after it commits."""
        raise OffsetStoreError(f"{type(self).__name__} cannot join a log transaction")

    def applied(self, entries: Mapping[bytes, bytes | None]) -> None:
        self._apply(entries)

    @property
    def transactional_log(self) -> TopicLog | None:
        """The log whose transactions this store can join, if any."""
        return None


class MemoryOffsetBackingStore(OffsetBackingStore):
    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        self._apply(entries)


class FileOffsetBackingStore(OffsetBackingStore):
    """`offset.storage.file.filename`: the whole map, rewritten atomically on each flush.

    Kafka's file store uses Java serialization, which nothing else can read; this one is
    JSON (`[[key, value], ...]` with the Connect key/value JSON as strings).
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)

    def start(self) -> None:
        if not self.path.exists():
            return
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError) as e:
            raise OffsetStoreError(
                f"cannot read offsets file {self.path}: {e}; restore it from a backup or delete it to start over"
            ) from e
        self._apply({k.encode(): v.encode() for k, v in entries})

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        with self._lock:
            merged = {self._raw_keys.get(c, c): v for c, v in self._data.items()}
        for k, v in entries.items():
            c = _canonical(k)
            for existing in [e for e in merged if _canonical(e) == c]:
                del merged[existing]
            if v is not None:
                merged[k] = v
        body = json.dumps([[k.decode(), v.decode()] for k, v in merged.items()], indent=1)
        make_private_dir(self.path.parent)  # a directory it creates is 0700; mkstemp makes the file 0600
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._apply(entries)


class TopicOffsetBackingStore(OffsetBackingStore):
    """`offset.storage.topic` in the worker's transport: compacted, 25 partitions by default.

    Keys are placed with murmur2 like Kafka Connect's store, so either can read the other's
    topic. In the embedded transport the topic lives in the same SQLite file as the records,
    which lets a source task commit both in one transaction (`stage`).
    """

    def __init__(
        self, log_: TopicLog, topic: str = "connect-offsets", partitions: int = 25, replication_factor: int = -1
    ) -> None:
        super().__init__()
        self._log = log_
        self.topic = topic
        self._spec = TopicSpec(topic, partitions, replication_factor, {"cleanup.policy": "compact"})
        self._producer: LogProducer | None = None

    @property
    def transactional_log(self) -> TopicLog | None:
        return self._log

    def start(self) -> None:
        self._log.ensure_topic(self._spec)
        self.refresh()
        self._producer = self._log.producer()

    def refresh(self) -> None:
        """Read the topic to its end (last value per key wins, null deletes)."""
        for rec in read_topic(self._log, self.topic):
            if rec.key is not None:
                self._apply({rec.key: rec.value})

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        if self._producer is None:
            raise OffsetStoreError("offset store is not started")
        errors: list[Exception] = []

        def on_delivery(rec: LogRecord | None, err: Exception | None) -> None:
            if err is not None:
                errors.append(err)

        for k, v in entries.items():
            self._producer.send(self.topic, v, key=k, on_delivery=on_delivery)
        remaining = self._producer.flush(30)
        if errors or remaining:
            raise OffsetStoreError(
                f"offsets were not stored in {self.topic!r}: {errors[0] if errors else 'flush timed out'}"
            )
        self._apply(entries)

    def stage(self, producer: LogProducer, entries: Mapping[bytes, bytes | None]) -> None:
        for k, v in entries.items():
            producer.send(self.topic, v, key=k)

    def stop(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None


def read_topic(log_: TopicLog, topic: str) -> list[LogRecord]:
    """Every record of `topic`, from each partition's start to its end."""
    tps = log_.partitions(topic)
    starts = log_.beginning_offsets(tps)
    reader = log_.reader()
    try:
        reader.assign(starts)
        records = _read_to_end(reader, tps, log_)
    finally:
        reader.close()
    records.sort(key=lambda r: (r.partition, r.offset))
    return records


def _read_to_end(reader: LogReader, tps: list[TopicPartition], log_: TopicLog, idle: float = 0.3) -> list[LogRecord]:
    """LogReader.read_to_end, but also done after two idle polls short of the end offsets.

    A transactional topic (exactly-once offsets) ends with a commit marker that is never
    delivered, so a reader's position stays one short of the end offset forever.
    """
    ends = log_.end_offsets(tps)
    out: list[LogRecord] = []
    idle_polls = 0
    while True:
        if log_.exact_end_offsets and all(reader.position(tp) >= ends[tp] for tp in tps):
            return out
        batch = reader.poll(5000, idle)
        out.extend(batch)
        if batch:
            idle_polls = 0
            continue
        idle_polls += 1
        if all(reader.position(tp) >= ends[tp] for tp in tps) or idle_polls >= 2:
            return out


class OffsetStorageReaderImpl(OffsetStorageReader):
    """What a source task sees: only its own connector's offsets."""

    def __init__(self, store: OffsetBackingStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offsets(self, partitions: list[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        keys = [offset_key(self._connector, p) for p in partitions]
        values = self._store.get(keys)
        out: list[dict[str, Any] | None] = []
        for k in keys:
            v = values.get(k)
            out.append(None if v is None else loads(v))
        return out


class OffsetStorageWriter:
    """Collects the latest offset per source partition and writes them in one flush."""

    def __init__(self, store: OffsetBackingStore, connector: str) -> None:
        self._store = store
        self._connector = connector
        self._pending: dict[bytes, bytes | None] = {}

    def offset(self, partition: Mapping[str, Any], offset: Mapping[str, Any] | None) -> None:
        self._pending[offset_key(self._connector, partition)] = offset_value(offset)

    def has_pending(self) -> bool:
        return bool(self._pending)

    def take(self) -> dict[bytes, bytes | None]:
        pending, self._pending = self._pending, {}
        return pending

    def flush(self) -> int:
        """Store what was collected; on failure the entries stay pending for the next try."""
        pending = self.take()
        if not pending:
            return 0
        try:
            self._store.set(pending)
        except Exception:
            # Newer offsets recorded meanwhile win over the failed batch.
            self._pending = {**pending, **self._pending}
            raise
        return len(pending)


def describe_offsets(store: OffsetBackingStore) -> list[dict[str, Any]]:
    """Rows for `cdc offsets show`: connector, partition, offset, plus the raw key JSON."""
    rows: list[dict[str, Any]] = []
    for k, v in store.all().items():
        parsed = parse_key(k)
        rows.append(
            {
                "connector": parsed[0] if parsed else None,
                "partition": parsed[1] if parsed else None,
                "offset": loads(v),
                "key": k.decode(errors="replace"),
            }
        )
    rows.sort(key=lambda r: (r["connector"] or "", json.dumps(r["partition"], sort_keys=True)))
    return rows


__all__ = [
    "FileOffsetBackingStore",
    "MemoryOffsetBackingStore",
    "OffsetBackingStore",
    "OffsetStorageReaderImpl",
    "OffsetStorageWriter",
    "OffsetStoreError",
    "TopicOffsetBackingStore",
    "TopicPartition",
    "describe_offsets",
    "offset_key",
    "offset_value",
    "read_topic",
]

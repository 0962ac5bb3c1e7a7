"""KIP-875 offsets of one connector: read, alter and reset, in Kafka Connect's REST shapes.

Source connectors: the framework's offsets store (`["<connector>", {partition}]` keys).
Sink connectors: the committed offsets of the consumer group `connect-<connector>`, shown as
`{"partition": {"kafka_topic", "kafka_partition"}, "offset": {"kafka_offset"}}`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cdc.log.base import TopicPartition
from cdc.runtime.herder import BadRequestError
from cdc.runtime.worker import Worker
from cdc.storage._json import loads
from cdc.storage.offsets import offset_key, offset_value, parse_key


class ConnectorOffsets:
    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    # -- source ------------------------------------------------------------------------------
    def _source_entries(self, connector: str) -> dict[bytes, dict[str, Any]]:
        store = self.worker.offset_store
        refresh = getattr(store, "refresh", None)
        if refresh is not None:
            refresh()
        out = {}
        for k, v in store.all().items():
            parsed = parse_key(k)
            if parsed is not None and parsed[0] == connector:
                out[k] = loads(v)
        return out

    # -- sink --------------------------------------------------------------------------------
    def _sink_partitions(self, config: Mapping[str, str]) -> list[TopicPartition]:
        log_ = self.worker.log
        topics = [t.strip() for t in (config.get("topics") or "").split(",") if t.strip()]
        regex = (config.get("topics.regex") or "").strip()
        existing = log_.list_topics()
        if regex:
            topics = [t for t in existing if re.fullmatch(regex, t)]
        return [TopicPartition(t, p) for t in topics if t in existing for p in range(existing[t].partitions)]

    def _group(self, connector: str, config: Mapping[str, str]) -> Any:
        topics = sorted({tp.topic for tp in self._sink_partitions(config)})
        return self.worker.log.group_consumer(f"connect-{connector}", topics)

    # -- API ---------------------------------------------------------------------------------
    def get(self, connector: str, config: Mapping[str, str], kind: str) -> list[dict[str, Any]]:
        if kind == "source":
            return [
                {"partition": parse_key(k)[1], "offset": v}  # type: ignore[index]
                for k, v in self._source_entries(connector).items()
            ]
        tps = self._sink_partitions(config)
        if not tps:
            return []
        group = self._group(connector, config)
        try:
            committed = group.committed(tps)
        finally:
            group.close()
        return [
            {"partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition}, "offset": {"kafka_offset": off}}
            for tp, off in sorted(committed.items())
            if off is not None
        ]

    def alter(self, connector: str, config: Mapping[str, str], kind: str, offsets: list[Mapping[str, Any]]) -> None:
        if not offsets:
            raise BadRequestError("The offsets to be altered may not be null or empty")
        if kind == "source":
            entries: dict[bytes, bytes | None] = {}
            for entry in offsets:
                partition, offset = _partition_offset(entry)
                entries[offset_key(connector, partition)] = offset_value(offset)
            self.worker.offset_store.set(entries)
            return
        commits: dict[TopicPartition, int] = {}
        for entry in offsets:
            partition, offset = _partition_offset(entry)
            tp = _sink_partition(partition)
            commits[tp] = self._beginning(tp) if offset is None else _sink_offset(offset)
        self._commit(connector, config, commits)

    def reset(self, connector: str, config: Mapping[str, str], kind: str) -> None:
        if kind == "source":
            keys = self._source_entries(connector)
            if keys:
                self.worker.offset_store.set(dict.fromkeys(keys))
            return
        tps = self._sink_partitions(config)
        if tps:
            # Without a delete in the group API, "no committed offset" becomes "start of the log".
            self._commit(connector, config, self.worker.log.beginning_offsets(tps))

    def _beginning(self, tp: TopicPartition) -> int:
        return self.worker.log.beginning_offsets([tp])[tp]

    def _commit(self, connector: str, config: Mapping[str, str], commits: Mapping[TopicPartition, int]) -> None:
        group = self.worker.log.group_consumer(f"connect-{connector}", sorted({tp.topic for tp in commits}))
        try:
            group.commit(commits)
        finally:
            group.close()


def _partition_offset(entry: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("partition"), Mapping):
        raise BadRequestError(
            'Each entry needs a "partition" object, e.g. {"partition": {...}, "offset": {...} or null}'
        )
    offset = entry.get("offset")
    if offset is not None and not isinstance(offset, Mapping):
        raise BadRequestError('An "offset" must be an object, or null to reset that partition')
    return dict(entry["partition"]), None if offset is None else dict(offset)


def _sink_partition(partition: Mapping[str, Any]) -> TopicPartition:
    topic, part = partition.get("kafka_topic"), partition.get("kafka_partition")
    if not isinstance(topic, str) or not isinstance(part, int) or isinstance(part, bool):
        raise BadRequestError(
            'Sink connector partitions look like {"kafka_topic": "<topic>", "kafka_partition": <int>}'
        )
    return TopicPartition(topic, part)


def _sink_offset(offset: Mapping[str, Any]) -> int:
    value = offset.get("kafka_offset")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadRequestError('Sink connector offsets look like {"kafka_offset": <non-negative int>}')
    return value

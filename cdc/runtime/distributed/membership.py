"""Group membership through Kafka's consumer-group protocol; no consensus of our own.

Every worker joins the consumer group `group.id`, subscribed to the offsets topic (its
partitions are the group's "slots"; nothing is ever fetched: assigned partitions are paused).
The broker's group coordinator decides who is in the group and librdkafka's assignor splits the
slots. Each connector and task hashes (murmur2) to one slot; whoever owns the slot runs it.

Why this gives "never on two workers at once":

- the protocol is eager (roundrobin assignor): before a rebalance completes, every member
  runs its revoke callback, and we stop the slot's connectors and tasks *inside* it, so the
  new owner can only be assigned the slot after the old owner stopped them;
- a member that cannot heartbeat for `session.timeout.ms` is dropped by the coordinator, and
  librdkafka declares the assignment lost on its side at the same timeout (on_lost), where we
  stop everything as well (KAFKA-9184's rule);
- the group's `session.timeout.ms` is the worker's `session.timeout.ms` (Kafka Connect's key,
  10 s by default) capped by `scheduled.rebalance.max.delay.ms`: a worker killed with -9 keeps
  its slots that long, then they move. Kafka Connect would hold them unassigned up to
  `scheduled.rebalance.max.delay.ms` after the session ends (KIP-415); here nobody holds a
  slot without a session, so the delay can only shorten the session, never outlast it. The
  rule above does not depend on the value: the old owner stops at the same timeout.
- `rebalance.timeout.ms` is the consumer's `max.poll.interval.ms` (librdkafka sends it as the
  JoinGroup rebalance timeout): how long a member may spend in its revoke callback, stopping
  tasks, before the group goes on without it (and it stops everything in on_lost).

How soon a new group forms is the broker's business: Apache Kafka (and librdkafka's mock
cluster) hold the first JoinGroup `group.initial.rebalance.delay.ms` (3 s); Tansu holds it
half the session timeout (5 s with the defaults).

The leader is the owner of slot 0; it alone writes connector configs and target states.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KTopicPartition

from cdc.log.murmur2 import partition_for_key

log = logging.getLogger(__name__)

SlotsCallback = Callable[[set[int]], None]
_GROUP_METADATA_MAGIC = b"CGMDv2:"


@dataclass(frozen=True)
class GroupTimeouts:
    """The group consumer's timeouts, from Kafka Connect's worker keys (see the module docstring)."""

    session_ms: int
    heartbeat_ms: int
    rebalance_ms: int

    @classmethod
    def of(cls, session_ms: int, heartbeat_ms: int, rebalance_ms: int, max_delay_ms: int) -> GroupTimeouts:
        session = min(session_ms, max_delay_ms)
        # the coordinator needs heartbeats well inside the session; librdkafka needs
        # max.poll.interval.ms >= session.timeout.ms
        return cls(session, max(100, min(heartbeat_ms, session // 3)), max(rebalance_ms, session))

    @classmethod
    def from_worker_config(cls, config: Any) -> GroupTimeouts:
        return cls.of(
            config.get("session.timeout.ms"),
            config.get("heartbeat.interval.ms"),
            config.get("rebalance.timeout.ms"),
            config.get("scheduled.rebalance.max.delay.ms"),
        )


def slot_of(key: str, slots: int) -> int:
    """The slot of `connector-<n>` or `task-<n>-<i>`: Kafka's murmur2 partitioner over the slots."""
    return partition_for_key(key.encode(), slots)


class GroupMembership:
    def __init__(
        self,
        client_config: dict[str, Any],
        group_id: str,
        topic: str,
        worker_id: str,
        timeouts: GroupTimeouts,
        on_assigned: SlotsCallback,
        on_revoked: SlotsCallback,
    ) -> None:
        self._consumer = Consumer(
            {
                **client_config,
                "group.id": group_id,
                "client.id": worker_id,
                "enable.auto.commit": False,
                "partition.assignment.strategy": "roundrobin",
                "session.timeout.ms": timeouts.session_ms,
                "heartbeat.interval.ms": timeouts.heartbeat_ms,
                "max.poll.interval.ms": timeouts.rebalance_ms,
            }
        )
        self.topic = topic
        self.slots: set[int] = set()
        self.slot_count = 0
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self.generation = 0
        self._closing = False  # close() runs the revoke callback too: say it is no rebalance

    def start(self, slot_count: int) -> None:
        self.slot_count = slot_count
        self._consumer.subscribe([self.topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lost)

    @property
    def is_leader(self) -> bool:
        return 0 in self.slots

    def poll(self, timeout: float) -> None:
        """Drive the group: rebalance callbacks run here, on the caller's thread."""
        try:
            msg = self._consumer.poll(timeout)
        except KafkaException as e:
            log.warning("group poll failed: %s", e)
            return
        if msg is not None and msg.error():
            log.debug("group consumer: %s", msg.error())

    def _assign(self, consumer: Consumer, parts: list[KTopicPartition]) -> None:
        consumer.assign(parts)
        if parts:
            consumer.pause(parts)  # membership only: never fetch the offsets topic
        generation = self._group_generation()
        self.generation = generation if generation is not None else self.generation + 1
        self.slots = {p.partition for p in parts}
        log.info("Joined group generation %d with slots %s", self.generation, sorted(self.slots))
        self._on_assigned(set(self.slots))

    def _group_generation(self) -> int | None:
        """The group's generation id (Kafka Connect's `epoch`), which librdkafka exposes only inside its
        serialized group metadata (rd_kafka_consumer_group_metadata_write: the magic `CGMDv2:`, then
        the generation as a native int32). None when unreadable: the caller counts its own joins."""
        try:
            raw = self._consumer.consumer_group_metadata()
        except (KafkaException, RuntimeError):
            return None
        if not isinstance(raw, bytes) or not raw.startswith(_GROUP_METADATA_MAGIC) or len(raw) < 11:
            return None
        (generation,) = struct.unpack_from("=i", raw, len(_GROUP_METADATA_MAGIC))
        return generation if generation >= 0 else None  # -1: none (Tansu's first generation is 0)

    def _revoke(self, consumer: Consumer, parts: list[KTopicPartition]) -> None:
        revoked = {p.partition for p in parts} or set(self.slots)
        if self._closing:
            log.info("Leaving the group: giving up slots %s", sorted(revoked))
        else:
            log.info("Rebalance: giving up slots %s", sorted(revoked))
        self._on_revoked(revoked)  # stops their connectors and tasks before we rejoin
        self.slots -= revoked
        consumer.unassign()

    def _lost(self, consumer: Consumer, parts: list[KTopicPartition]) -> None:
        log.warning("Cut off from the group (session timed out): stopping every connector and task here")
        self._on_revoked(set(self.slots))
        self.slots = set()
        consumer.unassign()

    def close(self) -> None:
        self._closing = True
        try:
            self._consumer.close()  # leaves the group: the others rebalance at once
        except (KafkaException, RuntimeError) as e:
            log.warning("leaving the group failed: %s", e)

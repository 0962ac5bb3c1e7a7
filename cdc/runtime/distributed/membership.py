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
- `session.timeout.ms` is `scheduled.rebalance.max.delay.ms`: a worker killed with -9 keeps its
  slots for that long (it may come back), then they move (KIP-415's delay).

The leader is the owner of slot 0; it alone writes connector configs and target states.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KTopicPartition

from cdc.log.murmur2 import partition_for_key

log = logging.getLogger(__name__)

SlotsCallback = Callable[[set[int]], None]


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
        session_timeout_ms: int,
        on_assigned: SlotsCallback,
        on_revoked: SlotsCallback,
    ) -> None:
        heartbeat = max(100, min(3000, session_timeout_ms // 4))
        self._consumer = Consumer(
            {
                **client_config,
                "group.id": group_id,
                "client.id": worker_id,
                "enable.auto.commit": False,
                "partition.assignment.strategy": "roundrobin",
                "session.timeout.ms": session_timeout_ms,
                "heartbeat.interval.ms": heartbeat,
                "max.poll.interval.ms": max(session_timeout_ms, 30000),
            }
        )
        self.topic = topic
        self.slots: set[int] = set()
        self.slot_count = 0
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self.generation = 0

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
        self.generation += 1
        self.slots = {p.partition for p in parts}
        log.info("Joined group generation %d with slots %s", self.generation, sorted(self.slots))
        self._on_assigned(set(self.slots))

    def _revoke(self, consumer: Consumer, parts: list[KTopicPartition]) -> None:
        revoked = {p.partition for p in parts} or set(self.slots)
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
        try:
            self._consumer.close()  # leaves the group: the others rebalance at once
        except (KafkaException, RuntimeError) as e:
            log.warning("leaving the group failed: %s", e)

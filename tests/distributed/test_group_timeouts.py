"""GroupTimeouts: Kafka Connect's worker keys become the group consumer's timeouts, within librdkafka's rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cdc.runtime.distributed.membership import GroupTimeouts
from cdc.runtime.worker_config import WorkerConfig

ms = st.integers(min_value=1000, max_value=600_000)


@given(session=ms, heartbeat=st.integers(1, 600_000), rebalance=st.integers(1, 600_000), max_delay=ms)
def test_timeouts_keep_librdkafkas_rules(session: int, heartbeat: int, rebalance: int, max_delay: int) -> None:
    t = GroupTimeouts.of(session, heartbeat, rebalance, max_delay)
    assert t.session_ms == min(session, max_delay)  # the delay caps the session, never extends it
    assert 100 <= t.heartbeat_ms <= max(100, t.session_ms // 3)
    assert t.heartbeat_ms == max(100, min(heartbeat, t.session_ms // 3))
    assert t.rebalance_ms == max(rebalance, t.session_ms)  # librdkafka: max.poll.interval.ms >= session


def test_defaults_are_kafka_connects() -> None:
    t = GroupTimeouts.from_worker_config(WorkerConfig({"group.id": "g"}))
    assert (t.session_ms, t.heartbeat_ms, t.rebalance_ms) == (10000, 3000, 60000)
    fast = GroupTimeouts.from_worker_config(WorkerConfig({"scheduled.rebalance.max.delay.ms": "2000"}))
    assert (fast.session_ms, fast.heartbeat_ms) == (2000, 666)

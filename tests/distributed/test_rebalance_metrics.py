"""connect-worker-rebalance-metrics of distributed workers on Tansu, scraped at each worker's GET /metrics.

A worker joining the group makes every member go through one rebalance (the eager protocol:
revoke everything, then the new assignment), so the first worker's completed-rebalances-total
grows by exactly one, both report the group's generation as `epoch`, and the time since the last
rebalance starts over. The figures' rules are unit-tested in tests/runtime/test_rebalance_metrics.py.
"""

from __future__ import annotations

import contextlib
import math
import time

from tests.distributed.cluster import Member, cluster_props
from tests.rest.conftest import wait_until
from tests.rig.kafka import KafkaBroker
from tests.runtime.prometheus_scrape import Samples, scrape, scrape_until, value

R = "kafka_connect_worker_rebalance_"


def settled(s: Samples) -> bool:
    return (value(s, R + "completed_rebalances_total") or 0) >= 1 and value(s, R + "rebalancing") == 0


def test_a_joining_worker_is_one_more_completed_rebalance(tansu: KafkaBroker) -> None:
    props = cluster_props(tansu.bootstrap)
    a = Member(props)
    b: Member | None = None
    try:
        _, s = scrape_until(a.http, settled, "the first worker's first rebalance")
        completed = value(s, R + "completed_rebalances_total")
        epoch = value(s, R + "epoch")
        since = value(s, R + "time_since_last_rebalance_ms")
        assert completed == 1 and epoch >= 0 and 0 <= since < 60_000
        avg, top = value(s, R + "rebalance_avg_time_ms"), value(s, R + "rebalance_max_time_ms")
        assert 0 <= avg <= top < 60_000
        assert value(s, R + "leader_name", leader_name=a.rest.url) == 1  # alone, it leads
        # Nothing happens: the count stays, the time since the last rebalance grows.
        time.sleep(1.0)
        _, s = scrape(a.http)
        assert value(s, R + "completed_rebalances_total") == completed
        assert value(s, R + "time_since_last_rebalance_ms") >= since + 900

        joined = time.monotonic()
        b = Member(props)
        wait_until(lambda: a.herder.membership.slots and b.herder.membership.slots, 60, "both in the group")
        _, s = scrape_until(
            a.http,
            lambda s: value(s, R + "completed_rebalances_total") == completed + 1 and value(s, R + "rebalancing") == 0,
            "the first worker's rebalance for the join",
        )
        _, t = scrape_until(b.http, settled, "the second worker's first rebalance")
        # Both took part in the same generation of the group, later than the first one.
        assert value(s, R + "epoch") == value(t, R + "epoch") > epoch
        # ...and the time since the last rebalance started over when the second worker came.
        assert value(s, R + "time_since_last_rebalance_ms") <= (time.monotonic() - joined) * 1000
        time.sleep(2.0)  # one join, one rebalance: nothing more follows
        _, s = scrape(a.http)
        _, t = scrape(b.http)
        assert value(s, R + "completed_rebalances_total") == completed + 1
        assert value(t, R + "completed_rebalances_total") == 1
        assert value(s, R + "epoch") == value(t, R + "epoch")
        leader = a if a.herder.membership.is_leader else b
        for samples in (s, t):
            assert value(samples, R + "leader_name", leader_name=leader.rest.url) == 1
            assert not math.isnan(value(samples, R + "rebalance_avg_time_ms"))
    finally:
        for m in (b, a):
            if m is not None:
                with contextlib.suppress(Exception):
                    m.close()

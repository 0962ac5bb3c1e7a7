"""Behaviour both transports must share; each backend's test module runs these."""

from __future__ import annotations

import uuid

from cdc.log.base import TopicLog, TopicPartition, TopicSpec
from cdc.log.murmur2 import partition_for_key


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def check_keyed_placement_matches_murmur2(log_: TopicLog) -> None:
    topic = unique("placement")
    log_.ensure_topic(TopicSpec(topic, 4))
    p = log_.producer()
    acked = []
    for i in range(200):
        p.send(topic, b"v", key=f"key-{i}".encode(), on_delivery=lambda r, e: acked.append((r, e)))
    assert p.flush(30) == 0
    p.close()
    assert all(e is None for _, e in acked)
    for rec, _ in acked:
        assert rec.partition == partition_for_key(rec.key, 4)


def check_offsets_are_dense_and_ordered(log_: TopicLog) -> None:
    topic = unique("order")
    log_.ensure_topic(TopicSpec(topic, 1))
    p = log_.producer()
    for i in range(300):
        p.send(topic, str(i).encode(), key=b"k", headers=[("h", str(i).encode()), ("n", None)])
    assert p.flush(30) == 0
    p.close()
    reader = log_.reader()
    tp = TopicPartition(topic, 0)
    reader.assign({tp: 0})
    records = reader.read_to_end([tp], log_)
    reader.close()
    assert [r.offset for r in records] == list(range(300))
    assert [int(r.value) for r in records] == list(range(300))
    assert records[7].headers == (("h", b"7"), ("n", None))


def check_seek_and_position(log_: TopicLog) -> None:
    topic = unique("seek")
    log_.ensure_topic(TopicSpec(topic, 1))
    p = log_.producer()
    for i in range(50):
        p.send(topic, str(i).encode(), partition=0)
    p.flush(30)
    p.close()
    tp = TopicPartition(topic, 0)
    reader = log_.reader()
    reader.assign({tp: 40})
    got = reader.read_to_end([tp], log_)
    assert [int(r.value) for r in got] == list(range(40, 50))
    assert reader.position(tp) == 50
    reader.seek(tp, 10)
    got = reader.poll(5, 5.0)
    assert int(got[0].value) == 10
    reader.close()


def check_group_consumer_commits(log_: TopicLog) -> None:
    topic = unique("group")
    log_.ensure_topic(TopicSpec(topic, 2))
    p = log_.producer()
    for i in range(100):
        p.send(topic, str(i).encode(), key=str(i).encode())
    p.flush(30)
    p.close()
    group = unique("g")
    # Short sessions: Tansu holds the first JoinGroup for about half of session.timeout.ms.
    fast = {"session.timeout.ms": "2000", "heartbeat.interval.ms": "500"}
    c = log_.group_consumer(group, [topic], **fast)
    seen: list[int] = []
    ends: dict[TopicPartition, int] = {}
    for _ in range(100):
        for r in c.poll(500, 0.5):
            seen.append(int(r.value))
            ends[TopicPartition(r.topic, r.partition)] = r.offset + 1
        if len(seen) >= 100:
            break
    assert sorted(seen) == list(range(100))
    # Positions come from the records themselves: Tansu 0.6 under-reports end offsets.
    c.commit(ends)
    assert c.committed(list(ends)) == ends
    c.close()
    # A new member of the same group resumes after the committed offsets.
    c2 = log_.group_consumer(group, [topic], **fast)
    assert c2.poll(500, 2.0) == []
    c2.close()

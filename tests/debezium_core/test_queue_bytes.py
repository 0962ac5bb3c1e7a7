"""`max.queue.size.in.bytes` in the ChangeEventQueue: the producer blocks at the
bound in bytes, as Debezium's queue does; a record larger than the bound passes alone."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from cdc.api import SchemaBuilder, SourceRecord, Struct
from cdc_debezium.queue import ChangeEventQueue, QueueClosed, approximate_size

SCHEMA = (
    SchemaBuilder.struct()
    .name("t.Value")
    .field("id", SchemaBuilder.int64().build())
    .field("name", SchemaBuilder.string().optional().build())
    .build()
)


def _record(i: int, name: str = "x") -> SourceRecord:
    value = Struct(SCHEMA).put("id", i).put("name", name)
    return SourceRecord({"server": "s"}, {"pos": i}, "t", None, None, None, SCHEMA, value)


def _sized(sizes: dict[str, int]) -> object:
    return lambda item: sizes[item]


def _blocked(target: object, *args: object) -> tuple[threading.Thread, list[str]]:
    """`target(*args)` on a thread; its outcome once it returns."""
    outcome: list[str] = []

    def run() -> None:
        try:
            target(*args)  # type: ignore[operator]
            outcome.append("enqueued")
        except QueueClosed:
            outcome.append("closed")

    t = threading.Thread(target=run)
    t.start()
    return t, outcome


def _still_blocked(t: threading.Thread) -> bool:
    t.join(0.2)
    return t.is_alive()


def test_the_producer_blocks_once_the_queued_bytes_reach_the_bound() -> None:
    sizes = {"a": 40, "b": 40, "c": 40, "d": 10}
    q: ChangeEventQueue[str] = ChangeEventQueue(10, 100, 10_000, max_queue_size_in_bytes=100, sizer=_sized(sizes))
    q.enqueue("a")
    q.enqueue("b")
    q.enqueue("c")  # 80 < 100 when it came: in, as Debezium lets a record in below the bound
    assert q.size_in_bytes == 120 and len(q) == 3
    t, outcome = _blocked(q.enqueue, "d")
    assert _still_blocked(t) and outcome == []
    started = time.monotonic()
    assert q.poll() == ["a", "b", "c"]  # at the bound: poll returns without waiting poll.interval.ms
    assert time.monotonic() - started < 5
    t.join(5)
    assert outcome == ["enqueued"] and q.size_in_bytes == 10
    assert q.poll() == ["d"] and q.size_in_bytes == 0


def test_a_record_larger_than_the_bound_passes_alone() -> None:
    sizes = {"small": 10, "huge": 1000, "next": 10}
    q: ChangeEventQueue[str] = ChangeEventQueue(10, 100, 50, max_queue_size_in_bytes=100, sizer=_sized(sizes))
    q.enqueue("huge")  # an empty queue lets any record in
    t, outcome = _blocked(q.enqueue, "next")
    assert _still_blocked(t)
    assert q.poll() == ["huge"]
    t.join(5)
    assert outcome == ["enqueued"] and q.poll() == ["next"]
    # enqueue_many takes the same rule record by record: the huge one in the middle goes alone.
    t, outcome = _blocked(q.enqueue_many, ["small", "huge", "small"])
    batches: list[list[str]] = []
    while sum(map(len, batches)) < 3:
        batches.append(q.poll())
    t.join(5)
    assert outcome == ["enqueued"]
    assert [b for b in batches if b] == [["small", "huge"], ["small"]]  # the huge one let in below the bound
    assert q.size_in_bytes == 0


def test_enqueue_many_waits_for_room_in_bytes_between_records() -> None:
    sizes = {str(i): 30 for i in range(10)}
    q: ChangeEventQueue[str] = ChangeEventQueue(100, 1000, 50, max_queue_size_in_bytes=100, sizer=_sized(sizes))
    t, outcome = _blocked(q.enqueue_many, [str(i) for i in range(10)])
    assert _still_blocked(t)
    assert len(q) == 4 and q.size_in_bytes == 120  # 0, 30, 60, 90 were below the bound when they came
    seen: list[str] = []
    while len(seen) < 10:
        seen.extend(q.poll())
        assert q.size_in_bytes <= 120
    t.join(5)
    assert outcome == ["enqueued"] and seen == [str(i) for i in range(10)]


def test_close_releases_a_producer_blocked_on_bytes() -> None:
    q: ChangeEventQueue[str] = ChangeEventQueue(2, 10, 50, max_queue_size_in_bytes=5, sizer=lambda item: 5)
    q.enqueue("a")
    t, outcome = _blocked(q.enqueue, "b")
    assert _still_blocked(t)
    q.close()
    t.join(5)
    assert outcome == ["closed"]


def test_without_a_bound_in_bytes_nothing_is_sized() -> None:
    def never(item: object) -> int:
        raise AssertionError("sized without a bound")

    q: ChangeEventQueue[int] = ChangeEventQueue(2, 4, 10, sizer=never)
    q.enqueue(1)
    q.enqueue_many([2, 3])
    assert q.poll() == [1, 2] and q.size_in_bytes == 0


@pytest.mark.parametrize("bad", [-1, "100", 1.5, True])
def test_a_bad_bound_is_refused_naming_the_key(bad: object) -> None:
    with pytest.raises(ValueError, match=r"max\.queue\.size\.in\.bytes"):
        ChangeEventQueue(10, 100, 50, max_queue_size_in_bytes=bad)  # type: ignore[arg-type]


def test_the_size_estimate_counts_what_a_record_holds_not_what_records_share() -> None:
    short, long = _record(1, "x"), _record(2, "x" * 10_000)
    assert approximate_size(long) - approximate_size(short) == sys.getsizeof("x" * 10_000) - sys.getsizeof("x")
    # Schemas, the topic and the source partition are shared: not counted.
    assert approximate_size(short) < 1000
    # Real records, queued with a real estimate: a bound of ~3 records holds 3 and blocks the 4th.
    each = approximate_size(short)
    q: ChangeEventQueue[SourceRecord] = ChangeEventQueue(10, 100, 50, max_queue_size_in_bytes=3 * each)
    for i in range(3):
        q.enqueue(_record(i))
    t, outcome = _blocked(q.enqueue, _record(3))
    assert _still_blocked(t)
    assert [r.source_offset["pos"] for r in q.poll()] == [0, 1, 2]
    t.join(5)
    assert outcome == ["enqueued"]


def _mysql(props: dict[str, str]) -> object:
    from cdc_mysql.config import MySqlConnectorConfig

    return MySqlConnectorConfig({**props, "database.server.id": "5400"})


def _postgres(props: dict[str, str]) -> object:
    from cdc_postgres.config import PostgresConnectorConfig

    return PostgresConnectorConfig.parse({**props, "database.dbname": "shop"})


def _validate(parse: object, props: dict[str, str]) -> dict[str, list[str]]:
    from cdc_mysql.config import validate as mysql_validate
    from cdc_postgres.config import validate as postgres_validate

    full = {**props, "database.server.id": "5400"} if parse is _mysql else {**props, "database.dbname": "shop"}
    checks = mysql_validate if parse is _mysql else postgres_validate
    return {v.name: v.errors for v in checks(full) if v.errors}


CONNECTOR_BASE = {"database.hostname": "db", "database.user": "u", "topic.prefix": "srv"}


@pytest.mark.parametrize("parse", [_mysql, _postgres], ids=["mysql", "postgres"])
def test_both_connectors_read_the_bound_and_do_not_report_it_unsupported(parse, caplog) -> None:  # type: ignore[no-untyped-def]
    import logging

    caplog.set_level(logging.WARNING)
    assert parse(CONNECTOR_BASE).max_queue_size_in_bytes == 0  # Debezium's default: no bound
    assert parse({**CONNECTOR_BASE, "max.queue.size.in.bytes": "1048576"}).max_queue_size_in_bytes == 1_048_576
    assert "max.queue.size.in.bytes" not in caplog.text


@pytest.mark.parametrize("bad", ["-1", "lots"])
@pytest.mark.parametrize("parse", [_mysql, _postgres], ids=["mysql", "postgres"])
def test_both_connectors_name_the_key_of_a_bad_bound(parse, bad: str) -> None:  # type: ignore[no-untyped-def]
    from cdc.api import ConfigException

    assert list(_validate(parse, {**CONNECTOR_BASE, "max.queue.size.in.bytes": bad})) == ["max.queue.size.in.bytes"]
    with pytest.raises(ConfigException) as e:
        parse({**CONNECTOR_BASE, "max.queue.size.in.bytes": bad})
    assert e.value.name == "max.queue.size.in.bytes"

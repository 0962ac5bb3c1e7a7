"""Debezium's initial snapshot notifications (`notification.enabled.channels=log,sink`) on MySQL/MariaDB.

Seeded table counts and sizes (empty tables included, and a captured table whose rows
snapshot.include.collection.list leaves out), on one connection and on two: the sink topic gets,
in the stream's order, STARTED before any record, per table read IN_PROGRESS before its rows and
TABLE_SCAN_COMPLETED with its row count (its last row, held back for its marker, follows), and
COMPLETED after the last record; each with its own UUID, aggregate_type "Initial Snapshot" and
connector_name topic.prefix. The log channel logs the same notifications. A snapshot stopped and
resumed is ABORTED, then notifies the tables it still reads, with the rows it read, and its data is
complete.
A restart after the snapshot completed sends SKIPPED alone (streaming on from the offset, and with
snapshot.mode=initial_only, where nothing is streamed). Without notification.enabled.channels nothing is sent.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from typing import Any

import pytest

from cdc.api import SourceRecord
from tests.mysql.harness import MemoryOffsets, connector_props, execute, op
from tests.mysql.test_snapshot_notifications import TOPIC, Runner, notifications
from tests.rig import MariaDbServer

PREFIX = "dbserver1"


def _tables(server: MariaDbServer, rnd: random.Random) -> dict[str, int]:
    """Creates t0..tN (seeded sizes, at least one empty) and `skipped` (rows the snapshot does not read)."""
    sizes = {f"t{i}": rnd.choice([0, rnd.randint(1, 9), rnd.randint(10, 80)]) for i in range(rnd.randint(2, 6))}
    sizes[rnd.choice(sorted(sizes))] = 0
    statements = ["CREATE TABLE skipped (id INT PRIMARY KEY)", "INSERT INTO skipped VALUES (1), (2)"]
    for name, n in sizes.items():
        statements.append(f"CREATE TABLE {name} (id INT PRIMARY KEY, v VARCHAR(20))")
        if n:
            ids = rnd.sample(range(1, 1_000_000), n)
            statements.append(f"INSERT INTO {name} VALUES " + ",".join(f"({i}, 'v{rnd.randint(0, 99)}')" for i in ids))
    execute(server, *statements)
    return sizes


def _props(server: MariaDbServer, rnd: random.Random, threads: int, **extra: Any) -> dict[str, str]:
    db = server.database
    return connector_props(
        server, snapshot__max__threads=threads, snapshot__fetch__size=rnd.randint(2, 9),
        max__batch__size=rnd.randint(2, 7), snapshot__include__collection__list=f"{db}\\.t[0-9]+", **extra,
    )  # fmt: skip


def _sink(**extra: Any) -> dict[str, str]:
    return {"notification.enabled.channels": "log,sink", "notification.sink.topic.name": TOPIC, **extra}


def _table(r: SourceRecord) -> str | None:
    """`db.table` of a snapshot read record, else None."""
    if r.topic == TOPIC or op(r) != "r":
        return None
    return r.topic.split(".", 1)[1]


def _check_run(
    records: list[SourceRecord], read: dict[str, int], captured: list[str], all_read: list[str], threads: int
) -> None:
    """The notifications of one snapshot run that read `read` ({table: rows}) and completed."""
    every = notifications(records)
    where = {id(r): i for i, r in enumerate(records)}
    at = {n["id"]: where[id(r)] for n, r in zip(every, [r for r in records if r.topic == TOPIC], strict=True)}
    _check_chunks(every, read, captured, threads)
    got = [n for n in every if not n["type"].startswith("TABLE_CHUNK_")]
    assert {n["aggregate_type"] for n in got} == {"Initial Snapshot"}
    assert len({n["id"] for n in got}) == len(got) and all(uuid.UUID(n["id"]) for n in got)
    assert all(n["additional_data"]["connector_name"] == PREFIX and n["timestamp"] > 0 for n in got)
    types = [n["type"] for n in got]
    assert types[0] == "STARTED" and types[-1] == "COMPLETED" and at[got[0]["id"]] == 0, types
    assert got[0]["additional_data"] == got[-1]["additional_data"] == {"connector_name": PREFIX}
    assert [r for r in records[at[got[-1]["id"]] :] if _table(r)] == [], "a read after COMPLETED"
    middle = got[1:-1]
    assert sorted(types[1:-1]) == sorted(["IN_PROGRESS", "TABLE_SCAN_COMPLETED"] * len(read)), types
    starts = {n["additional_data"]["current_collection_in_progress"]: n for n in middle if n["type"] == "IN_PROGRESS"}
    ends = {n["additional_data"]["scanned_collection"]: n for n in middle if n["type"] == "TABLE_SCAN_COMPLETED"}
    assert set(starts) == set(ends) == set(read)
    if threads == 1:  # one table after another, in name order
        assert [n["type"] for n in middle] == ["IN_PROGRESS", "TABLE_SCAN_COMPLETED"] * len(read)
        assert [n["additional_data"].get("current_collection_in_progress") for n in middle[::2]] == sorted(read)
    for table, rows in read.items():
        assert starts[table]["additional_data"] == {
            "connector_name": PREFIX, "current_collection_in_progress": table, "data_collections": ",".join(all_read),
        }  # fmt: skip
        assert ends[table]["additional_data"] == {
            "connector_name": PREFIX, "scanned_collection": table, "data_collections": ",".join(captured),
            "total_rows_scanned": str(rows), "status": "SUCCEEDED",
        }  # fmt: skip
        mine = [i for i, r in enumerate(records) if _table(r) == table]
        assert len(mine) == rows
        # IN_PROGRESS before the table's rows; all but its last (held back for its marker) before its end
        assert all(i > at[starts[table]["id"]] for i in mine)
        assert len([i for i in mine if i < at[ends[table]["id"]]]) == max(rows - 1, 0)


def _check_chunks(got: list[dict[str, Any]], read: dict[str, int], captured: list[str], threads: int) -> None:
    """A chunked snapshot (threads > 1): per chunk TABLE_CHUNK_IN_PROGRESS, then TABLE_CHUNK_COMPLETED, between
    its table's IN_PROGRESS and TABLE_SCAN_COMPLETED; every chunk index of the table once; none with one thread."""
    chunks = [n for n in got if n["type"].startswith("TABLE_CHUNK_")]
    if threads == 1:
        assert chunks == []
        return
    position = {n["id"]: i for i, n in enumerate(got)}
    for table in read:
        begin = next(n for n in got if n["type"] == "IN_PROGRESS"
                     and n["additional_data"]["current_collection_in_progress"] == table)  # fmt: skip
        end = next(n for n in got if n["type"] == "TABLE_SCAN_COMPLETED"
                   and n["additional_data"]["scanned_collection"] == table)  # fmt: skip
        starts = [n for n in chunks if n["type"] == "TABLE_CHUNK_IN_PROGRESS"
                  and n["additional_data"]["current_collection_in_progress"] == table]  # fmt: skip
        ends = [n for n in chunks if n["type"] == "TABLE_CHUNK_COMPLETED"
                and n["additional_data"]["scanned_collection"] == table]  # fmt: skip
        total = {n["additional_data"]["total_chunks"] for n in starts + ends}
        assert len(total) == 1, total
        indexes = list(range(int(total.pop())))
        assert sorted(int(n["additional_data"]["chunk_index"]) for n in starts) == indexes
        assert sorted(int(n["additional_data"]["chunk_index"]) for n in ends) == indexes
        by_index = {n["additional_data"]["chunk_index"]: n for n in starts}
        for n in ends:
            assert position[by_index[n["additional_data"]["chunk_index"]]["id"]] < position[n["id"]]
            assert n["additional_data"]["data_collections"] == ",".join(captured)
            assert n["additional_data"]["status"] == "SUCCEEDED"
        assert all(position[begin["id"]] < position[n["id"]] < position[end["id"]] for n in starts + ends)
        assert int(starts[0]["additional_data"]["total_rows_scanned"]) == 0
        assert all(0 <= int(n["additional_data"]["total_rows_scanned"]) <= read[table] for n in starts)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("seed", [6101, 6102])
def test_the_initial_snapshot_is_notified_on_the_sink_topic_and_the_log(
    mariadb_db: MariaDbServer, seed: int, threads: int, caplog: pytest.LogCaptureFixture
) -> None:
    rnd = random.Random(seed * 10 + threads)
    sizes = _tables(mariadb_db, rnd)
    db = mariadb_db.database
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    with Runner(_props(mariadb_db, rnd, threads, **_sink())) as run:
        run.poll_until(lambda _: run.task.streaming is not None, timeout=60, what="the end of the snapshot")
        run.poll_until(lambda rs: notifications(rs)[-1]["type"] == "COMPLETED", what="COMPLETED")
    read = {f"{db}.{t}": n for t, n in sizes.items()}
    captured = sorted([*read, f"{db}.skipped"])
    _check_run(run.records, read, captured, sorted(read), threads)
    got = notifications(run.records)  # the chunk notifications too
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[Notification Service] ")]
    assert [m.split("'")[1] for m in logged] == [n["id"] for n in got], "the log channel: the same, in order"
    assert all("aggregateType='Initial Snapshot'" in m for m in logged)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_resumed_snapshot_notifies_the_tables_it_reads(
    mariadb_db: MariaDbServer, threads: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    rnd = random.Random(6200 + threads)
    sizes = _tables(mariadb_db, rnd)
    sizes["t9"] = 120  # the last table read: the stop comes within it or before it
    execute(
        mariadb_db, "CREATE TABLE t9 (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t9 VALUES " + ",".join(f"({i}, 'b')" for i in range(1, 121)),
    )  # fmt: skip
    db = mariadb_db.database
    props = _props(mariadb_db, rnd, threads, **_sink())
    offsets = MemoryOffsets()
    total = sum(sizes.values())
    cut = rnd.randint(1, total // 2)
    with Runner(props, offsets) as first:
        deadline = time.monotonic() + 60
        while len([r for r in first.records if _table(r)]) < cut:
            assert time.monotonic() < deadline, "the first attempt read too little"
            first.poll_once()
    stored = next(iter(offsets.stored.values()))
    assert stored.get("snapshot") == "INITIAL", f"the snapshot completed before the stop ({cut} of {total})"
    assert notifications(first.records)[0]["type"] == "STARTED"
    assert "COMPLETED" not in [n["type"] for n in notifications(first.records)]
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[Notification Service] ")]
    assert "type='ABORTED'" in logged[-1], "the stop: ABORTED (on the log; the stopped task's queue is not polled)"
    done = set(stored.get("snapshot_tables_done") or ())
    with Runner(props, offsets) as second:
        second.poll_until(lambda _: second.task.streaming is not None, timeout=60, what="the end of the snapshot")
        second.poll_until(lambda rs: notifications(rs)[-1]["type"] == "COMPLETED", what="COMPLETED")
    all_read = sorted(f"{db}.{t}" for t in sizes)
    again = {t: len([r for r in second.records if _table(r) == t]) for t in all_read if t not in done}
    _check_run(second.records, again, sorted([*all_read, f"{db}.skipped"]), all_read, threads)
    # Resumed, not restarted, and nothing lost: every row read, none of a table done before the stop.
    ids: dict[str, set[int]] = {}
    for r in first.records + second.records:
        if (t := _table(r)) is not None:
            ids.setdefault(t, set()).add(r.value.get("after").get("id"))
    assert {t: len(ids.get(t, ())) for t in all_read} == {f"{db}.{t}": n for t, n in sizes.items()}
    assert not any(_table(r) in done for r in second.records)


def test_nothing_is_notified_without_channels(mariadb_db: MariaDbServer, caplog: pytest.LogCaptureFixture) -> None:
    rnd = random.Random(6300)
    sizes = _tables(mariadb_db, rnd)
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    with Runner(_props(mariadb_db, rnd, 1, notification__sink__topic__name=TOPIC)) as run:
        run.poll_until(lambda _: run.task.streaming is not None, timeout=60, what="the end of the snapshot")
    assert len([r for r in run.records if _table(r)]) == sum(sizes.values())
    assert all(r.source_partition is not None for r in run.records), "a record without a partition: a notification"
    assert not [r for r in caplog.records if r.getMessage().startswith("[Notification Service]")]


@pytest.mark.parametrize("mode", ["initial", "initial_only"])
def test_a_restart_after_the_snapshot_is_notified_as_skipped(mariadb_db: MariaDbServer, mode: str) -> None:
    rnd = random.Random(6400)
    sizes = _tables(mariadb_db, rnd)
    props = _props(mariadb_db, rnd, 1, snapshot__mode=mode, **_sink())
    offsets = MemoryOffsets()
    with Runner(props, offsets) as first:
        first.poll_until(lambda rs: (n := notifications(rs)) and n[-1]["type"] == "COMPLETED", what="COMPLETED")
    assert len([r for r in first.records if _table(r)]) == sum(sizes.values())
    with Runner(props, offsets) as second:
        second.poll_until(lambda rs: bool(notifications(rs)), what="a notification")
        if mode == "initial":
            execute(mariadb_db, "INSERT INTO skipped VALUES (3)")
            second.poll_until(lambda rs: any(op(r) == "c" for r in rs), what="the streamed insert")
    got = notifications(second.records)
    assert [(n["aggregate_type"], n["type"], n["additional_data"]) for n in got] == [
        ("Initial Snapshot", "SKIPPED", {"connector_name": PREFIX})
    ]
    assert not [r for r in second.records if _table(r)], "the restart read rows again"

"""snapshot.new.tables=parallel on MariaDB: a restart whose filters capture more tables snapshots only those.

Seeded: which key shapes are captured from the start and which are added, whether they are added by
widening `table.include.list` or by narrowing `table.exclude.list`, and whether the task is stopped
mid-snapshot and restarted. A writer changes every table the whole time. The events, replayed per key
by their binlog sequence as a sink applies them, must equal each added table; the tables captured from
the start are never read again; a later restart with the same filters reads nothing.

CDC_NEW_TABLES_SEED=<n> replaces every case's seed.
"""

from __future__ import annotations

import logging
import os
import random
import re
from pathlib import Path

import pytest

from cdc.api import ConfigException
from tests.mysql.harness import MemoryOffsets, TaskRunner, connector_props, execute
from tests.mysql.incremental_support import create_signal_table, incremental_reads, replay, send_signal, signal_props
from tests.mysql.test_incremental_snapshot_workload import ROWS, SHAPES, Writer, _caught_up, _create, _table
from tests.rig import MariaDbServer

SEED_ENV = "CDC_NEW_TABLES_SEED"


def _filters(db: str, style: str, captured: list[str], every: list[str]) -> dict[str, str]:
    """`table.include.list` naming `captured`, or `table.exclude.list` naming the rest of `every`."""
    if style == "include":
        return {"table.include.list": ",".join(re.escape(f"{db}.{t}") for t in captured)}
    left_out = [t for t in every if t not in captured]
    return {"table.exclude.list": ",".join(re.escape(f"{db}.{t}") for t in left_out)} if left_out else {}


def _runner(server: MariaDbServer, offsets: MemoryOffsets, filters: dict[str, str], read_only: bool) -> TaskRunner:
    """The connector with snapshot.new.tables=parallel: watermarks in the signal table, or read.only GTID sets
    (no signal channel at all then: the automatic snapshot needs none)."""
    watermarks = {"read.only": "true"} if read_only else signal_props(server)
    props = connector_props(
        server, incremental__snapshot__chunk__size="16", max__batch__size="64", snapshot__new__tables="parallel",
        **watermarks,
    )  # fmt: skip
    props.update(filters)
    return TaskRunner(props, offsets)


@pytest.mark.parametrize(
    "seed,style,kill,read_only",
    [(11, "include", False, False), (12, "exclude", True, False), (13, "include", True, False),
     (14, "exclude", True, True)],
)  # fmt: skip
def test_a_restart_with_wider_filters_snapshots_only_the_added_tables(
    mariadb_db: MariaDbServer, seed: int, style: str, kill: bool, read_only: bool
) -> None:
    seed = int(os.environ.get(SEED_ENV, seed))
    print(f"{SEED_ENV}={seed}")  # shown with a failure: rerun with it
    rnd = random.Random(seed)
    db = mariadb_db.database
    create_signal_table(mariadb_db)
    execute(mariadb_db, "CREATE TABLE marker (id INT PRIMARY KEY, v INT)", "INSERT INTO marker VALUES (1, 0)")
    keys = _create(mariadb_db, rnd)
    shapes = [s.table for s in SHAPES]
    rnd.shuffle(shapes)
    first = shapes[: rnd.randint(0, 2)]
    added = sorted(shapes[len(first) : len(first) + rnd.randint(1, len(shapes) - len(first))])
    every = ["marker", "debezium_signal", *shapes]
    before = _filters(db, style, ["marker", *first], every)
    after = _filters(db, style, ["marker", *first, *added], every)
    print(f"captured first: {first}; added: {added}; {before} -> {after}")
    offsets = MemoryOffsets()
    with _runner(mariadb_db, offsets, before, read_only) as run:
        run.poll_until(lambda _: run.task.streaming is not None, timeout=60, what="streaming")
        run.poll_once()
    stored = next(iter(offsets.stored.values()))
    assert {k: stored.get(k.replace(".", "_")) for k in before} == {k: v.split(",") for k, v in before.items()}
    assert all(not incremental_reads(run.records, t) for t in shapes)

    records = []
    writer = Writer(mariadb_db, seed, keys)
    writer.start()
    run = _runner(mariadb_db, offsets, after, read_only).__enter__()
    try:
        if kill:
            victim = added[0]
            run.poll_until(lambda rs: len(incremental_reads(rs, victim)) > ROWS // 3, timeout=90, what="reads")
            stored = next(iter(offsets.stored.values()))
            assert "incremental_snapshot_collections" in stored and "incremental_snapshot_primary_key" in stored
            run.__exit__(None, None, None)
            records.extend(run.records)
            first_run_reads = len(incremental_reads(run.records, victim))
            run = _runner(mariadb_db, offsets, after, read_only).__enter__()
            run.poll_until(lambda _: run.task.streaming is not None, timeout=60, what="streaming")
        run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=180, what="the incremental snapshot's end")
        writer.stop_flag.set()
        writer.join(30)
        assert writer.error is None, writer.error
        _caught_up(run, mariadb_db)
    finally:
        writer.stop_flag.set()
        run.__exit__(None, None, None)
    records.extend(run.records)
    assert writer.changes > 30, writer.changes
    for table in added:
        assert incremental_reads(records, table), f"{table} was added but not read"
        shape = next(s for s in SHAPES if s.table == table)
        assert replay(records, table) == _table(mariadb_db, shape), table
    for table in ["marker", *first]:
        assert not incremental_reads(records, table), f"{table} was captured before: it must not be read again"
    for table in shapes:
        if table not in first and table not in added:
            assert not any(r.topic.endswith("." + table) for r in records), f"{table} is not captured"
    if kill:
        # The restart went on from the stored chunk: fewer reads of the interrupted table than it has rows.
        assert first_run_reads > 0 and len(incremental_reads(run.records, added[0])) < ROWS
    stored = next(iter(offsets.stored.values()))
    assert "incremental_snapshot_collections" not in stored
    assert {k: stored.get(k.replace(".", "_")) for k in after} == {k: v.split(",") for k, v in after.items()}

    # Restarted with the same filters: nothing is new, nothing is read.
    with _runner(mariadb_db, offsets, after, read_only) as run:
        run.poll_until(lambda _: run.task.streaming is not None, timeout=60, what="streaming")
        assert run.task.signals is not None and not run.task.signals.ctx.running
        execute(mariadb_db, "UPDATE marker SET v = v + 1")
        run.poll_until(lambda rs: any(r.topic.endswith(".marker") for r in rs), timeout=30, what="the marker")
    assert not incremental_reads(run.records)


def test_a_narrower_filter_and_an_offset_without_filters_queue_nothing(
    mariadb_db: MariaDbServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = mariadb_db.database
    create_signal_table(mariadb_db)
    execute(
        mariadb_db,
        "CREATE TABLE a (id INT PRIMARY KEY)",
        "CREATE TABLE b (id INT PRIMARY KEY)",
        "INSERT INTO a VALUES (1)",
        "INSERT INTO b VALUES (1), (2)",
    )
    offsets = MemoryOffsets()
    # First run without the setting: its offsets say nothing about filters.
    history = str(tmp_path / "history.jsonl")
    plain = connector_props(
        mariadb_db, table__include__list=f"{db}\\.a", schema__history__internal__file__filename=history,
        **signal_props(mariadb_db),
    )  # fmt: skip
    with TaskRunner(plain, offsets) as run:
        run.wait_data(1)
    assert not any(k.startswith("table_") for k in next(iter(offsets.stored.values())))
    # b added with the setting on: the offset cannot say b is new; the warning names the signal instead.
    wider = {**plain, "snapshot.new.tables": "parallel", "table.include.list": f"{db}\\.a,{db}\\.b"}
    with caplog.at_level(logging.WARNING, logger="cdc_mysql"), TaskRunner(wider, offsets) as run:
        run.poll_until(lambda _: run.task.streaming is not None, timeout=60, what="streaming")
        assert not run.task.signals.ctx.running
        execute(mariadb_db, "INSERT INTO b VALUES (3)")
        run.wait_data(1)
    assert any(f"{db}.b" in r.getMessage() and "execute-snapshot" in r.getMessage() for r in caplog.records)
    assert next(iter(offsets.stored.values()))["table_include_list"] == [f"{db}\\.a", f"{db}\\.b"]
    # Narrowed to a: nothing is new.
    narrow = {**wider, "table.include.list": f"{db}\\.a"}
    with TaskRunner(narrow, offsets) as run:
        run.poll_until(lambda _: run.task.streaming is not None, timeout=60, what="streaming")
        assert not run.task.signals.ctx.running
        execute(mariadb_db, "INSERT INTO a VALUES (2)")
        run.wait_data(1)
    assert not incremental_reads(run.records)
    assert next(iter(offsets.stored.values()))["table_include_list"] == [f"{db}\\.a"]


def test_parallel_without_a_signal_table_or_read_only_is_refused_with_the_fix(mariadb_db: MariaDbServer) -> None:
    props = connector_props(mariadb_db, snapshot__new__tables="parallel")
    with pytest.raises(ConfigException, match=r"signal\.data\.collection.*read\.only=true"):
        TaskRunner(props).__enter__()
    bad = connector_props(mariadb_db, snapshot__new__tables="yes", **signal_props(mariadb_db))
    with pytest.raises(ConfigException, match=r"snapshot\.new\.tables=yes: use off .* or parallel"):
        TaskRunner(bad).__enter__()


def test_a_resumed_snapshot_of_a_table_no_longer_captured_is_dropped(
    mariadb_db: MariaDbServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopped mid-snapshot of `t`, restarted with `t` out of the include list: its rows must not go on."""
    db = mariadb_db.database
    create_signal_table(mariadb_db)
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE u (id INT PRIMARY KEY)")
    execute(mariadb_db, "INSERT INTO t VALUES " + ",".join(f"({i})" for i in range(1, 401)))
    offsets = MemoryOffsets()
    both = connector_props(
        mariadb_db, snapshot__mode="no_data", table__include__list=f"{db}\\.t,{db}\\.u", max__batch__size="16",
        incremental__snapshot__chunk__size="16", **signal_props(mariadb_db),
    )  # fmt: skip
    with TaskRunner(both, offsets) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        send_signal(mariadb_db, "s-t", "execute-snapshot", {"data-collections": [f"{db}.t"]})
        run.poll_until(lambda rs: len(incremental_reads(rs, "t")) >= 32, timeout=90, what="reads of t")
    stored = next(iter(offsets.stored.values()))
    assert "incremental_snapshot_collections" in stored, stored
    only_u = {**both, "table.include.list": f"{db}\\.u"}
    with caplog.at_level(logging.WARNING), TaskRunner(only_u, offsets) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        execute(mariadb_db, "INSERT INTO u VALUES (1)")
        run.wait_data(1, "u")
        assert not run.task.signals.ctx.running, [c.id for c in run.task.signals.ctx.collections]
    assert not incremental_reads(run.records), [(r.topic, r.key) for r in incremental_reads(run.records)][:5]
    assert any(f"{db}.t dropped: no longer captured" in r.getMessage() for r in caplog.records), caplog.text[-3000:]
    assert "incremental_snapshot_collections" not in (stored := next(iter(offsets.stored.values()))), stored

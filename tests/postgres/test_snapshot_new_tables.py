"""snapshot.new.tables=parallel on PostgreSQL: a restart whose filters capture more tables snapshots only those.

Seeded as the MariaDB test (tests/mysql/test_snapshot_new_tables.py): which key shapes (int, text,
composite, bytea) are captured from the start and which are added, by `table.include.list` or
`table.exclude.list`, and whether the task is stopped mid-snapshot. A writer changes every table the
whole time; the events, replayed per key by their WAL sequence, must equal each added table, the
tables captured from the start are not read again, and a later restart with the same filters reads
nothing. CDC_NEW_TABLES_SEED=<n> replaces every case's seed.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time

import pytest

from cdc.api import ConfigException, SourceRecord
from tests.postgres.harness import MemoryOffsets, TaskRunner, connector_props
from tests.postgres.test_incremental_snapshot import (
    ROWS,
    SHAPES,
    SIGNALS,
    Writer,
    _reads,
    _replay,
    _setup,
    _sql,
    _table,
    marker_seen,
)
from tests.rig import PostgresServer

SEED_ENV = "CDC_NEW_TABLES_SEED"


def _filters(style: str, captured: list[str], every: list[str]) -> dict[str, str]:
    if style == "include":
        return {"table.include.list": ",".join(re.escape(f"public.{t}") for t in captured)}
    left_out = [t for t in every if t not in captured]
    return {"table.exclude.list": ",".join(re.escape(f"public.{t}") for t in left_out)} if left_out else {}


def _runner(
    db: PostgresServer, offsets: MemoryOffsets, slot: str, filters: dict[str, str], read_only: bool
) -> TaskRunner:
    """snapshot.new.tables=parallel with signal-table watermarks, or read.only (pg_current_snapshot(), no channel)."""
    watermarks = {"read.only": "true"} if read_only else {"signal.data.collection": SIGNALS}
    props = connector_props(
        db, incremental__snapshot__chunk__size="16", max__batch__size="64", snapshot__new__tables="parallel",
        slot__name=slot, slot__drop__on__stop="false", **watermarks,
    )  # fmt: skip
    props.update(filters)
    return TaskRunner(props, offsets)


@pytest.mark.parametrize(
    "seed,style,kill,read_only",
    [(21, "include", True, False), (22, "exclude", False, False), (23, "include", True, True)],
)
def test_a_restart_with_wider_filters_snapshots_only_the_added_tables(
    postgres_db: PostgresServer, seed: int, style: str, kill: bool, read_only: bool
) -> None:
    seed = int(os.environ.get(SEED_ENV, seed))
    print(f"{SEED_ENV}={seed}")
    rnd = random.Random(seed)
    keys = _setup(postgres_db, rnd)
    shapes = [s.table for s in SHAPES]
    rnd.shuffle(shapes)
    first = shapes[: rnd.randint(0, 2)]
    added = sorted(shapes[len(first) : len(first) + rnd.randint(1, len(shapes) - len(first))])
    every = ["marker", "debezium_signal", *shapes]
    before = _filters(style, ["marker", *first], every)
    after = _filters(style, ["marker", *first, *added], every)
    print(f"captured first: {first}; added: {added}; {before} -> {after}")
    offsets = MemoryOffsets()
    slot = f"newt_{seed}_{int(time.time() * 1000) % 100000}"
    records: list[SourceRecord] = []
    writer = Writer(postgres_db, seed, keys)
    try:
        with _runner(postgres_db, offsets, slot, before, read_only) as run, postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
            marker_seen(run, postgres_db)
        stored = next(iter(offsets.stored.values()))
        assert {k: stored.get(k.replace(".", "_")) for k in before} == {k: v.split(",") for k, v in before.items()}
        assert not _reads(run.records)

        writer.start()
        run = _runner(postgres_db, offsets, slot, after, read_only).__enter__()
        try:
            if kill:
                victim = added[0]
                run.poll_until(lambda rs: len(_reads(rs, victim)) > ROWS // 3, timeout=90, what=f"reads of {victim}")
                stored = next(iter(offsets.stored.values()))
                assert "incremental_snapshot_collections" in stored and "incremental_snapshot_primary_key" in stored
                run.__exit__(None, None, None)
                records.extend(run.records)
                first_run_reads = len(_reads(run.records, victim))
                run = _runner(postgres_db, offsets, slot, after, read_only).__enter__()
            run.poll_until(lambda _: run.task.signals is not None and run.task.signals.ctx.running, timeout=60,
                           what="the incremental snapshot")  # fmt: skip
            run.poll_until(lambda _: not run.task.signals.ctx.running, timeout=180, what="the snapshot's end")
            writer.stop_flag.set()
            writer.join(30)
            assert writer.error is None, writer.error
            marker_seen(run, postgres_db)
        finally:
            writer.stop_flag.set()
            run.__exit__(None, None, None)
        records.extend(run.records)
        assert writer.changes > 30, writer.changes
        for table in added:
            assert _reads(records, table), f"{table} was added but not read"
            shape = next(s for s in SHAPES if s.table == table)
            assert _replay(records, table) == _table(postgres_db, shape), table
        for table in ["marker", *first]:
            assert not _reads(records, table), f"{table} was captured before: it must not be read again"
        for table in shapes:
            if table not in first and table not in added:
                assert not any(r.topic.endswith("." + table) for r in records), f"{table} is not captured"
        if kill:
            assert first_run_reads > 0 and len(_reads(run.records, added[0])) < ROWS
        stored = next(iter(offsets.stored.values()))
        assert "incremental_snapshot_collections" not in stored
        assert {k: stored.get(k.replace(".", "_")) for k in after} == {k: v.split(",") for k, v in after.items()}

        # Restarted with the same filters: nothing is new, nothing is read.
        with _runner(postgres_db, offsets, slot, after, read_only) as run, postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
            assert run.task.signals is not None and not run.task.signals.ctx.running
            marker_seen(run, postgres_db)
        assert not _reads(run.records)
    finally:
        writer.stop_flag.set()
        with postgres_db.connect(autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                         (slot,))  # fmt: skip


def test_parallel_without_a_signal_table_or_read_only_is_refused_with_the_fix(postgres_db: PostgresServer) -> None:
    props = connector_props(postgres_db, snapshot__new__tables="parallel")
    with pytest.raises(ConfigException, match=r"signal\.data\.collection.*read\.only=true"):
        TaskRunner(props).__enter__()


def test_a_resumed_snapshot_of_a_table_no_longer_captured_is_dropped(
    postgres_db: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopped mid-snapshot of `t`, restarted with `t` out of the include list: its rows must not go on."""
    _sql(
        postgres_db,
        f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
        "CREATE TABLE t (id int PRIMARY KEY)",
        "CREATE TABLE u (id int PRIMARY KEY)",
        "INSERT INTO t SELECT generate_series(1, 400)",
    )
    offsets = MemoryOffsets()
    slot = f"drop_{int(time.time() * 1000) % 100000}"
    both = connector_props(
        postgres_db, snapshot__mode="no_data", table__include__list="public\\.t,public\\.u", max__batch__size="16",
        incremental__snapshot__chunk__size="16", signal__data__collection=SIGNALS, slot__name=slot,
        slot__drop__on__stop="false",
    )  # fmt: skip
    try:
        with TaskRunner(both, offsets) as run, postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
            sql.execute(f"INSERT INTO {SIGNALS} VALUES ('s-t', 'execute-snapshot', %s)",
                        ('{"data-collections": ["public.t"]}',))  # fmt: skip
            run.poll_until(lambda rs: len(_reads(rs, "t")) >= 32, timeout=90, what="reads of t")
        stored = next(iter(offsets.stored.values()))
        assert "incremental_snapshot_collections" in stored, stored
        only_u = {**both, "table.include.list": "public\\.u"}
        with caplog.at_level(logging.WARNING), TaskRunner(only_u, offsets) as run:
            with postgres_db.connect(autocommit=True) as sql:
                run.wait_streaming(sql)
            _sql(postgres_db, "INSERT INTO u VALUES (1)")
            run.wait_data(1, "public.u")
            assert not run.task.signals.ctx.running, [c.id for c in run.task.signals.ctx.collections]
        assert not _reads(run.records), [(r.topic, r.key) for r in _reads(run.records)][:5]
        dropped = [r.getMessage() for r in caplog.records if "public.t dropped: no longer captured" in r.getMessage()]
        assert dropped, caplog.text[-3000:]
        assert "incremental_snapshot_collections" not in (stored := next(iter(offsets.stored.values()))), stored
    finally:
        _sql(postgres_db, f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                          f"WHERE slot_name = '{slot}'")  # fmt: skip

"""Online verify's comparison rules (cdc/jobs/verify/online.py) on seeded random histories.

A model of the source: a random history of inserts, updates, deletes (and truncates) at positions
1, 2, 3…; the source snapshot at position X is the history up to X. A model of the sink: it has
applied every change up to X and a random subset of the later ones, as its sequence guard leaves
the stored rows (each key's highest applied change, deletes as tombstones or soft-delete rows,
truncates removing older rows; SCD2 keeping each applied change as a version). `compare_at` must
find no difference in that lake, and exactly the drift injected into it afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from cdc.jobs.verify.compare import TableResult
from cdc.jobs.verify.normalize import Column
from cdc.jobs.verify.online import compare_at
from cdc.jobs.verify.sample import KeySample, rank, sample_keys
from cdc_spark.decode import sequence

COLUMNS = [Column("id", "int", "int"), Column("v", "text", "varchar(20)"), Column("n", "int", "int")]
KEYS = ["id"]


def seq(position: int) -> bytes:
    """A change at `position` as the lake ranks it (the owner's format; the MySQL shape)."""
    return sequence.mysql("mysql-bin.000001", position)


@dataclass
class Event:
    pos: int
    op: str  # c, u, d, t (truncate)
    key: int = -1
    row: tuple[Any, ...] | None = None


@dataclass
class Lake:
    """The stored rows of one table, as the sink leaves them."""

    rows: dict[int, tuple[tuple[Any, ...], bytes, bool]] = field(default_factory=dict)  # key → (row, seq, deleted)
    tombstones: dict[int, bytes] = field(default_factory=dict)
    versions: list[tuple[tuple[Any, ...], bytes, bool, bytes | None]] = field(default_factory=list)  # SCD2
    truncated: bytes | None = None


def history(rng: random.Random, length: int, keys: int, truncates: bool) -> list[Event]:
    live: dict[int, tuple[Any, ...]] = {}
    events: list[Event] = []
    for pos in range(1, length + 1):
        roll = rng.random()
        if truncates and roll < 0.01:
            events.append(Event(pos, "t"))
            live.clear()
            continue
        k = rng.randrange(keys)
        if k in live and roll < 0.3:
            events.append(Event(pos, "d", k))
            del live[k]
        else:
            row = (k, rng.choice(["a", "b", "it's", "ü", None]), rng.randrange(1000))
            events.append(Event(pos, "u" if k in live else "c", k, row))
            live[k] = row
    return events


def source_at(events: list[Event], x: int) -> dict[int, tuple[Any, ...]]:
    state: dict[int, tuple[Any, ...]] = {}
    for e in events:
        if e.pos > x:
            break
        if e.op == "t":
            state.clear()
        elif e.op == "d":
            state.pop(e.key, None)
        else:
            assert e.row is not None
            state[e.key] = e.row
    return state


def apply(events: list[Event], soft: bool, scd2: bool) -> Lake:
    """The sink's end state after applying `events` in any order (its guard makes the order irrelevant)."""
    lake = Lake()
    by_key: dict[int, list[Event]] = {}
    truncs = [e.pos for e in events if e.op == "t"]
    last_trunc = max(truncs) if truncs else 0
    lake.truncated = seq(last_trunc) if truncs else None
    for e in events:
        if e.op != "t":
            by_key.setdefault(e.key, []).append(e)
    for k, changes in by_key.items():
        changes.sort(key=lambda e: e.pos)
        if scd2:
            for i, e in enumerate(changes):
                nxt = seq(changes[i + 1].pos) if i + 1 < len(changes) else None
                row = e.row if e.row is not None else (k, None, None)
                lake.versions.append((row, seq(e.pos), e.op == "d", nxt))
            continue
        latest = changes[-1]
        if latest.pos < last_trunc:
            continue  # removed by the truncate
        deletes = [e for e in changes if e.op == "d" and e.pos > last_trunc]
        if deletes and not soft:
            lake.tombstones[k] = seq(deletes[-1].pos)
        if latest.op == "d":
            if soft:
                lake.rows[k] = ((k, None, None), seq(latest.pos), True)
            continue
        assert latest.row is not None
        lake.rows[k] = (latest.row, seq(latest.pos), False)
    return lake


def check(lake: Lake, source: dict[int, tuple[Any, ...]], x: int, scd2: bool, only: Any = None) -> TableResult:
    def versions() -> Iterator[tuple[Any, ...]]:
        if scd2:
            for row, s, deleted, valid_to in lake.versions:
                yield (*row, s, deleted, valid_to)
        else:
            for row, s, deleted in lake.rows.values():
                yield (*row, s, deleted, None)

    return compare_at(
        TableResult("db.t", "lake/t"),
        COLUMNS,
        KEYS,
        lambda: iter(source.values()),
        versions,
        lambda: iter((k, s) for k, s in lake.tombstones.items()),
        lake.truncated,
        seq(x),
        max_diffs=1000,
        history=scd2,
        keep_keys=True,
        only=only,
    )


MODES = [(False, False, False), (False, False, True), (True, False, False), (True, False, True), (False, True, False)]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize(("soft", "scd2", "truncates"), MODES)
def test_a_lake_applied_past_the_snapshot_has_no_false_differences_and_every_drift_is_found(
    seed: int, soft: bool, scd2: bool, truncates: bool
) -> None:
    rng = random.Random(seed * 31 + MODES.index((soft, scd2, truncates)))
    events = history(rng, rng.randrange(50, 400), rng.randrange(5, 60), truncates)
    x = rng.randrange(1, len(events) + 1)
    later = [e for e in events if e.pos > x and rng.random() < rng.random()]  # any subset of the later changes
    lake = apply([e for e in events if e.pos <= x] + later, soft, scd2)
    source = source_at(events, x)

    result = check(lake, source, x, scd2)
    assert result.differences == 0, (result.samples[:5], x)
    changed_later = {e.key for e in later if e.op != "t"}
    if not scd2 and any(e.op == "t" for e in later):
        assert result.changed_since is not None and result.changed_since >= 0
    elif not scd2:
        assert result.changed_since == len(changed_later)

    # Drift the sink could not have made, on keys whose stored state is the one at X.
    if scd2:
        _scd2_drift(rng, lake, source, x)
        return
    stable = [k for k, (_, s, deleted) in lake.rows.items() if s <= seq(x) and not deleted]
    rng.shuffle(stable)
    lost, edited = stable[:2], stable[2:4]
    for k in lost:
        del lake.rows[k]
    for k in edited:
        row, s, deleted = lake.rows[k]
        lake.rows[k] = ((row[0], "drift", row[2]), s, deleted)
    absent = [k for k in range(1000, 1003)]
    for k in absent:  # a row only in the lake, with a sequence below X
        lake.rows[k] = ((k, "extra", 1), seq(x), False)
    result = check(lake, source, x, scd2)
    truncated_since = lake.truncated is not None and lake.truncated > seq(x)
    assert result.keys is not None
    assert sorted(map(int, result.keys["missing"])) == ([] if truncated_since else sorted(lost))
    assert sorted(map(int, result.keys["changed"])) == sorted(edited)
    assert sorted(map(int, result.keys["extra"])) == absent
    assert result.duplicates == 0


def _scd2_drift(rng: random.Random, lake: Lake, source: dict[int, tuple[Any, ...]], x: int) -> None:
    """SCD2: the version valid at X, edited or dropped, shows as changed or missing."""
    at_x = [
        i
        for i, (_, s, deleted, valid_to) in enumerate(lake.versions)
        if s <= seq(x) and (valid_to is None or valid_to > seq(x)) and not deleted
    ]
    if len(at_x) < 2:
        return
    edit, drop = rng.sample(at_x, 2)
    row, s, deleted, valid_to = lake.versions[edit]
    lake.versions[edit] = ((row[0], "drift", row[2]), s, deleted, valid_to)
    dropped = lake.versions[drop][0][0]
    lake.versions = [v for i, v in enumerate(lake.versions) if i != drop]
    result = check(lake, source, x, True)
    assert result.keys is not None
    assert result.keys["changed"] == [str(row[0])]
    assert result.keys["missing"] == [str(dropped)]
    assert result.extra == 0


def test_a_key_deleted_after_the_snapshot_is_not_missing_but_one_deleted_before_is_gone_from_both() -> None:
    source = {1: (1, "a", 1), 2: (2, "b", 2)}
    lake = Lake(rows={2: ((2, "b", 2), seq(3), False)}, tombstones={1: seq(9)})
    result = check(lake, source, 5, False)
    assert (result.differences, result.changed_since) == (0, 1)
    lake.tombstones[1] = seq(4)  # deleted before X, yet the source has it at X: the lake lost its re-insert
    result = check(lake, source, 5, False)
    assert result.keys is not None and result.keys["missing"] == ["1"]


def test_a_stored_row_newer_than_the_snapshot_is_changed_since_whatever_its_values() -> None:
    source = {1: (1, "old", 1)}
    lake = Lake(rows={1: ((1, "new", 2), seq(6), False), 7: ((7, "created later", 0), seq(8), False)})
    result = check(lake, source, 5, False)
    assert (result.differences, result.changed_since) == (0, 2)


def test_the_snapshot_read_at_x_itself_counts_as_the_state_at_x() -> None:
    source = {1: (1, "a", 1)}
    lake = Lake(rows={1: ((1, "a", 1), seq(5), False)})
    assert check(lake, source, 5, False).changed_since == 0


@pytest.mark.parametrize("seed", range(10))
def test_a_sample_compares_the_same_keys_on_both_sides_and_finds_drift_only_among_them(seed: int) -> None:
    rng = random.Random(seed)
    source = {k: (k, "v", k) for k in range(500)}
    lake = Lake(rows={k: (row, seq(1), False) for k, row in source.items()})
    lost = rng.sample(range(500), 40)
    for k in lost:
        del lake.rows[k]
    for k in range(600, 640):
        lake.rows[k] = ((k, "x", 0), seq(1), False)
    picked = sample_keys((str(k) for k in source), 50, seed)
    assert isinstance(picked, KeySample) and picked.size == 50
    assert sum(1 for k in source if str(k) in picked) == 50
    result = check(lake, source, 5, False, only=picked)
    assert result.keys is not None
    assert {int(k) for k in result.keys["missing"]} == {k for k in lost if str(k) in picked}
    assert {int(k) for k in result.keys["extra"]} == {k for k in range(600, 640) if str(k) in picked}
    again = sample_keys((str(k) for k in source), 50, seed)
    assert again == picked  # the seed draws the same keys
    assert sample_keys((str(k) for k in range(10)), 50, seed) is None  # a small table: every key


def test_rank_depends_on_the_seed() -> None:
    assert rank(1, "7") != rank(2, "7")
    assert rank(1, "7") == rank(1, "7")


# -- the source snapshot at X, on real servers ------------------------------------------------------
@pytest.mark.integration
def test_postgres_snapshot_is_at_its_consistent_point(postgres_db: Any) -> None:
    """Rows committed after the exported snapshot are not in it, and their commits rank above X."""
    from cdc.jobs.verify.snapshot import close_point, open_point
    from cdc.jobs.verify.source import PostgresSource, SourceTable
    from cdc_postgres.lsn import parse_lsn
    from tests.postgres.harness import connector_props

    with postgres_db.connect() as conn:
        conn.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        conn.execute("INSERT INTO t VALUES (1, 'a')")
        conn.commit()
    source = PostgresSource(connector_props(postgres_db))
    try:
        table = SourceTable("public", "t")
        point = open_point(source, connector_props(postgres_db), [table], None)
        with postgres_db.connect() as conn:
            conn.execute("INSERT INTO t VALUES (2, 'b')")
            conn.execute("UPDATE t SET v = 'changed' WHERE id = 1")
            conn.commit()
            after = parse_lsn(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
        columns = source.columns(table)
        assert sorted(source.rows(table, columns)) == [(1, "a")]  # in the snapshot: as at X
        assert sequence.postgres(after, after) > point.seq
        assert point.reached({"lsn": after}) and not point.reached({"lsn": 0})
        close_point(source)
        assert sorted(source.rows(table, columns)) == [(1, "changed"), (2, "b")]
        with postgres_db.connect() as conn:  # the temporary slot went with its connection
            assert (
                conn.execute(
                    "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'cdc_verify_%'"
                ).fetchone()[0]
                == 0
            )
    finally:
        source.close()


@pytest.mark.integration
def test_mariadb_snapshot_is_at_its_binlog_position(mariadb_db: Any) -> None:
    from cdc.jobs.verify.snapshot import close_point, open_point
    from cdc.jobs.verify.source import MySqlSource, SourceTable
    from tests.mysql.harness import connector_props

    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute("INSERT INTO t VALUES (1, 'a')")
        conn.commit()
    props = connector_props(mariadb_db)
    source = MySqlSource(props)
    try:
        table = SourceTable(mariadb_db.database, "t")
        point = open_point(source, props, [table], None)
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            cur.execute("UPDATE t SET v = 'b' WHERE id = 1")
            conn.commit()
            cur.execute("SHOW MASTER STATUS")
            file, pos = cur.fetchone()[:2]
        columns = source.columns(table)
        assert list(source.rows(table, columns)) == [(1, "a")]
        assert sequence.mysql(file, pos) > point.seq  # the update's events lie between X and here
        assert point.text.startswith(file.rsplit(".", 1)[0])
        close_point(source)
        assert list(source.rows(table, columns)) == [(1, "b")]
    finally:
        source.close()

"""Debezium's initial snapshot notifications (`notification.enabled.channels=log,sink`) on PostgreSQL.

The MySQL test's checks (tests/mysql/test_initial_snapshot_notifications.py) on seeded tables
(empty ones, one without a primary key): STARTED before any record, per table IN_PROGRESS before
its rows and TABLE_SCAN_COMPLETED with its row count, COMPLETED after the last record; the log
channel logs the same. A snapshot stopped midway logs ABORTED and the resumed one notifies the
tables it still reads with the rows it read; a restart after the snapshot notifies SKIPPED alone.
"""

from __future__ import annotations

import logging
import random
import uuid
from typing import Any

import pytest

from cdc.api import SourceRecord
from tests.mysql.test_snapshot_notifications import TOPIC, notifications
from tests.postgres.harness import MemoryOffsets, connector_props, op
from tests.postgres.test_snapshot_notifications import Runner
from tests.rig import PostgresServer

PREFIX = "test_server"  # the harness's topic.prefix


def _tables(db: PostgresServer, rnd: random.Random) -> dict[str, int]:
    """public.t0..tN with seeded sizes (at least one empty) and public.nokey (no primary key)."""
    sizes = {f"public.t{i}": rnd.choice([0, rnd.randint(1, 9), rnd.randint(10, 80)]) for i in range(rnd.randint(2, 5))}
    sizes[rnd.choice(sorted(sizes))] = 0
    sizes["public.nokey"] = rnd.randint(1, 20)
    with db.connect(autocommit=True) as conn:
        for name, n in sizes.items():
            key = "" if name == "public.nokey" else " PRIMARY KEY"
            conn.execute(f"CREATE TABLE {name} (id int{key}, v text)")
            if n:
                rows = ",".join(f"({i}, 'v{rnd.randint(0, 99)}')" for i in rnd.sample(range(1, 1_000_000), n))
                conn.execute(f"INSERT INTO {name} VALUES {rows}")
    return sizes


def _props(db: PostgresServer, rnd: random.Random, **extra: Any) -> dict[str, str]:
    return connector_props(
        db, snapshot__fetch__size=str(rnd.randint(2, 9)), max__batch__size=str(rnd.randint(2, 7)),
        notification__enabled__channels="log,sink", notification__sink__topic__name=TOPIC,
        slot__drop__on__stop="false", **extra,
    )  # fmt: skip


def _table(r: SourceRecord) -> str | None:
    """`schema.table` of a snapshot read record, else None."""
    if r.topic == TOPIC or op(r) != "r":
        return None
    return r.topic.split(".", 1)[1]


def _check_run(records: list[SourceRecord], read: dict[str, int], captured: list[str]) -> None:
    got = notifications(records)
    where = {id(r): i for i, r in enumerate(records)}
    at = {n["id"]: where[id(r)] for n, r in zip(got, [r for r in records if r.topic == TOPIC], strict=True)}
    assert {n["aggregate_type"] for n in got} == {"Initial Snapshot"}
    assert len({n["id"] for n in got}) == len(got) and all(uuid.UUID(n["id"]) for n in got)
    types = [n["type"] for n in got]
    assert types[0] == "STARTED" and types[-1] == "COMPLETED" and at[got[0]["id"]] == 0, types
    assert got[0]["additional_data"] == got[-1]["additional_data"] == {"connector_name": PREFIX}
    assert [r for r in records[at[got[-1]["id"]] :] if _table(r)] == [], "a read after COMPLETED"
    middle = got[1:-1]
    assert [n["type"] for n in middle] == ["IN_PROGRESS", "TABLE_SCAN_COMPLETED"] * len(read), types
    order = [n["additional_data"]["current_collection_in_progress"] for n in middle[::2]]
    assert order == sorted(read) and [n["additional_data"]["scanned_collection"] for n in middle[1::2]] == order
    for start, end in zip(middle[::2], middle[1::2], strict=True):
        table = start["additional_data"]["current_collection_in_progress"]
        assert start["additional_data"]["data_collections"] == ",".join(sorted(read))
        assert end["additional_data"] == {
            "connector_name": PREFIX, "scanned_collection": table, "data_collections": ",".join(captured),
            "total_rows_scanned": str(read[table]), "status": "SUCCEEDED",
        }  # fmt: skip
        mine = [i for i, r in enumerate(records) if _table(r) == table]
        assert len(mine) == read[table]
        assert all(i > at[start["id"]] for i in mine)
        # all but the table's last row (held back for its marker) come before its end
        assert len([i for i in mine if i < at[end["id"]]]) == max(read[table] - 1, 0)


@pytest.mark.parametrize("seed", [7101, 7102])
def test_the_initial_snapshot_is_notified_and_a_restart_is_skipped(
    postgres_db: PostgresServer, seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    rnd = random.Random(seed)
    sizes = _tables(postgres_db, rnd)
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    props = _props(postgres_db, rnd)
    offsets = MemoryOffsets()
    with Runner(props, offsets) as run:
        run.poll_until(lambda rs: (n := notifications(rs)) and n[-1]["type"] == "COMPLETED", 60, "COMPLETED")
    _check_run(run.records, sizes, sorted(sizes))
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[Notification Service] ")]
    assert [m.split("'")[1] for m in logged] == [n["id"] for n in notifications(run.records)]
    with Runner(props, offsets) as again:
        again.poll_until(lambda rs: bool(notifications(rs)), what="a notification")
    assert [(n["type"], n["additional_data"]) for n in notifications(again.records)] == [
        ("SKIPPED", {"connector_name": PREFIX})
    ]
    assert not [r for r in again.records if _table(r)]


def test_a_stopped_snapshot_is_aborted_and_the_resumed_one_notifies_the_rest(
    postgres_db: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    rnd = random.Random(7200)
    sizes = _tables(postgres_db, rnd)
    with postgres_db.connect(autocommit=True) as conn:
        conn.execute("CREATE TABLE public.t9 (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO public.t9 SELECT g, 'b' FROM generate_series(1, 150) g")
    sizes["public.t9"] = 150
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    props = _props(postgres_db, rnd)
    offsets = MemoryOffsets()
    total = sum(sizes.values())
    cut = rnd.randint(1, total // 2)
    with Runner(props, offsets) as first:
        first.poll_until(lambda rs: len([r for r in rs if _table(r)]) >= cut, 60, f"{cut} reads")
    stored = next(iter(offsets.stored.values()))
    assert stored.get("snapshot"), f"the snapshot completed before the stop ({cut} of {total})"
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[Notification Service] ")]
    assert "type='ABORTED'" in logged[-1], logged[-3:]
    done = set(stored.get("snapshot_tables_done") or ())
    with Runner(props, offsets) as second:
        second.poll_until(lambda rs: (n := notifications(rs)) and n[-1]["type"] == "COMPLETED", 60, "COMPLETED")
    again = {t: len([r for r in second.records if _table(r) == t]) for t in sizes if t not in done}
    _check_run(second.records, again, sorted(sizes))
    ids: dict[str, set[Any]] = {}
    for r in first.records + second.records:
        if (t := _table(r)) is not None:
            ids.setdefault(t, set()).add(r.value.get("after").get("id"))
    assert {t: len(ids.get(t, ())) for t in sizes} == sizes

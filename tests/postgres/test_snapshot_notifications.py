"""Debezium's incremental snapshot notifications (`notification.enabled.channels=log,sink`) on PostgreSQL.

The MySQL test's cases (tests/mysql/test_snapshot_notifications.py) with seeded sizes: STARTED,
one IN_PROGRESS per full chunk, TABLE_SCAN_COMPLETED per table (SUCCEEDED with the rows read,
EMPTY, NO_PRIMARY_KEY), COMPLETED, then PAUSED, STARTED, ABORTED and RESUMED; the log channel
logs the same notifications. A blocking snapshot sends the Initial Snapshot notifications.
"""

from __future__ import annotations

import json
import logging
import random
from typing import Any

import pytest

from cdc.api import SourceRecord
from tests.mysql.test_snapshot_notifications import TOPIC, check_blocking_notifications, notifications
from tests.postgres.harness import TaskRunner, connector_props
from tests.rig import PostgresServer

SIGNALS = "public.debezium_signal"


class Runner(TaskRunner):
    """Stores the last offset of a batch's records that have one (a notification has no source partition)."""

    def poll_once(self) -> list[SourceRecord]:
        batch = self.task.poll() or []
        positioned = [r for r in batch if r.source_partition is not None]
        if positioned:
            self.offsets.put(positioned[-1].source_partition, positioned[-1].source_offset)
            self.task.commit()
        self.records.extend(batch)
        return batch


def _send(db: PostgresServer, signal_id: str, kind: str, data: Any) -> None:
    with db.connect(autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {SIGNALS} VALUES (%s, %s, %s)", (signal_id, kind, None if data is None else json.dumps(data))
        )


@pytest.mark.parametrize("seed", [2221, 2222])
def test_snapshot_transitions_are_notified_on_the_sink_topic_and_the_log(
    postgres_db: PostgresServer, seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    rnd = random.Random(seed)
    chunk = rnd.randint(3, 9)
    sizes = {"a": rnd.randint(1, 40), "b": rnd.randint(1, 40)}
    with postgres_db.connect(autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"
        )
        conn.execute("CREATE TABLE empty_t (id int PRIMARY KEY)")
        conn.execute("CREATE TABLE nokey (v int)")
        conn.execute("INSERT INTO nokey VALUES (1)")
        for name, n in sizes.items():
            conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v int)")
            for i in rnd.sample(range(1, 100_000), n):
                conn.execute(f"INSERT INTO {name} VALUES (%s, %s)", (i, rnd.randint(0, 9)))
    props = connector_props(
        postgres_db, snapshot__mode="no_data", notification__enabled__channels="sink,log",
        notification__sink__topic__name=TOPIC, signal__data__collection=SIGNALS,
        incremental__snapshot__chunk__size=str(chunk),
    )  # fmt: skip
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    with Runner(props) as run:
        with postgres_db.connect(autocommit=True) as sql:
            run.wait_streaming(sql)
        tables = ["public.a", "public.empty_t", "public.nokey", "public.b"]
        _send(postgres_db, f"snap-{seed}", "execute-snapshot", {"data-collections": tables})
        done = lambda rs: any(n["type"] == "COMPLETED" for n in notifications(rs))  # noqa: E731
        run.poll_until(done, timeout=60, what="COMPLETED")
        _send(postgres_db, "p1", "pause-snapshot", None)
        run.poll_until(lambda rs: notifications(rs)[-1]["type"] == "PAUSED", what="PAUSED")
        _send(postgres_db, "s2", "execute-snapshot", {"data-collections": ["public.a"]})
        _send(postgres_db, "x3", "stop-snapshot", {"data-collections": ["public.a"], "type": "incremental"})
        run.poll_until(lambda rs: notifications(rs)[-1]["type"] == "ABORTED", what="ABORTED")
        _send(postgres_db, "r4", "resume-snapshot", None)
        run.poll_until(lambda rs: notifications(rs)[-1]["type"] == "RESUMED", what="RESUMED")
    got = notifications(run.records)
    first = got[: [n["type"] for n in got].index("COMPLETED") + 1]
    assert {n["id"] for n in first} == {f"snap-{seed}"}
    assert all(n["additional_data"]["connector_name"] == "test_server" for n in got)
    assert first[0]["type"] == "STARTED" and first[0]["additional_data"]["data_collections"] == ",".join(tables)
    scans = {n["additional_data"]["scanned_collection"]: n["additional_data"] for n in first
             if n["type"] == "TABLE_SCAN_COMPLETED"}  # fmt: skip
    assert {t: (d["status"], d["total_rows_scanned"]) for t, d in scans.items()} == {
        "public.a": ("SUCCEEDED", str(sizes["a"])), "public.b": ("SUCCEEDED", str(sizes["b"])),
        "public.empty_t": ("EMPTY", "0"), "public.nokey": ("NO_PRIMARY_KEY", "0"),
    }  # fmt: skip
    progress = [n["additional_data"] for n in first if n["type"] == "IN_PROGRESS"]
    for name, n in sizes.items():
        assert len([p for p in progress if p["current_collection_in_progress"] == f"public.{name}"]) == n // chunk
    assert [n["type"] for n in got[len(first) :]] == ["PAUSED", "STARTED", "ABORTED", "RESUMED"]
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[Notification Service] ")]
    assert len(logged) == len(got)


@pytest.mark.parametrize("seed", [2241, 2242])
def test_a_blocking_snapshot_sends_the_initial_snapshot_notifications(
    postgres_db: PostgresServer, seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The MySQL test's case: STARTED, per table IN_PROGRESS then TABLE_SCAN_COMPLETED with its rows, COMPLETED
    (aggregate_type "Initial Snapshot"), STARTED before every read and COMPLETED after the last."""
    rnd = random.Random(seed)
    sizes = {"a": rnd.randint(1, 3000), "empty_t": 0, "b": rnd.randint(1, 50)}
    with postgres_db.connect(autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE {SIGNALS} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"
        )
        for name, n in sizes.items():
            conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v int)")
            if n:
                conn.execute(f"INSERT INTO {name} SELECT i, i % 7 FROM generate_series(1, {n}) i")
    props = connector_props(
        postgres_db, snapshot__mode="no_data", notification__enabled__channels="log,sink",
        notification__sink__topic__name=TOPIC, signal__data__collection=SIGNALS,
    )  # fmt: skip
    tables = [f"public.{t}" for t in rnd.sample(sorted(sizes), len(sizes))]
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    with Runner(props) as run, postgres_db.connect(autocommit=True) as sql:
        run.wait_streaming(sql)
        _send(postgres_db, f"blk-{seed}", "execute-snapshot", {"data-collections": tables, "type": "blocking"})
        run.poll_until(
            lambda rs: any(n["type"] == "COMPLETED" for n in notifications(rs)), timeout=60, what="COMPLETED"
        )
    check_blocking_notifications(run.records, tables, sizes, caplog)

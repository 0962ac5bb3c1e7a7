"""Debezium's incremental snapshot notifications (`notification.enabled.channels=log,sink`) on MySQL/MariaDB.

Seeded table sizes and chunk sizes: the sink topic gets STARTED, one IN_PROGRESS per chunk that
leaves its table unfinished, TABLE_SCAN_COMPLETED per table (SUCCEEDED with the rows read, EMPTY,
NO_PRIMARY_KEY) and COMPLETED, all with the signal's id; pause, resume and stop give PAUSED,
RESUMED and ABORTED; the log channel logs the same notifications.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from cdc.api import SourceRecord
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.mysql.incremental_support import create_signal_table, incremental_reads, send_signal, signal_props
from tests.rig import MariaDbServer

TOPIC = "cdc.notifications"


class Runner(TaskRunner):
    """The harness's runner, storing the last offset of a batch's records that have one: a sink
    notification has no source partition (the runtime stores nothing for it, cdc.runtime.source_batches)."""

    def poll_once(self) -> list[SourceRecord]:
        batch = self.task.poll() or []
        positioned = [r for r in batch if r.source_partition is not None]
        if positioned:
            self.offsets.put(positioned[-1].source_partition, positioned[-1].source_offset)
        self.records.extend(batch)
        return batch


def notifications(records: list[SourceRecord]) -> list[dict[str, Any]]:
    out = []
    for r in records:
        if r.topic == TOPIC:
            v = r.value
            assert r.key.get("id") == v.get("id") and r.source_partition is None
            out.append({f: v.get(f) for f in ("id", "aggregate_type", "type", "additional_data", "timestamp")})
    return out


@pytest.mark.parametrize("seed", [2211, 2212])
def test_snapshot_transitions_are_notified_on_the_sink_topic_and_the_log(
    mariadb_db: MariaDbServer, seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    rnd = random.Random(seed)
    chunk = rnd.randint(3, 9)
    sizes = {"a": rnd.randint(1, 40), "b": rnd.randint(1, 40)}
    create_signal_table(mariadb_db)
    statements = [
        "CREATE TABLE empty_t (id INT PRIMARY KEY)",
        "CREATE TABLE nokey (v INT)",
        "INSERT INTO nokey VALUES (1)",
    ]
    for name, n in sizes.items():
        ids = rnd.sample(range(1, 100_000), n)
        rows = ",".join(f"({i}, {rnd.randint(0, 9)})" for i in ids)
        statements += [f"CREATE TABLE {name} (id INT PRIMARY KEY, v INT)", f"INSERT INTO {name} VALUES {rows}"]
    execute(mariadb_db, *statements)
    db = mariadb_db.database
    props = connector_props(
        mariadb_db, snapshot__mode="no_data", notification__enabled__channels="log,sink",
        notification__sink__topic__name=TOPIC,
        **signal_props(mariadb_db, incremental__snapshot__chunk__size=str(chunk)),
    )  # fmt: skip
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    with Runner(props) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        tables = [f"{db}.a", f"{db}.empty_t", f"{db}.nokey", f"{db}.b"]
        send_signal(mariadb_db, f"snap-{seed}", "execute-snapshot", {"data-collections": tables})
        run.poll_until(
            lambda rs: any(n["type"] == "COMPLETED" for n in notifications(rs)), timeout=60, what="COMPLETED"
        )
        assert len(incremental_reads(run.records)) == sum(sizes.values())
        send_signal(mariadb_db, "p1", "pause-snapshot", None)
        run.poll_until(lambda rs: notifications(rs)[-1]["type"] == "PAUSED", what="PAUSED")
        send_signal(mariadb_db, "s2", "execute-snapshot", {"data-collections": [f"{db}.a"]})
        send_signal(mariadb_db, "x3", "stop-snapshot", {"data-collections": [f"{db}.a"], "type": "incremental"})
        run.poll_until(lambda rs: notifications(rs)[-1]["type"] == "ABORTED", what="ABORTED")
        send_signal(mariadb_db, "r4", "resume-snapshot", None)
        run.poll_until(lambda rs: notifications(rs)[-1]["type"] == "RESUMED", what="RESUMED")
    got = notifications(run.records)
    first = got[: [n["type"] for n in got].index("COMPLETED") + 1]
    assert {n["aggregate_type"] for n in got} == {"Incremental Snapshot"}
    assert {n["id"] for n in first} == {f"snap-{seed}"}
    assert all(n["additional_data"]["connector_name"] == "dbserver1" and n["timestamp"] > 0 for n in got)
    assert first[0]["type"] == "STARTED" and first[0]["additional_data"]["data_collections"] == ",".join(tables)
    scans = {n["additional_data"]["scanned_collection"]: n["additional_data"] for n in first
             if n["type"] == "TABLE_SCAN_COMPLETED"}  # fmt: skip
    assert {t: (d["status"], d["total_rows_scanned"]) for t, d in scans.items()} == {
        f"{db}.a": ("SUCCEEDED", str(sizes["a"])), f"{db}.b": ("SUCCEEDED", str(sizes["b"])),
        f"{db}.empty_t": ("EMPTY", "0"), f"{db}.nokey": ("NO_PRIMARY_KEY", "0"),
    }  # fmt: skip
    progress = [n["additional_data"] for n in first if n["type"] == "IN_PROGRESS"]
    for name, n in sizes.items():
        mine = [p for p in progress if p["current_collection_in_progress"] == f"{db}.{name}"]
        assert len(mine) == n // chunk  # every full chunk; the last (short) one completes the table
        assert all(p["maximum_key"] and p["last_processed_key"] for p in mine)
    assert [n["type"] for n in got[len(first) :]] == ["PAUSED", "STARTED", "ABORTED", "RESUMED"]
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[Notification Service] ")]
    assert len(logged) == len(got) and "type='COMPLETED'" in logged[len(first) - 1]


def test_a_sink_channel_without_a_topic_is_a_validation_error_on_its_key(mariadb_db: MariaDbServer) -> None:
    from cdc.api.connector import config_value_errors
    from cdc_mysql.connector import MySqlConnector

    props = connector_props(mariadb_db, notification__enabled__channels="sink")
    errors = config_value_errors(MySqlConnector().validate(props))
    assert list(errors) == ["notification.sink.topic.name"], errors
    assert "notification.sink.topic.name" in errors["notification.sink.topic.name"][0]
    props["notification.sink.topic.name"] = TOPIC
    assert config_value_errors(MySqlConnector().validate(props)) == {}


@pytest.mark.parametrize("seed", [2231, 2232])
def test_a_blocking_snapshot_sends_the_initial_snapshot_notifications(
    mariadb_db: MariaDbServer, seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    """As Debezium's blocking snapshot (it runs the snapshot source): STARTED, per table IN_PROGRESS then
    TABLE_SCAN_COMPLETED with its row count, COMPLETED; aggregate_type "Initial Snapshot". Seeded sizes, an
    empty table among them; STARTED precedes every read and COMPLETED follows the last."""
    rnd = random.Random(seed)
    sizes = {"a": rnd.randint(1, 3000), "empty_t": 0, "b": rnd.randint(1, 50)}
    create_signal_table(mariadb_db)
    statements = []
    for name, n in sizes.items():
        statements.append(f"CREATE TABLE {name} (id INT PRIMARY KEY, v INT)")
        if n:
            statements.append(f"INSERT INTO {name} VALUES " + ",".join(f"({i}, {i % 7})" for i in range(1, n + 1)))
    execute(mariadb_db, *statements)
    db = mariadb_db.database
    props = connector_props(
        mariadb_db, snapshot__mode="no_data", notification__enabled__channels="log,sink",
        notification__sink__topic__name=TOPIC, **signal_props(mariadb_db),
    )  # fmt: skip
    tables = [f"{db}.{t}" for t in rnd.sample(sorted(sizes), len(sizes))]
    caplog.set_level(logging.INFO, logger="cdc_debezium.notifications")
    with Runner(props) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        send_signal(mariadb_db, f"blk-{seed}", "execute-snapshot", {"data-collections": tables, "type": "blocking"})
        run.poll_until(
            lambda rs: any(n["type"] == "COMPLETED" for n in notifications(rs)), timeout=60, what="COMPLETED"
        )
    check_blocking_notifications(run.records, tables, sizes, caplog)


def check_blocking_notifications(
    records: list[SourceRecord], tables: list[str], sizes: dict[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    """A blocking snapshot of `tables` (`container.table`, rows by table name in `sizes`) that completed:
    the Initial Snapshot notifications in order, the row counts, STARTED before every read and COMPLETED
    after the last, and the log channel's lines."""
    got = notifications(records)
    assert {n["aggregate_type"] for n in got} == {"Initial Snapshot"}
    assert [n["type"] for n in got] == ["STARTED", *["IN_PROGRESS", "TABLE_SCAN_COMPLETED"] * len(tables), "COMPLETED"]
    scans = [n["additional_data"] for n in got if n["type"] == "TABLE_SCAN_COMPLETED"]
    assert [(d["scanned_collection"], d["total_rows_scanned"], d["status"]) for d in scans] == [
        (t, str(sizes[t.split(".")[1]]), "SUCCEEDED") for t in tables
    ]
    kinds = [("n", r.value.get("type")) if r.topic == TOPIC else ("r", None) for r in records
             if r.topic == TOPIC or (r.value is not None and r.value.schema.field("op") is not None
                                     and r.value.get("op") == "r")]  # fmt: skip
    assert kinds[0] == ("n", "STARTED") and kinds[-1] == ("n", "COMPLETED")
    assert sum(k == ("r", None) for k in kinds) == sum(sizes.values())
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[Notification Service] ")]
    assert len(logged) == len(got)

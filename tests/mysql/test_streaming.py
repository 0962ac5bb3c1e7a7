"""Streaming semantics: PK changes, truncate, DDL while lagging, multi-table transactions, rotation, resume."""

from __future__ import annotations

import copy
import re

import pytest

from cdc.api import ConnectException
from cdc_debezium.records import NEW_KEY_HEADER, OLD_KEY_HEADER
from tests.mysql.harness import MemoryOffsets, TaskRunner, after, before, connector_props, execute, op


def _seeded(server, ddl: str = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))") -> None:
    execute(server, ddl, "INSERT INTO t VALUES (0, 'seed')")


def test_primary_key_change_is_delete_tombstone_create_with_headers(mariadb_db) -> None:
    _seeded(mariadb_db)
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(1)
        execute(mariadb_db, "UPDATE t SET id = 7 WHERE id = 0")
        run.wait_data(3)
    d, tomb, c = run.records[-3:]
    assert (op(d), tomb.value, op(c)) == ("d", None, "c")
    assert d.key.get("id") == 0 and tomb.key.get("id") == 0 and c.key.get("id") == 7
    assert d.headers.last_with_name(NEW_KEY_HEADER).value.get("id") == 7
    assert c.headers.last_with_name(OLD_KEY_HEADER).value.get("id") == 0
    assert before(d) == {"id": 0, "v": "seed"} and after(c) == {"id": 7, "v": "seed"}


def test_delete_tombstones_can_be_disabled_and_ops_skipped(mariadb_db) -> None:
    _seeded(mariadb_db)
    props = connector_props(mariadb_db, tombstones__on__delete="false", skipped__operations="u")
    with TaskRunner(props) as run:
        run.wait_data(1)
        execute(mariadb_db, "UPDATE t SET v = 'x' WHERE id = 0", "DELETE FROM t WHERE id = 0")
        run.wait_data(2)
    assert [op(r) for r in run.records if r.topic.endswith(".t")] == ["r", "d"]


def test_truncate_event_when_not_skipped(mariadb_db) -> None:
    _seeded(mariadb_db)
    with TaskRunner(connector_props(mariadb_db, skipped__operations="none")) as run:
        run.wait_data(1)
        execute(mariadb_db, "TRUNCATE TABLE t")
        run.wait_data(2)
    t = run.data()[-1]
    assert op(t) == "t" and t.key is None and t.value.get("before") is None and t.value.get("after") is None
    assert t.value.get("source").get("table") == "t"


def test_ddl_while_the_reader_lags_decodes_each_row_with_its_own_columns(mariadb_db) -> None:
    _seeded(mariadb_db)
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        execute(mariadb_db, "INSERT INTO t VALUES (1, 'one')")
        run.wait_data(2)
    # The reader is down while the schema changes several times.
    execute(
        mariadb_db,
        "ALTER TABLE t ADD COLUMN n INT NOT NULL DEFAULT 5",
        "INSERT INTO t VALUES (2, 'two', 22)",
        "ALTER TABLE t RENAME COLUMN v TO label",
        "INSERT INTO t VALUES (3, 'three', 33)",
        "ALTER TABLE t DROP COLUMN n",
        "INSERT INTO t VALUES (4, 'four')",
        "CREATE TABLE t2 (k VARCHAR(5) PRIMARY KEY, flag BIT(1))",
        "INSERT INTO t2 VALUES ('a', b'1')",
    )
    with TaskRunner(dict(props), offsets) as run:
        run.wait_data(4)
        recs = run.data()
        schema_changes = [r for r in run.records if r.topic == "dbserver1"]
    assert [after(r) for r in recs] == [
        {"id": 2, "v": "two", "n": 22},
        {"id": 3, "label": "three", "n": 33},
        {"id": 4, "label": "four"},
        {"k": "a", "flag": True},
    ]
    ddl = [r.value.get("ddl") for r in schema_changes]
    assert len(ddl) == 4 and ddl[0].startswith("ALTER TABLE t ADD") and ddl[3].startswith("CREATE TABLE t2")
    change = schema_changes[3].value
    assert change.get("databaseName") == mariadb_db.database
    assert change.get("tableChanges")[0].get("type") == "CREATE"
    assert schema_changes[3].key.get("databaseName") == mariadb_db.database


def test_multi_table_transaction_with_metadata_in_commit_order(mariadb_db) -> None:
    _seeded(mariadb_db)
    execute(mariadb_db, "CREATE TABLE u (id INT PRIMARY KEY)")
    with TaskRunner(connector_props(mariadb_db, provide__transaction__metadata="true")) as run:
        run.wait_data(1)
        execute(
            mariadb_db,
            "START TRANSACTION",
            "INSERT INTO t VALUES (1, 'a')",
            "INSERT INTO u VALUES (10), (11)",
            "UPDATE t SET v = 'b' WHERE id = 1",
            "COMMIT",
        )
        run.poll_until(
            lambda rs: any(r.topic == "dbserver1.transaction" and r.value.get("status") == "END" for r in rs)
        )
    streamed = [r for r in run.records if op(r) != "r" and r.topic != "dbserver1"]
    kinds = [r.value.get("status") if r.topic.endswith(".transaction") else (r.topic.split(".")[-1], op(r))
             for r in streamed]  # fmt: skip
    assert kinds == ["BEGIN", ("t", "c"), ("u", "c"), ("u", "c"), ("t", "u"), "END"]
    tx_id = streamed[0].value.get("id")
    blocks = [r.value.get("transaction") for r in streamed[1:-1]]
    assert [(b.get("id"), b.get("total_order"), b.get("data_collection_order")) for b in blocks] == [
        (tx_id, 1, 1), (tx_id, 2, 1), (tx_id, 3, 2), (tx_id, 4, 2)
    ]  # fmt: skip
    end = streamed[-1].value
    assert end.get("event_count") == 4
    counts = {dc.get("data_collection"): dc.get("event_count") for dc in end.get("data_collections")}
    assert counts == {f"{mariadb_db.database}.t": 2, f"{mariadb_db.database}.u": 2}


def test_binlog_rotation_mid_stream(mariadb_db) -> None:
    _seeded(mariadb_db)
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(1)
        execute(mariadb_db, "INSERT INTO t VALUES (1, 'a')", "FLUSH BINARY LOGS", "INSERT INTO t VALUES (2, 'b')")
        recs = run.wait_data(3)
    files = [r.value.get("source").get("file") for r in recs[1:]]
    assert files[0] != files[1] and files[1] > files[0]
    assert recs[2].source_offset["file"] == files[1]


def test_resume_inside_a_large_transaction_skips_emitted_rows(mariadb_db) -> None:
    _seeded(mariadb_db)
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db, max__batch__size=100, max__queue__size=200)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        values = ",".join(f"({i}, 'v{i}')" for i in range(1, 1001))
        # Several row events in one transaction: each INSERT is at least one.
        execute(mariadb_db, "START TRANSACTION", f"INSERT INTO t VALUES {values}",
                "UPDATE t SET v = 'w' WHERE id <= 300", "DELETE FROM t WHERE id > 900", "COMMIT")  # fmt: skip
        run.poll_until(lambda _: len(run.data()) >= 700, what="700 events")
        first = run.data()
    stored = copy.deepcopy(next(iter(offsets.stored.values())))
    assert stored.get("event", 0) > 0 or stored.get("row", 0) > 0, stored
    with TaskRunner(dict(props), offsets) as run2:
        run2.poll_until(lambda _: len(run2.data()) + len(first) >= 1 + 1000 + 301 + 100, what="the rest")
        run2.poll_once()
        second = run2.data()
    events = [(op(r), (after(r) or before(r))["id"]) for r in first + second]
    expected = [("r", 0)] + [("c", i) for i in range(1, 1001)] + [("u", i) for i in range(301)]
    expected += [("d", i) for i in range(901, 1001)]
    assert events == expected


def test_resume_inside_a_transaction_does_not_repeat_its_begin(mariadb_db) -> None:
    _seeded(mariadb_db)
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db, provide__transaction__metadata="true", max__batch__size=50)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        values = ",".join(f"({i}, 'v{i}')" for i in range(1, 301))
        execute(mariadb_db, "START TRANSACTION", f"INSERT INTO t VALUES {values}", "COMMIT")
        run.poll_until(lambda _: len(run.data()) >= 100, what="100 events")
    stored = copy.deepcopy(next(iter(offsets.stored.values())))
    assert stored["transaction_id"] and stored[f"transaction_data_collection_order_{mariadb_db.database}.t"] >= 99
    with TaskRunner(dict(props), offsets) as run2:
        run2.poll_until(
            lambda rs: any(r.topic.endswith(".transaction") and r.value.get("status") == "END" for r in rs), what="END"
        )
    tx = [r.value for r in run.records + run2.records if r.topic.endswith(".transaction")]
    assert [v.get("status") for v in tx] == ["BEGIN", "END"] and tx[1].get("event_count") == 300
    rows = run.data()[1:] + run2.data()
    assert [after(r)["id"] for r in rows] == list(range(1, 301))
    assert [r.value.get("transaction").get("total_order") for r in rows] == list(range(1, 301))
    begin = next(r for r in run.records if r.topic.endswith(".transaction"))
    assert "row" not in begin.source_offset and begin.source_offset["transaction_id"] == tx[0].get("id")


def test_gtid_resume_when_the_offset_file_is_unknown(mariadb_db) -> None:
    """A failover: the new primary has other file names; the MariaDB GTID position still resumes exactly."""
    _seeded(mariadb_db)
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        execute(mariadb_db, "INSERT INTO t VALUES (1, 'a')")
        run.wait_data(2)
    key, stored = next(iter(offsets.stored.items()))
    # MariaDB GTIDs, one per domain (the shared server may carry other tests' domains too).
    assert all(re.fullmatch(r"\d+-\d+-\d+", g) for g in stored["gtids"].split(",")), stored["gtids"]
    # The offset of the old primary (another server identity, cdc_mysql/lineage.py).
    offsets.stored[key] = {**stored, "file": "mysql-bin.999999", "pos": 4, "server_identity": "server_id=999"}
    execute(mariadb_db, "INSERT INTO t VALUES (2, 'b')", "INSERT INTO t VALUES (3, 'c')")
    with TaskRunner(dict(props), offsets) as run:
        recs = run.wait_data(2)
    assert [after(r)["id"] for r in recs] == [2, 3]
    # Another server's positions: the events carry a new binlog lineage epoch for the sinks.
    assert {r.value.get("source").get("sequence") for r in recs} == {'["1"]'}
    assert recs[-1].source_offset["epoch"] == 1


def test_a_reset_binlog_history_on_the_same_server_is_refused_with_advice(mariadb_db) -> None:
    """The stored position lies beyond this same server's binlog (RESET MASTER, a restore): resuming
    by GTID or position would skip or repeat changes silently, so the task fails with advice."""
    _seeded(mariadb_db)
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
    key, stored = next(iter(offsets.stored.items()))
    offsets.stored[key] = {**stored, "file": "mysql-bin.999999", "pos": 4}
    with (
        pytest.raises(ConnectException, match=r"below the stored offset's .*snapshot\.mode=when_needed"),
        TaskRunner(dict(props), offsets) as run,
    ):
        run.wait_data(1)


def test_heartbeats_on_an_idle_stream(mariadb_db) -> None:
    _seeded(mariadb_db)
    props = connector_props(mariadb_db, heartbeat__interval__ms=200, heartbeat__action__query="SELECT 1")
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.poll_until(lambda rs: any(r.topic == "__debezium-heartbeat.dbserver1" for r in rs), what="a heartbeat")
    hb = next(r for r in run.records if r.topic == "__debezium-heartbeat.dbserver1")
    assert hb.key.get("serverName") == "dbserver1" and hb.value.get("ts_ms") > 0
    assert set(hb.source_offset) >= {"file", "pos"}


def test_memory_stays_bounded_by_max_queue_size_with_a_backlog(mariadb_db) -> None:
    _seeded(mariadb_db)
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db, max__batch__size=100, max__queue__size=300)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
    for start in range(1, 20_001, 5000):
        values = ",".join(f"({i}, 'v')" for i in range(start, start + 5000))
        execute(mariadb_db, f"INSERT INTO t VALUES {values}")
    with TaskRunner(dict(props), offsets) as run:
        run.wait_data(20_000, timeout=60)
        assert run.task.high_water <= 300

"""Lifecycle and streaming behaviour a Debezium MySQL user relies on: restarts, DDL, filters, heartbeats."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from tests.mysql.harness import MemoryOffsets, TaskRunner, after, connector_props, execute, op

HEARTBEAT_TOPIC = "__debezium-heartbeat.dbserver1"


def _schema_changes(run: TaskRunner) -> list:
    return [r for r in run.records if r.topic == "dbserver1"]


def test_heartbeats_advance_the_offset_while_only_uncaptured_tables_change(mariadb_db) -> None:
    """Debezium's heartbeat exists for this case: a busy binlog of tables the connector does not capture.

    The server sends its own heartbeat only when the binlog is idle, so heartbeats must also come
    between transactions, or the stored offset stays behind until the binlog it names is purged.
    """
    db = mariadb_db.database
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE noise (id INT PRIMARY KEY)")
    execute(mariadb_db, "INSERT INTO t VALUES (1)")
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db, heartbeat__interval__ms=200, table__include__list=f"{db}\\.t")
    stop = threading.Event()

    def writer() -> None:
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            n = 0
            while not stop.is_set():
                cur.execute(f"INSERT INTO noise VALUES ({n})")
                n += 1
                time.sleep(0.02)

    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        start = dict(next(iter(offsets.stored.values())))
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            run.poll_until(lambda rs: sum(r.topic == HEARTBEAT_TOPIC for r in rs) >= 3, timeout=15, what="3 heartbeats")
        finally:
            stop.set()
            thread.join()
    stored = next(iter(offsets.stored.values()))
    assert (stored["file"], stored["pos"]) > (start["file"], start["pos"])
    assert stored["gtids"] != start["gtids"]
    assert [op(r) for r in run.data()] == ["r"]


def test_truncate_after_a_restart_before_any_row_of_the_table(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db, skipped__operations="none")
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
    execute(mariadb_db, "TRUNCATE TABLE t", "INSERT INTO t VALUES (2)")
    with TaskRunner(dict(props), offsets) as run:
        recs = run.wait_data(2)
    assert [op(r) for r in recs] == ["t", "c"]
    assert recs[0].topic == f"dbserver1.{mariadb_db.database}.t" and recs[0].key is None


def test_create_table_like_and_as_select_stream_their_rows(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE src (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO src VALUES (1, 'a')")
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        execute(
            mariadb_db,
            "INSERT INTO src VALUES (2, 'b')",
            "CREATE TABLE copy_as AS SELECT id, v FROM src",
            "CREATE TABLE copy_like LIKE src",
            "INSERT INTO copy_like SELECT * FROM src",
            "INSERT INTO copy_as VALUES (3, 'c')",
        )
        run.wait_data(7)
        run.poll_once()
    by_table = {
        t: [(op(r), after(r)) for r in run.data(t)] for t in ("copy_as", "copy_like")
    }  # fmt: skip
    assert by_table["copy_as"] == [("c", {"id": 1, "v": "a"}), ("c", {"id": 2, "v": "b"}), ("c", {"id": 3, "v": "c"})]
    assert by_table["copy_like"] == [("c", {"id": 1, "v": "a"}), ("c", {"id": 2, "v": "b"})]
    ddl = [r.value.get("ddl") for r in _schema_changes(run)]
    assert any(d.startswith("CREATE TABLE") and "copy_as" in d for d in ddl)
    assert any(d.startswith("CREATE TABLE copy_like LIKE") for d in ddl)
    # The offset after the CREATE … SELECT resumes after it: nothing again, nothing lost.
    execute(mariadb_db, "INSERT INTO copy_as VALUES (4, 'd')")
    with TaskRunner(dict(props), offsets) as again:
        recs = again.wait_data(1)
        again.poll_once()
    assert [(op(r), after(r)["id"]) for r in again.data()] == [("c", 4)]
    assert recs[0].topic.endswith(".copy_as")


def test_columns_added_dropped_modified_while_streaming(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(5))", "INSERT INTO t VALUES (1, 1, 'x')")
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(1)
        execute(
            mariadb_db,
            "ALTER TABLE t ADD COLUMN c DATE",
            "INSERT INTO t VALUES (2, 2, 'y', '2020-01-01')",
            "ALTER TABLE t MODIFY a BIGINT, MODIFY b TEXT",
            "UPDATE t SET a = 5000000000, b = 'long text' WHERE id = 2",
            "ALTER TABLE t DROP COLUMN c, CHANGE b label VARCHAR(20)",
            "DELETE FROM t WHERE id = 1",
        )
        recs = run.wait_data(4)
    assert after(recs[1]) == {"id": 2, "a": 2, "b": "y", "c": 18262}
    assert after(recs[2]) == {"id": 2, "a": 5000000000, "b": "long text", "c": 18262}
    assert recs[2].value_schema.field("after").schema.field("a").schema.type.name == "INT64"
    assert op(recs[3]) == "d" and recs[3].value.get("before").to_dict() == {"id": 1, "a": 1, "label": "x"}


def test_rename_table_into_and_out_of_the_include_list(mariadb_db, caplog) -> None:
    db = mariadb_db.database
    execute(
        mariadb_db,
        "CREATE TABLE staging (id INT PRIMARY KEY)",
        "INSERT INTO staging VALUES (1), (2)",
        "CREATE TABLE orders (id INT PRIMARY KEY)",
        "INSERT INTO orders VALUES (10)",
    )
    props = connector_props(mariadb_db, table__include__list=f"{db}\\.orders")
    with caplog.at_level(logging.WARNING, logger="cdc_mysql"), TaskRunner(props) as run:
        run.wait_data(1)
        execute(
            mariadb_db,
            "RENAME TABLE orders TO orders_old, staging TO orders",
            "INSERT INTO orders_old VALUES (11)",
            "INSERT INTO orders VALUES (3)",
        )
        run.wait_data(2)
        run.poll_until(lambda rs: sum(r.topic == "dbserver1" for r in rs) >= 2, what="the rename's schema change")
    assert [(op(r), after(r)["id"]) for r in run.data()] == [("r", 10), ("c", 3)]
    rename = _schema_changes(run)[-1].value
    ids = [c.get("id") for c in rename.get("tableChanges")]
    assert f'"{db}"."orders"' in ids
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert f"{db}.orders" in warning and f"{db}.staging" in warning and "existing rows" in warning


def test_table_added_to_the_include_list_after_the_snapshot_is_named_in_a_warning(
    mariadb_db, tmp_path: Path, caplog
) -> None:
    db = mariadb_db.database
    execute(
        mariadb_db,
        "CREATE TABLE a (id INT PRIMARY KEY)",
        "CREATE TABLE b (id INT PRIMARY KEY)",
        "INSERT INTO a VALUES (1)",
        "INSERT INTO b VALUES (1), (2)",
    )
    offsets = MemoryOffsets()
    history = str(tmp_path / "history.jsonl")
    props = connector_props(
        mariadb_db, table__include__list=f"{db}\\.a", schema__history__internal__file__filename=history
    )
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
    # Restarted with b added: its two existing rows were never read.
    wider = {**props, "table.include.list": f"{db}\\.a,{db}\\.b"}
    with caplog.at_level(logging.WARNING, logger="cdc_mysql"), TaskRunner(wider, offsets) as run:
        execute(mariadb_db, "INSERT INTO b VALUES (3)")
        recs = run.wait_data(1)
    assert [(r.topic.split(".")[-1], op(r)) for r in recs] == [("b", "c")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    named = [w for w in warnings if f"{db}.b" in w]
    assert named and f"{db}.a" not in named[0] and "snapshot" in named[0]
    # Once warned about and streamed, a later restart still names it: its old rows are still missing.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cdc_mysql"), TaskRunner(wider, offsets) as run:
        run.poll_once()
    assert any(f"{db}.b" in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


def test_gtid_source_excludes_filters_the_row_events_of_that_source(mariadb_db) -> None:
    """Debezium's gtid.source.filter.dml.events (default true): changes of excluded GTID sources are not emitted."""
    db = mariadb_db.database
    for filter_dml, expected in (("true", [1, 3]), ("false", [1, 2, 3])):
        table = f"t_{filter_dml}"
        execute(mariadb_db, f"CREATE TABLE {table} (id INT PRIMARY KEY)", f"INSERT INTO {table} VALUES (0)")
        offsets = MemoryOffsets()
        props = connector_props(
            mariadb_db,
            gtid__source__excludes="7",
            gtid__source__filter__dml__events=filter_dml,
            table__include__list=f"{db}\\.{table}",
        )
        with TaskRunner(props, offsets) as run:
            run.wait_data(1)
            execute(mariadb_db, f"INSERT INTO {table} VALUES (1)")
            # Another replication domain, as a second primary's writes arrive on a multi-source replica.
            execute(mariadb_db, "SET SESSION gtid_domain_id = 7", f"INSERT INTO {table} VALUES (2)")
            execute(mariadb_db, f"INSERT INTO {table} VALUES (3)")
            run.poll_until(lambda _: any(after(r)["id"] == 3 for r in run.data()), what="row 3")
            run.poll_once()
        assert [after(r)["id"] for r in run.data()[1:]] == expected, filter_dml
        stored = next(iter(offsets.stored.values()))
        assert not any(part.startswith("7-") for part in stored["gtids"].split(","))


def test_resume_by_gtid_when_the_stored_position_is_not_where_its_gtids_are(mariadb_db, caplog) -> None:
    """A failover to a server whose binlog has a file of the same name: file/pos would skip changes silently."""
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    offsets = MemoryOffsets()
    props = connector_props(mariadb_db)
    with TaskRunner(props, offsets) as run:
        run.wait_data(1)
        execute(mariadb_db, "INSERT INTO t VALUES (1)")
        run.wait_data(2)
    key, stored = next(iter(offsets.stored.items()))
    execute(mariadb_db, "INSERT INTO t VALUES (2)", "INSERT INTO t VALUES (3)")
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    # Same GTIDs, but a file/pos that on this server lies after rows 2 and 3.
    offsets.stored[key] = {**stored, "file": file, "pos": pos}
    with caplog.at_level(logging.WARNING, logger="cdc_mysql"), TaskRunner(dict(props), offsets) as run:
        execute(mariadb_db, "INSERT INTO t VALUES (4)")
        recs = run.wait_data(3)
        run.poll_once()
    assert [after(r)["id"] for r in run.data()] == [2, 3, 4]
    assert any("Resuming by GTID" in r.getMessage() and f"{file}:{pos}" in r.getMessage() for r in caplog.records)
    assert recs[-1].source_offset["file"] == file

"""Connector lifecycle as a Debezium PostgreSQL user relies on it: restarts per snapshot.mode, the
slot and publication across stops, WAL retention with heartbeats, DDL while streaming."""

from __future__ import annotations

import logging

import psycopg
import pytest

from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.task import ConnectorTaskId
from cdc.storage.status import State
from cdc_postgres.lsn import parse_lsn
from tests.postgres.test_connector import _failed_trace, connector, herder, values, wait_until
from tests.support.logs import stored_offsets

__all__ = ["herder"]  # the fixture, shared with test_connector

TASK = ConnectorTaskId("pg", 0)
SLOT = "SELECT active, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'cdc_test'"


def _offset(h: StandaloneHerder) -> dict:
    return next(iter(stored_offsets(h.worker.log).values()), {})


def _stop_and_release(h: StandaloneHerder, sql: psycopg.Connection) -> None:
    h.worker.stop_and_await_tasks([TASK])
    wait_until(lambda: (row := sql.execute(SLOT).fetchone()) is None or not row[0], what="the slot released")


def _confirmed(sql: psycopg.Connection) -> int:
    return parse_lsn(sql.execute(SLOT).fetchone()[1])


def test_slot_dropped_after_a_snapshot_with_nothing_streamed_fails_instead_of_skipping(
    herder: StandaloneHerder, postgres_db
) -> None:
    """The stored offset is the snapshot's last record (no lsn_commit yet): a new slot would start
    after the rows written while the connector was stopped, losing them without a word."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE s(id int PRIMARY KEY)")
    sql.execute("INSERT INTO s VALUES (1)")
    herder.put_connector_config(connector(postgres_db))
    wait_until(lambda: len(values(herder, "srv.public.s")) == 1, what="the snapshot row")
    wait_until(lambda: _offset(herder).get("last_snapshot_record"), what="the snapshot offset")
    _stop_and_release(herder, sql)
    sql.execute("SELECT pg_drop_replication_slot('cdc_test')")
    sql.execute("INSERT INTO s VALUES (2)")  # only the dropped slot would have kept this
    herder.restart_task(TASK)
    trace = _failed_trace(herder)
    assert "replication slot 'cdc_test' does not exist, but the stored offset points into it (snapshot lsn" in trace
    assert "snapshot.mode=when_needed" in trace


def _advanced_past_stored(herder: StandaloneHerder, postgres_db, **extra: str) -> psycopg.Connection:
    """Stream one row, stop, then move the slot past the stored offset (as another reader would)."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE adv(id int PRIMARY KEY)")
    sql.execute("INSERT INTO adv VALUES (1)")
    herder.put_connector_config(connector(postgres_db, **extra))
    wait_until(lambda: len(values(herder, "srv.public.adv")) == 1, what="the snapshot row")
    sql.execute("INSERT INTO adv VALUES (2)")
    wait_until(lambda: "lsn_commit" in _offset(herder), what="a streaming offset")
    _stop_and_release(herder, sql)
    sql.execute("INSERT INTO adv VALUES (3)")
    sql.execute("SELECT pg_replication_slot_advance('cdc_test', pg_current_wal_lsn())")
    assert _confirmed(sql) > _offset(herder)["lsn_commit"]
    return sql


def test_slot_confirmed_past_the_stored_offset_fails_with_advice(herder: StandaloneHerder, postgres_db) -> None:
    _advanced_past_stored(herder, postgres_db)
    herder.restart_task(TASK)
    trace = _failed_trace(herder)
    assert "replication slot 'cdc_test' has confirmed_flush_lsn" in trace and "past the stored offset" in trace
    assert "snapshot.mode=when_needed" in trace
    assert [v["after"]["id"] for v in values(herder, "srv.public.adv") if v] == [1, 2]  # row 3 not silently gone


def test_when_needed_resnapshots_when_the_slot_is_past_the_stored_offset(herder: StandaloneHerder, postgres_db) -> None:
    sql = _advanced_past_stored(herder, postgres_db, **{"snapshot.mode": "when_needed"})
    herder.restart_task(TASK)
    wait_until(lambda: len(values(herder, "srv.public.adv")) == 5, what="a new snapshot of 3 rows")
    resnap = values(herder, "srv.public.adv")[2:]
    assert [(v["op"], v["after"]["id"]) for v in resnap] == [("r", 1), ("r", 2), ("r", 3)]
    sql.execute("INSERT INTO adv VALUES (4)")
    wait_until(lambda: len(values(herder, "srv.public.adv")) == 6, what="streaming after the new snapshot")
    assert values(herder, "srv.public.adv")[-1]["after"]["id"] == 4


def test_initial_only_leaves_no_slot_behind(herder: StandaloneHerder, postgres_db) -> None:
    """Debezium's initial_only never streams; a slot left behind would hold WAL for ever."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE io(id int PRIMARY KEY)")
    sql.execute("INSERT INTO io VALUES (1), (2)")
    herder.put_connector_config(connector(postgres_db, **{"snapshot.mode": "initial_only"}))
    wait_until(lambda: len(values(herder, "srv.public.io")) == 2, what="the snapshot")
    wait_until(lambda: sql.execute(SLOT).fetchone() is None, what="the slot dropped")
    herder.restart_task(TASK)  # the stored offset says done: no second snapshot, no new slot
    wait_until(lambda: herder.worker.status_store.get_task("pg", 0).state is State.RUNNING, what="restarted")
    sql.execute("INSERT INTO io VALUES (3)")
    import time

    time.sleep(1.0)
    assert [v["op"] for v in values(herder, "srv.public.io")] == ["r", "r"]
    assert sql.execute(SLOT).fetchone() is None


def test_slot_drop_on_stop(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE d(id int PRIMARY KEY)")
    herder.put_connector_config(connector(postgres_db, **{"slot.drop.on.stop": "true", "snapshot.mode": "no_data"}))
    wait_until(lambda: (row := sql.execute(SLOT).fetchone()) is not None and row[0], what="streaming")
    herder.delete_connector("pg")  # the walsender is still up as stop() begins: the drop must wait for it
    wait_until(lambda: sql.execute(SLOT).fetchone() is None, timeout=15, what="the slot dropped on stop")


def test_heartbeats_move_the_slot_while_other_databases_write(herder: StandaloneHerder, postgres_db) -> None:
    """Debezium's fix for WAL growth: captured tables idle, WAL written elsewhere; the heartbeat's
    offset is stored and then confirmed, so the slot's confirmed_flush_lsn follows the server."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE idle(id int PRIMARY KEY)")
    herder.put_connector_config(
        connector(postgres_db, **{"heartbeat.interval.ms": "200", "status.update.interval.ms": "200"})
    )
    wait_until(lambda: (row := sql.execute(SLOT).fetchone()) is not None and row[0], what="streaming")
    start = _confirmed(sql)
    other = psycopg.connect(postgres_db.dsn.rsplit("/", 1)[0] + "/postgres", autocommit=True)
    try:
        other.execute("CREATE TABLE IF NOT EXISTS busy_elsewhere(v int)")
        other.execute("INSERT INTO busy_elsewhere SELECT g FROM generate_series(1, 1000) g")
        target = parse_lsn(other.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
        wait_until(lambda: _confirmed(sql) >= target, timeout=20, what="confirmed_flush_lsn past the other DB's WAL")
        assert int(_offset(herder)["lsn_commit"]) >= target  # stored first, then confirmed
        assert target > start
    finally:
        other.execute("DROP TABLE IF EXISTS busy_elsewhere")
        other.close()


def test_heartbeat_action_query_survives_a_server_restart(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE beats(id serial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")
    herder.put_connector_config(
        connector(
            postgres_db,
            **{"heartbeat.interval.ms": "200", "heartbeat.action.query": "INSERT INTO beats DEFAULT VALUES"},
        )
    )
    count = "SELECT count(*) FROM beats"
    wait_until(lambda: sql.execute(count).fetchone()[0] >= 2, what="heartbeat action rows")
    sql.close()
    postgres_db.kill()
    postgres_db.restart()
    sql = postgres_db.connect()
    before = sql.execute(count).fetchone()[0]
    wait_until(lambda: sql.execute(count).fetchone()[0] >= before + 3, timeout=30, what="action rows after restart")
    assert herder.worker.status_store.get_task("pg", 0).state is State.RUNNING
    # The action's own inserts are captured changes: they keep the offset moving.
    wait_until(lambda: len(values(herder, "srv.public.beats")) >= before + 3, timeout=30, what="beats streamed")


def test_table_added_to_a_filtered_include_list_is_streamed_and_named(
    herder: StandaloneHerder, postgres_db, caplog: pytest.LogCaptureFixture
) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE first(id int PRIMARY KEY)")
    sql.execute("CREATE TABLE later(id int PRIMARY KEY)")
    sql.execute("INSERT INTO first VALUES (1)")
    sql.execute("INSERT INTO later VALUES (1)")
    cfg = {"publication.autocreate.mode": "filtered", "table.include.list": r"public\.first"}
    herder.put_connector_config(connector(postgres_db, **cfg))
    wait_until(lambda: len(values(herder, "srv.public.first")) == 1, what="the snapshot")
    sql.execute("INSERT INTO first VALUES (2)")
    wait_until(lambda: "lsn_commit" in _offset(herder), what="a streaming offset")
    caplog.set_level(logging.WARNING, logger="cdc_postgres")
    herder.put_connector_config(connector(postgres_db, **{**cfg, "table.include.list": r"public\.first,public\.later"}))
    wait_until(lambda: "table public.later was added to the captured tables after the snapshot" in caplog.text)
    assert r"table.include.list=public\.later" in caplog.text
    published = "SELECT tablename FROM pg_publication_tables WHERE pubname = 'dbz_publication' ORDER BY 1"
    wait_until(lambda: sql.execute(published).fetchall() == [("first",), ("later",)], what="publication updated")
    wait_until(lambda: (row := sql.execute(SLOT).fetchone()) is not None and row[0], what="streaming again")
    sql.execute("INSERT INTO later VALUES (2)")
    wait_until(lambda: len(values(herder, "srv.public.later")) == 1, what="the new table streamed")
    assert values(herder, "srv.public.later")[0]["after"] == {"id": 2}  # Debezium: no existing rows, as warned


def test_captured_table_missing_from_the_publication_is_named(
    herder: StandaloneHerder, postgres_db, caplog: pytest.LogCaptureFixture
) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE inpub(id int PRIMARY KEY)")
    sql.execute("CREATE TABLE outpub(id int PRIMARY KEY)")
    sql.execute("CREATE PUBLICATION dbz_publication FOR TABLE inpub")
    caplog.set_level(logging.WARNING, logger="cdc_postgres")
    herder.put_connector_config(
        connector(postgres_db, **{"publication.autocreate.mode": "disabled", "snapshot.mode": "no_data"})
    )
    wait_until(lambda: "table public.outpub matches" in caplog.text, what="the warning")
    assert 'ALTER PUBLICATION "dbz_publication" ADD TABLE public.outpub' in caplog.text
    assert "public.inpub matches" not in caplog.text


def test_ddl_while_streaming_renames_and_type_changes(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE ren(id int PRIMARY KEY, a int)")
    herder.put_connector_config(
        connector(postgres_db, **{"snapshot.mode": "no_data", "table.include.list": r"public\.ren"})
    )
    wait_until(lambda: (row := sql.execute(SLOT).fetchone()) is not None and row[0], what="streaming")
    sql.execute("INSERT INTO ren VALUES (1, 10)")
    sql.execute("ALTER TABLE ren RENAME COLUMN a TO b")
    sql.execute("INSERT INTO ren VALUES (2, 20)")
    sql.execute("ALTER TABLE ren ALTER COLUMN b TYPE text")
    sql.execute("INSERT INTO ren VALUES (3, 'thirty')")
    sql.execute("ALTER TABLE ren RENAME TO ren_archive")  # out of table.include.list
    sql.execute("INSERT INTO ren_archive VALUES (4, 'forty')")
    sql.execute("CREATE TABLE ren(id int PRIMARY KEY, a int)")  # the captured name again, a new table
    sql.execute("INSERT INTO ren VALUES (5, 50)")
    wait_until(lambda: len(values(herder, "srv.public.ren")) >= 4, what="4 events")
    import time

    time.sleep(0.5)
    assert [v["after"] for v in values(herder, "srv.public.ren")] == [
        {"id": 1, "a": 10},
        {"id": 2, "b": 20},
        {"id": 3, "b": "thirty"},
        {"id": 5, "a": 50},
    ]  # row 4 belongs to a table no longer captured: not under the old name
    assert herder.worker.log.describe_topic("srv.public.ren_archive") is None


def _partitioned(sql: psycopg.Connection) -> None:
    sql.execute("CREATE TABLE orders(id int PRIMARY KEY, v text) PARTITION BY RANGE (id)")
    sql.execute("CREATE TABLE orders_1 PARTITION OF orders FOR VALUES FROM (0) TO (100)")
    sql.execute("INSERT INTO orders VALUES (1, 'a'), (2, 'b')")


def test_partitioned_table_rows_are_read_once_under_the_name_they_stream_as(
    herder: StandaloneHerder, postgres_db
) -> None:
    """A parent's SELECT returns its partitions' rows too: read under both names they were
    duplicated, and the parent's topic never got the later changes (streamed per partition)."""
    sql = postgres_db.connect()
    _partitioned(sql)
    herder.put_connector_config(connector(postgres_db))
    wait_until(lambda: len(values(herder, "srv.public.orders_1")) == 2, what="the partition's snapshot")
    sql.execute("CREATE TABLE orders_2 PARTITION OF orders FOR VALUES FROM (100) TO (200)")  # while streaming
    sql.execute("INSERT INTO orders VALUES (150, 'new partition')")
    wait_until(lambda: len(values(herder, "srv.public.orders_2")) == 1, what="the new partition streamed")
    assert values(herder, "srv.public.orders_2")[0]["after"] == {"id": 150, "v": "new partition"}
    assert herder.worker.log.describe_topic("srv.public.orders") is None


def test_partitions_via_root_publication_are_one_topic(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    _partitioned(sql)
    sql.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES WITH (publish_via_partition_root = true)")
    herder.put_connector_config(connector(postgres_db))
    wait_until(lambda: len(values(herder, "srv.public.orders")) == 2, what="the root's snapshot")
    sql.execute("INSERT INTO orders VALUES (3, 'c')")
    wait_until(lambda: len(values(herder, "srv.public.orders")) == 3, what="the streamed row")
    assert [(v["op"], v["after"]["id"]) for v in values(herder, "srv.public.orders")] == [("r", 1), ("r", 2), ("c", 3)]
    assert herder.worker.log.describe_topic("srv.public.orders_1") is None


def test_partitioned_table_without_its_partitions_is_named(
    herder: StandaloneHerder, postgres_db, caplog: pytest.LogCaptureFixture
) -> None:
    sql = postgres_db.connect()
    _partitioned(sql)
    caplog.set_level(logging.WARNING, logger="cdc_postgres")
    herder.put_connector_config(connector(postgres_db, **{"table.include.list": r"public\.orders"}))
    wait_until(lambda: "table public.orders is partitioned" in caplog.text, what="the warning")
    assert "(public.orders_1)" in caplog.text and "publish_via_partition_root = true" in caplog.text


def test_invalidated_slot_fails_then_when_needed_resnapshots(herder: StandaloneHerder) -> None:
    """max_slot_wal_keep_size removed the WAL the stopped connector still needed."""
    from tests.rig import postgres as pg_rig

    with pg_rig.provide({"max_slot_wal_keep_size": "1MB"}) as server:
        sql = server.connect()
        sql.execute("CREATE TABLE w(id int PRIMARY KEY)")
        sql.execute("INSERT INTO w VALUES (1)")
        herder.put_connector_config(connector(server))
        wait_until(lambda: len(values(herder, "srv.public.w")) == 1, what="the snapshot row")
        sql.execute("INSERT INTO w VALUES (2)")
        wait_until(lambda: "lsn_commit" in _offset(herder), what="a streaming offset")
        _stop_and_release(herder, sql)
        for i in range(3, 7):  # each switch starts a new 16MB segment: far past the 1MB the slot may keep
            sql.execute("INSERT INTO w VALUES (%s)", (i,))
            sql.execute("SELECT pg_switch_wal()")
        sql.execute("CHECKPOINT")
        status = "SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'cdc_test'"
        assert sql.execute(status).fetchone()[0] == "lost"
        herder.restart_task(TASK)
        trace = _failed_trace(herder)
        assert "replication slot 'cdc_test' was invalidated (max_slot_wal_keep_size)" in trace
        assert "snapshot.mode=when_needed" in trace

        herder.put_connector_config(connector(server, **{"snapshot.mode": "when_needed"}))
        wait_until(lambda: len(values(herder, "srv.public.w")) == 2 + 6, what="a new snapshot of 6 rows")
        assert [(v["op"], v["after"]["id"]) for v in values(herder, "srv.public.w")[2:]] == [
            ("r", i) for i in range(1, 7)
        ]
        assert sql.execute(status).fetchone()[0] != "lost"
        herder.delete_connector("pg")
        sql.close()


def test_failing_heartbeat_action_query_names_the_key(herder: StandaloneHerder, postgres_db) -> None:
    postgres_db.connect().execute("CREATE TABLE quiet(id int PRIMARY KEY)")
    extra = {"heartbeat.interval.ms": "100", "heartbeat.action.query": "INSERT INTO no_such_table VALUES (1)"}
    herder.put_connector_config(connector(postgres_db, **{"snapshot.mode": "no_data", **extra}))
    trace = _failed_trace(herder)
    assert "heartbeat.action.query failed" in trace and "no_such_table" in trace

"""The PostgreSQL connector end to end: snapshot handoff, streaming ops, offsets, resume, guards."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc.api.errors import ConfigException
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import State
from cdc_postgres.lsn import parse_lsn
from tests.support.logs import stored_offsets, topic_records


def wait_until(cond, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def herder(tmp_path: Path) -> Iterator[StandaloneHerder]:
    config = WorkerConfig(
        {"transport": "embedded", "state.dir": str(tmp_path / "state"), "embedded.synchronous": "NORMAL"}
    )
    log_ = open_log(config)
    worker = Worker(
        config, PluginRegistry.discover(), log_, open_offset_store(config, log_), open_status_store(config, log_), "w"
    )
    h = StandaloneHerder(worker)
    h.start()
    yield h
    h.stop()


def connector(db, **extra: str) -> dict[str, str]:
    return {
        "name": "pg",
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": db.host,
        "database.port": str(db.port),
        "database.user": db.user,
        "database.dbname": db.dbname,
        "topic.prefix": "srv",
        "slot.name": "cdc_test",
        "skipped.operations": "none",
        "poll.interval.ms": "50",
        **extra,
    }


def values(h: StandaloneHerder, topic: str) -> list[dict | None]:
    return [None if r.value is None else json.loads(r.value)["payload"] for r in topic_records(h.worker.log, topic)]


def test_snapshot_then_streaming(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE public.customers(id int PRIMARY KEY, name text NOT NULL, score numeric(5,2))")
    sql.execute("INSERT INTO customers VALUES (1, 'anne', 1.50), (2, 'bob', NULL)")
    herder.put_connector_config(connector(postgres_db))
    topic = "srv.public.customers"
    wait_until(lambda: len(values(herder, topic)) == 2, what="2 snapshot rows")
    snap = values(herder, topic)
    assert [v["op"] for v in snap] == ["r", "r"]
    assert [v["source"]["snapshot"] for v in snap] == ["first", "last"]
    assert snap[0]["after"] == {"id": 1, "name": "anne", "score": "AJY="}  # 150 unscaled, base64
    consistent_lsn = snap[0]["source"]["lsn"]

    sql.execute("INSERT INTO customers VALUES (3, 'carl', 2.00)")
    sql.execute("UPDATE customers SET name = 'anna' WHERE id = 1")
    sql.execute("UPDATE customers SET id = 20 WHERE id = 2")  # primary-key change
    sql.execute("DELETE FROM customers WHERE id = 3")
    sql.execute("SELECT pg_logical_emit_message(true, 'audit', 'hi')")
    sql.execute("TRUNCATE customers")
    wait_until(lambda: len(values(herder, topic)) >= 2 + 1 + 1 + 3 + 2 + 1, what="streamed events")
    streamed = values(herder, topic)[2:]
    ops = [None if v is None else v["op"] for v in streamed]
    assert ops == ["c", "u", "d", None, "c", "d", None, "t"]
    create, update, pk_delete, _, pk_create, delete, _, trunc = streamed
    assert create["after"] == {"id": 3, "name": "carl", "score": "AMg="}
    assert create["source"]["lsn"] >= consistent_lsn and create["source"]["txId"] > 0
    assert json.loads(create["source"]["sequence"])[1] == str(create["source"]["lsn"])
    # REPLICA IDENTITY DEFAULT: no old row for an update that keeps the key.
    assert update["before"] is None and update["after"]["name"] == "anna"
    assert pk_delete["before"]["id"] == 2 and pk_create["after"]["id"] == 20
    # Missing NOT NULL values in a key-only old row fall back as Debezium's do.
    assert delete["before"] == {"id": 3, "name": "", "score": None}
    assert trunc["source"]["table"] == "customers"
    records = topic_records(herder.worker.log, topic)
    pk_headers = dict(records[4].headers)
    assert "__debezium.newkey" in pk_headers and "__debezium.oldkey" in dict(records[6].headers)
    message = values(herder, "srv.message")
    assert message[0]["op"] == "m" and message[0]["message"]["prefix"] == "audit"

    offsets = stored_offsets(herder.worker.log)
    (value,) = offsets.values()
    assert {"lsn", "lsn_proc", "lsn_commit", "txId", "ts_usec"} <= set(value)
    assert next(iter(offsets)) == '["pg",{"server":"srv"}]'


def test_restart_resumes_without_loss_or_duplicate(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t(id int PRIMARY KEY)")
    herder.put_connector_config(connector(postgres_db))
    topic = "srv.public.t"
    sql.execute("INSERT INTO t SELECT g FROM generate_series(1, 50) g")  # one transaction
    wait_until(lambda: len(values(herder, topic)) == 50, what="50 rows")
    herder.restart_task(ConnectorTaskId("pg", 0))
    sql.execute("INSERT INTO t SELECT g FROM generate_series(51, 60) g")
    wait_until(lambda: len(values(herder, topic)) >= 60, what="60 rows")
    time.sleep(0.5)
    ids = [v["after"]["id"] for v in values(herder, topic)]
    assert ids == list(range(1, 61))
    # The slot's flushed position follows stored offsets only.
    herder.worker.tasks[ConnectorTaskId("pg", 0)]
    stored = next(iter(stored_offsets(herder.worker.log).values()))
    wait_until(
        lambda: (
            parse_lsn(
                sql.execute(
                    "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name='cdc_test'"
                ).fetchone()[0]
            )
            >= stored["lsn_commit"] - 1_000_000_000
            and True
        ),
        what="confirmed flush",
    )


def _failed_trace(herder: StandaloneHerder) -> str:
    status = herder.worker.status_store
    wait_until(lambda: (s := status.get_task("pg", 0)) is not None and s.state is State.FAILED, what="FAILED")
    return status.get_task("pg", 0).trace


def _refused_then_failed_trace(herder: StandaloneHerder, config: dict[str, str]) -> tuple[str, str]:
    """A config the server refuses at login: submitted as over REST it is refused before anything is
    created (the connector's live check, issue 31 item 8); from the operator's own files it starts, and
    the task's start-up guard explains it in the trace. (The refusal's message, the trace.)"""
    with pytest.raises(ConfigException) as refused:
        herder.put_connector_config(config)
    assert herder.connector_names() == []
    herder.put_connector_config(config, trusted=True)
    return str(refused.value), _failed_trace(herder)


def test_table_without_primary_key_is_captured_and_explained(herder: StandaloneHerder, postgres_db, caplog) -> None:
    """As Debezium (issue 19): captured with a null key; the WARN says PostgreSQL refuses its updates and deletes."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE nopk(a int)")
    sql.execute("INSERT INTO nopk VALUES (1)")
    herder.put_connector_config(connector(postgres_db))
    wait_until(lambda: len(topic_records(herder.worker.log, "srv.public.nopk")) == 1, what="the snapshot row")
    record = topic_records(herder.worker.log, "srv.public.nopk")[0]
    assert record.key is None and json.loads(record.value)["payload"]["after"] == {"a": 1}
    assert herder.worker.status_store.get_task("pg", 0).state is State.RUNNING
    warning = next(r.getMessage() for r in caplog.records if "public.nopk has no primary key" in r.getMessage())
    assert "refuses UPDATE and DELETE" in warning and "ALTER TABLE public.nopk REPLICA IDENTITY FULL" in warning


def test_missing_publication_with_autocreate_disabled(herder: StandaloneHerder, postgres_db) -> None:
    herder.put_connector_config(connector(postgres_db, **{"publication.autocreate.mode": "disabled"}))
    trace = _failed_trace(herder)
    assert "publication 'dbz_publication' does not exist" in trace and "CREATE PUBLICATION" in trace


def test_user_without_replication(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("DROP ROLE IF EXISTS norep; CREATE ROLE norep LOGIN")
    refused, trace = _refused_then_failed_trace(herder, connector(postgres_db, **{"database.user": "norep"}))
    for message in (refused, trace):
        assert "'norep' lacks the REPLICATION attribute" in message and "ALTER ROLE" in message


def test_missing_slot_with_stored_offset(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE s(id int PRIMARY KEY)")
    sql.execute("INSERT INTO s VALUES (1)")
    herder.put_connector_config(connector(postgres_db))
    wait_until(lambda: len(values(herder, "srv.public.s")) == 1, what="the snapshot row")
    sql.execute("INSERT INTO s VALUES (2)")
    wait_until(lambda: len(values(herder, "srv.public.s")) == 2, what="the streamed row")
    wait_until(lambda: "lsn_commit" in next(iter(stored_offsets(herder.worker.log).values()), {}), what="offset")
    task = ConnectorTaskId("pg", 0)
    herder.worker.stop_and_await_tasks([task])
    # The server's walsender exits a moment after the task closed its connection.
    wait_until(
        lambda: not sql.execute("SELECT active FROM pg_replication_slots WHERE slot_name = 'cdc_test'").fetchone()[0],
        what="the slot released",
    )
    sql.execute("SELECT pg_drop_replication_slot('cdc_test')")
    herder.restart_task(task)
    trace = _failed_trace(herder)
    assert "replication slot 'cdc_test' does not exist, but the stored offset points into it" in trace
    assert "snapshot.mode=when_needed" in trace


def test_postgres_restart_mid_stream_loses_nothing(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE r(id int PRIMARY KEY)")
    herder.put_connector_config(connector(postgres_db))
    sql.execute("INSERT INTO r SELECT g FROM generate_series(1, 20) g")
    wait_until(lambda: len(values(herder, "srv.public.r")) == 20, what="20 rows")
    sql.close()
    postgres_db.kill()
    postgres_db.restart()
    sql = postgres_db.connect()
    sql.execute("INSERT INTO r SELECT g FROM generate_series(21, 40) g")
    wait_until(lambda: len(values(herder, "srv.public.r")) >= 40, timeout=60, what="40 rows after the restart")
    time.sleep(0.5)
    assert [v["after"]["id"] for v in values(herder, "srv.public.r")] == list(range(1, 41))
    assert herder.worker.status_store.get_task("pg", 0).state is State.RUNNING


def _streaming(sql, herder: StandaloneHerder, **extra: str) -> None:
    herder.put_connector_config(connector_for(sql, **extra))
    wait_until(
        lambda: (
            sql.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'cdc_test'").fetchone()[0] == 1
        ),
        what="the slot",
    )


def connector_for(sql, **extra: str) -> dict[str, str]:
    info = sql.info
    return {
        "name": "pg",
        "connector.class": "PostgresConnector",
        "database.hostname": info.host,
        "database.port": str(info.port),
        "database.user": info.user,
        "database.dbname": info.dbname,
        "topic.prefix": "srv",
        "slot.name": "cdc_test",
        "skipped.operations": "none",
        "poll.interval.ms": "50",
        "snapshot.mode": "no_data",
        **extra,
    }


def test_replica_identity_full_and_toast_placeholder(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE f(id int PRIMARY KEY, v text, big text)")
    sql.execute("ALTER TABLE f ALTER COLUMN big SET STORAGE EXTERNAL")
    sql.execute("CREATE TABLE d(id int PRIMARY KEY, v text, big text)")
    sql.execute("ALTER TABLE d ALTER COLUMN big SET STORAGE EXTERNAL")
    sql.execute("ALTER TABLE f REPLICA IDENTITY FULL")
    _streaming(sql, herder)
    big = "y" * 20_000
    for t in ("f", "d"):
        sql.execute(f"INSERT INTO {t} VALUES (1, 'a', %s)", (big,))
        sql.execute(f"UPDATE {t} SET v = 'b' WHERE id = 1")
    wait_until(
        lambda: len(values(herder, "srv.public.f")) == 2 and len(values(herder, "srv.public.d")) == 2, what="4 events"
    )
    full_update = values(herder, "srv.public.f")[1]
    assert full_update["before"] == {"id": 1, "v": "a", "big": big}  # FULL: the whole old row
    default_update = values(herder, "srv.public.d")[1]
    assert default_update["before"] is None
    assert default_update["after"] == {"id": 1, "v": "b", "big": "__debezium_unavailable_value"}


def test_alter_table_mid_stream(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE a(id int PRIMARY KEY, x text)")
    _streaming(sql, herder)
    sql.execute("INSERT INTO a VALUES (1, 'one')")
    sql.execute("ALTER TABLE a ADD COLUMN y int")
    sql.execute("INSERT INTO a VALUES (2, 'two', 22)")
    sql.execute("ALTER TABLE a DROP COLUMN x")
    sql.execute("INSERT INTO a VALUES (3, 33)")
    wait_until(lambda: len(values(herder, "srv.public.a")) == 3, what="3 events across 2 ALTERs")
    after = [v["after"] for v in values(herder, "srv.public.a")]
    assert after == [{"id": 1, "x": "one"}, {"id": 2, "x": "two", "y": 22}, {"id": 3, "y": 33}]


def test_heartbeats_move_the_offset_while_idle(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE hb(id int PRIMARY KEY)")
    sql.execute("CREATE TABLE other(id int PRIMARY KEY)")
    _streaming(sql, herder, **{"heartbeat.interval.ms": "200", "table.include.list": "public.hb"})
    sql.execute("INSERT INTO other VALUES (1)")  # not captured: only WAL moves
    topic = "__debezium-heartbeat.srv"
    wait_until(lambda: len(topic_records(herder.worker.log, topic)) >= 2, what="heartbeats")
    beat = json.loads(topic_records(herder.worker.log, topic)[-1].value)["payload"]
    assert beat["ts_ms"] > 0
    wait_until(lambda: "lsn" in next(iter(stored_offsets(herder.worker.log).values()), {}), what="a heartbeat offset")


def test_wal_level_not_logical_is_explained(herder: StandaloneHerder) -> None:
    from tests.rig import postgres as pg_rig

    with pg_rig.provide({"wal_level": "replica"}) as server:
        refused, trace = _refused_then_failed_trace(herder, connector(server))
    for message in (refused, trace):
        assert "wal_level is 'replica'" in message and "ALTER SYSTEM SET wal_level = logical" in message


def test_filtered_publication_and_filters(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE keep(id int PRIMARY KEY, secret text, v text)")
    sql.execute("CREATE TABLE skip(id int PRIMARY KEY)")
    _streaming(
        sql,
        herder,
        **{
            "publication.autocreate.mode": "filtered",
            "table.include.list": "public\\.keep",
            "column.exclude.list": "public\\.keep\\.secret",
            "message.prefix.include.list": "audit.*",
        },
    )
    tables = sql.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'dbz_publication'").fetchall()
    assert tables == [("keep",)]
    sql.execute("INSERT INTO keep VALUES (1, 's3cret', 'x')")
    sql.execute("INSERT INTO skip VALUES (1)")
    sql.execute("SELECT pg_logical_emit_message(true, 'audit.login', 'a')")
    sql.execute("SELECT pg_logical_emit_message(true, 'noise', 'b')")
    sql.execute("INSERT INTO keep VALUES (2, 's3cret', 'y')")
    wait_until(lambda: len(values(herder, "srv.public.keep")) == 2, what="2 kept rows")
    assert [v["after"] for v in values(herder, "srv.public.keep")] == [{"id": 1, "v": "x"}, {"id": 2, "v": "y"}]
    assert herder.worker.log.describe_topic("srv.public.skip") is None
    assert [m["message"]["prefix"] for m in values(herder, "srv.message")] == ["audit.login"]


def test_initial_only_snapshots_and_stops_streaming(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE io(id int PRIMARY KEY)")
    sql.execute("INSERT INTO io VALUES (1), (2)")
    herder.put_connector_config(connector(postgres_db, **{"snapshot.mode": "initial_only"}))
    wait_until(lambda: len(values(herder, "srv.public.io")) == 2, what="the snapshot")
    sql.execute("INSERT INTO io VALUES (3)")
    time.sleep(1.0)
    assert [v["op"] for v in values(herder, "srv.public.io")] == ["r", "r"]


def test_transaction_metadata(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t1(id int PRIMARY KEY)")
    sql.execute("CREATE TABLE t2(id int PRIMARY KEY)")
    _streaming(sql, herder, **{"provide.transaction.metadata": "true"})
    with sql.transaction():
        sql.execute("INSERT INTO t1 VALUES (1), (2)")
        sql.execute("INSERT INTO t2 VALUES (1)")
    wait_until(lambda: len(values(herder, "srv.transaction")) == 2, what="BEGIN and END")
    begin, end = values(herder, "srv.transaction")
    assert begin["status"] == "BEGIN" and end["status"] == "END" and begin["id"] == end["id"]
    assert end["event_count"] == 3
    assert end["data_collections"] == [
        {"data_collection": "public.t1", "event_count": 2},
        {"data_collection": "public.t2", "event_count": 1},
    ]
    blocks = [v["transaction"] for v in values(herder, "srv.public.t1")]
    assert [b["total_order"] for b in blocks] == [1, 2] and blocks[0]["id"] == begin["id"]
    assert values(herder, "srv.public.t2")[0]["transaction"]["data_collection_order"] == 1


def test_unknown_database_names_database_dbname(herder: StandaloneHerder, postgres_db) -> None:
    refused, trace = _refused_then_failed_trace(herder, connector(postgres_db, **{"database.dbname": "no_such_db"}))
    for message in (refused, trace):
        assert 'database "no_such_db" does not exist; check database.dbname' in message


def test_slot_active_elsewhere_fails_with_advice(herder: StandaloneHerder, postgres_db) -> None:
    from cdc_postgres.replication import ReplicationConnection

    sql = postgres_db.connect()
    sql.execute("CREATE TABLE busy(id int PRIMARY KEY)")
    sql.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES")
    other = ReplicationConnection(postgres_db.dsn)
    try:
        other.create_slot("cdc_test", export_snapshot=False)
        other.start("cdc_test", ["dbz_publication"])
        # Streaming (no snapshot needed) used to retry forever while reporting RUNNING.
        extra = {"snapshot.mode": "no_data", "slot.max.retries": "2", "slot.retry.delay.ms": "200"}
        herder.put_connector_config(connector(postgres_db, **extra))
        trace = _failed_trace(herder)
    finally:
        other.close()
    assert "replication slot 'cdc_test' is in use by process" in trace
    assert "its own slot.name" in trace and "pg_terminate_backend(" in trace


def test_message_key_columns_are_table_regexes(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE orders_2024(id int PRIMARY KEY, code text NOT NULL)")
    sql.execute("INSERT INTO orders_2024 VALUES (1, 'a')")
    herder.put_connector_config(connector(postgres_db, **{"message.key.columns": r"public\.orders_\d+:code"}))
    topic = "srv.public.orders_2024"
    wait_until(lambda: len(topic_records(herder.worker.log, topic)) == 1, what="the snapshot row")
    key = json.loads(topic_records(herder.worker.log, topic)[0].key)["payload"]
    assert key == {"code": "a"}


def test_message_key_column_missing_from_the_table(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE k(id int PRIMARY KEY)")
    sql.execute("INSERT INTO k VALUES (1)")
    herder.put_connector_config(connector(postgres_db, **{"message.key.columns": "public.k:nosuch"}))
    trace = _failed_trace(herder)
    assert "message.key.columns names column(s) nosuch, which table public.k does not have" in trace


def test_slot_taken_while_reconnecting_fails_instead_of_retrying_forever(herder: StandaloneHerder, postgres_db) -> None:
    from cdc_postgres.replication import ReplicationConnection, ReplicationError

    sql = postgres_db.connect()
    sql.execute("CREATE TABLE taken(id int PRIMARY KEY)")
    _streaming(sql, herder, **{"slot.max.retries": "1", "slot.retry.delay.ms": "500"})
    active = "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'cdc_test'"
    wait_until(lambda: sql.execute(active).fetchone()[0] is not None, what="the task streaming")
    other = ReplicationConnection(postgres_db.dsn)
    try:
        sql.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'cdc_test'")

        def take() -> bool:  # the other reader wins the slot while the task waits to reconnect
            try:
                other.start("cdc_test", ["dbz_publication"])
                return True
            except ReplicationError:
                return False

        wait_until(take, what="the other reader to take the slot")
        trace = _failed_trace(herder)
    finally:
        other.close()
    assert "replication slot 'cdc_test' is in use by another connection" in trace


def test_snapshot_locks_its_tables_only_while_reading_their_structure(postgres_db) -> None:
    """snapshot.locking.mode=shared (Debezium's default): ACCESS SHARE locks while the structures are
    read, released after; an exclusive lock held elsewhere fails after snapshot.lock.timeout.ms with
    the fix. (Tested on the snapshot source itself: an ALTER TABLE already running when the task
    starts holds up the slot's creation first, so only a DDL begun after it meets these locks.)"""
    import psycopg

    from cdc_debezium.filters import include_exclude
    from cdc_debezium.naming import TopicNamingStrategy
    from cdc_postgres.connection import PostgresConnectorError
    from cdc_postgres.schema import PostgresSchema
    from cdc_postgres.snapshot import PostgresSnapshotChangeEventSource, captured_tables
    from cdc_postgres.value_converters import PostgresValueConverters

    sql = postgres_db.connect()
    sql.execute("CREATE TABLE locked(id int PRIMARY KEY)")
    catalog = psycopg.connect(postgres_db.dsn, autocommit=True)
    schema = PostgresSchema(
        catalog,
        TopicNamingStrategy("srv"),
        PostgresValueConverters(),
        "__unavailable",
        include_exclude({}, "a", "b"),
        [],
    )
    source = PostgresSnapshotChangeEventSource(
        {}, schema, None, lambda t: t == "public.locked", 100, None, "shared", 300
    )  # type: ignore[arg-type]
    snapshot = psycopg.connect(postgres_db.dsn)
    tables = captured_tables(snapshot, source.table_filter)
    blocker = psycopg.connect(postgres_db.dsn)
    blocker.execute("LOCK TABLE locked IN ACCESS EXCLUSIVE MODE")  # an ALTER TABLE in progress, say
    with pytest.raises(
        PostgresConnectorError, match=r"within snapshot.lock.timeout.ms=300.*snapshot.locking.mode=none"
    ):
        source._read_structures(snapshot, tables)
    blocker.rollback()
    snapshot.rollback()

    structures = source._read_structures(snapshot, tables)
    assert [t.id for t in structures.values()] == [schema.for_table(*tables[0]).id]
    held = "SELECT count(*) FROM pg_locks WHERE relation = 'locked'::regclass AND pid = %s"
    assert catalog.execute(held, (snapshot.info.backend_pid,)).fetchone()[0] == 0  # released after the read
    for conn in (snapshot, blocker, catalog):
        conn.close()

"""The test rig provides servers configured the way the CDC code needs them."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pymysql
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.rig import KafkaBroker, MariaDbServer, PostgresServer
from tests.rig import mariadb as mariadb_rig
from tests.rig import postgres as postgres_rig
from tests.rig._common import unavailable, unique_name


def variables(server: MariaDbServer, *names: str) -> dict[str, str]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN %s", (names,))
        return dict(cur.fetchall())


def mariadb_scalar(server: MariaDbServer, sql: str) -> Any:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchone()[0]


def consume(broker: KafkaBroker, topic: str, partitions: int, count: int, **conf: Any) -> list[Any]:
    """Read `count` records by assignment (no group join, no trust in end offsets)."""
    consumer = Consumer(broker.config({"group.id": unique_name("g"), "enable.auto.commit": False, **conf}))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records: list[Any] = []
    deadline = time.monotonic() + 15
    try:
        while len(records) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None:
                assert msg.error() is None, msg.error()
                records.append(msg)
        # Anything beyond `count` would be a duplicate or a leaked aborted record.
        extra = consumer.poll(0.5)
        assert extra is None or extra.error() is not None, f"unexpected {extra.value()!r}"
    finally:
        consumer.close()
    return records


# --- policy ------------------------------------------------------------------


def test_unavailable_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        unavailable("no server")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        unavailable("no server")


# --- MariaDB -----------------------------------------------------------------


def test_mariadb_binlog_is_configured_for_cdc(mariadb: MariaDbServer) -> None:
    assert variables(
        mariadb,
        "log_bin",
        "binlog_format",
        "binlog_row_metadata",
        "binlog_row_image",
        "gtid_strict_mode",
    ) == {
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_metadata": "FULL",
        "binlog_row_image": "FULL",
        "gtid_strict_mode": "ON",
    }


def test_mariadb_insert_produces_a_gtid(mariadb_db: MariaDbServer) -> None:
    before = mariadb_scalar(mariadb_db, "SELECT @@gtid_binlog_pos")
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        cur.execute("INSERT INTO t VALUES (1, 'a')")
    after = mariadb_scalar(mariadb_db, "SELECT @@gtid_binlog_pos")
    assert after and after != before
    domain, server_id, seq = after.split(",")[0].split("-")
    assert (domain, server_id) == ("0", "1") and int(seq) >= 2


def test_mariadb_cdc_user_can_read_binlog_positions_but_not_write(
    mariadb: MariaDbServer,
) -> None:
    with mariadb.connect_cdc() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        assert cur.fetchall()
        cur.execute("SHOW MASTER STATUS")
        file, position, *_ = cur.fetchone()
        assert file.startswith("mysql-bin.") and position > 0
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, position))
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute(f"CREATE DATABASE {unique_name()}")


def test_mariadb_survives_kill_and_restart(mariadb_db: MariaDbServer) -> None:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO t VALUES (1), (2), (3)")
    gtid = mariadb_scalar(mariadb_db, "SELECT @@gtid_binlog_pos")

    mariadb_db.kill()
    with pytest.raises(pymysql.err.OperationalError):
        mariadb_db.connect(connect_timeout=1)
    mariadb_db.restart()

    assert mariadb_scalar(mariadb_db, "SELECT COUNT(*) FROM t") == 3
    assert mariadb_scalar(mariadb_db, "SELECT @@gtid_binlog_pos") == gtid


def test_mariadb_url_override_uses_the_external_server(mariadb: MariaDbServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(mariadb_rig.ENV_URL, mariadb.url)
    with mariadb_rig.provide() as external:
        assert (external.host, external.port, external.user) == (
            mariadb.host,
            mariadb.port,
            mariadb.user,
        )
        assert not external.can_restart
        assert mariadb_scalar(external, "SELECT 1") == 1


# --- PostgreSQL ----------------------------------------------------------------


def test_postgres_wal_level_is_logical(postgres: PostgresServer) -> None:
    with postgres.connect() as conn:
        assert conn.execute("SHOW wal_level").fetchone() == ("logical",)


def test_postgres_pgoutput_slot_decodes_an_insert(postgres_db: PostgresServer) -> None:
    with postgres_db.connect() as conn:
        conn.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        conn.execute("CREATE PUBLICATION p FOR ALL TABLES")
        conn.execute("SELECT pg_create_logical_replication_slot('t', 'pgoutput')")
        conn.execute("INSERT INTO t VALUES (1, 'a')")
        changes = conn.execute(
            "SELECT data FROM pg_logical_slot_get_binary_changes("
            "'t', NULL, NULL, 'proto_version', '1', 'publication_names', 'p')"
        ).fetchall()
        # pgoutput: B(egin), R(elation), I(nsert), C(ommit)
        assert [bytes(row[0][:1]) for row in changes] == [b"B", b"R", b"I", b"C"]
        conn.execute("SELECT pg_drop_replication_slot('t')")
        # Left behind on purpose: fresh_database() must drop it, or DROP DATABASE fails.
        conn.execute("SELECT pg_create_logical_replication_slot('leftover', 'pgoutput')")


def test_postgres_accepts_replication_connections(postgres_db: PostgresServer) -> None:
    with psycopg.connect(postgres_db.dsn, autocommit=True, replication="database") as conn:
        result = conn.pgconn.exec_(b"IDENTIFY_SYSTEM")
        assert result.status == psycopg.pq.ExecStatus.TUPLES_OK, result.error_message
        assert result.get_value(0, 3) == postgres_db.dbname.encode()


def test_postgres_survives_kill_and_restart(postgres_db: PostgresServer) -> None:
    with postgres_db.connect() as conn:
        conn.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        conn.execute("INSERT INTO t SELECT generate_series(1, 3)")

    postgres_db.kill()
    with pytest.raises(psycopg.OperationalError):
        postgres_db.connect(connect_timeout=2)
    postgres_db.restart()

    with postgres_db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (3,)


def test_postgres_url_override_uses_the_external_server(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(postgres_rig.ENV_URL, postgres.dsn)
    with postgres_rig.provide() as external:
        assert (external.host, external.port, external.user, external.dbname) == (
            postgres.host,
            postgres.port,
            postgres.user,
            postgres.dbname,
        )
        assert not external.can_restart


# --- Kafka-protocol brokers ----------------------------------------------------


def test_tansu_round_trips_100_messages_over_3_partitions(tansu: KafkaBroker) -> None:
    topic = unique_name()
    tansu.create_topic(topic, partitions=3)
    assert len(tansu.admin().list_topics(topic, timeout=5).topics[topic].partitions) == 3

    producer = Producer(tansu.config())
    for i in range(100):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode(), partition=i % 3)
    assert producer.flush(10) == 0

    records = consume(tansu, topic, 3, 100)
    assert sorted(r.value() for r in records) == sorted(f"v{i}".encode() for i in range(100))
    assert {r.partition() for r in records} == {0, 1, 2}


def test_tansu_restart_comes_back_empty(tansu: KafkaBroker) -> None:
    topic = unique_name()
    tansu.create_topic(topic)
    tansu.kill()
    tansu.restart()
    assert topic not in tansu.admin().list_topics(timeout=5).topics


@pytest.fixture(params=["tansu", "kafka_mock"])
def broker(request: pytest.FixtureRequest) -> KafkaBroker:
    return request.getfixturevalue(request.param)


@pytest.mark.e2e
def test_transactions_commit_and_abort_as_the_flags_say(broker: KafkaBroker) -> None:
    topic = unique_name()
    broker.create_topic(topic, partitions=4)

    producer = Producer(broker.config({"transactional.id": unique_name("tx")}))
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, value=f"c{i}".encode(), partition=i % 4)
    producer.commit_transaction(10)
    producer.begin_transaction()
    producer.produce(topic, value=b"aborted", partition=0)
    producer.flush(10)  # abort_transaction() would otherwise purge it unsent
    producer.abort_transaction(10)

    expected = [f"c{i}".encode() for i in range(10)]
    if not broker.hides_aborted:
        expected.append(b"aborted")
    records = consume(broker, topic, 4, len(expected), **{"isolation.level": "read_committed"})
    assert sorted(r.value() for r in records) == sorted(expected)


@pytest.mark.e2e
def test_zombie_producer_fencing_is_as_the_flags_say(broker: KafkaBroker) -> None:
    topic = unique_name()
    broker.create_topic(topic, partitions=4)
    conf = broker.config({"transactional.id": unique_name("tx")})
    zombie = Producer(conf)
    zombie.init_transactions(10)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"z", partition=0)
    zombie.flush(10)
    Producer(conf).init_transactions(10)

    try:
        # Produce again: Tansu answers a fenced EndTxn alone with a retriable error
        # until the call times out, but rejects the produce with PRODUCER_FENCED.
        zombie.produce(topic, value=b"z2", partition=0)
        zombie.commit_transaction(10)
        fenced = False
    except KafkaException:
        fenced = True
    assert fenced == broker.fences_zombies


def test_a_taken_port_is_never_mistaken_for_the_new_server(postgres: PostgresServer, monkeypatch) -> None:
    # The first "free" port is the session server's: the new server must not take that one
    # for itself (its readiness check compares data directories) and must start on another.
    from tests.rig import _common

    ports = iter([postgres.port])
    real = _common.free_port
    monkeypatch.setattr(_common, "free_port", lambda: next(ports, None) or real())
    with postgres_rig.provide({"max_connections": "20"}) as fresh:
        assert fresh.port != postgres.port
        with fresh.connect(dbname="postgres") as conn:
            assert conn.execute("SHOW max_connections").fetchone()[0] == "20"

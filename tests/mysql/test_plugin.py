"""Packaging and the history stores: the plugin is discovered under Debezium's names; DDL history is durable."""

from __future__ import annotations

import json

import pytest

from cdc.api.errors import ConfigException
from cdc.log.kafka import KafkaLog
from cdc.runtime.plugins import PluginKind, PluginRegistry
from cdc_mysql.connector import MySqlConnector
from cdc_mysql.history import FileSchemaHistory, KafkaSchemaHistory
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.support.logs import topic_records


def test_discovered_under_debezium_class_names() -> None:
    registry = PluginRegistry.discover()
    for name in (
        "MySqlConnector",
        "io.debezium.connector.mysql.MySqlConnector",
        "io.debezium.connector.mariadb.MariaDbConnector",
    ):
        assert registry.resolve(name, [PluginKind.SOURCE]).cls is MySqlConnector


def test_mariadb_connector_name_sets_the_source_block(mariadb_db, tmp_path) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    history = tmp_path / "history.jsonl"
    props = connector_props(
        mariadb_db,
        **{
            "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
            "schema.history.internal.file.filename": str(history),
        },
    )
    with TaskRunner(props) as run:
        rec = run.wait_data(1)[0]
        execute(mariadb_db, "ALTER TABLE t ADD COLUMN c INT")
        run.poll_until(lambda rs: sum(r.topic == "dbserver1" for r in rs) == 2, what="the ALTER schema change")
    source = rec.value.get("source")
    assert source.get("connector") == "mariadb" and source.schema.name == "io.debezium.connector.mariadb.Source"
    records = FileSchemaHistory(str(history)).records()
    assert [r["ddl"].split()[0] for r in records] == ["CREATE", "ALTER"]
    assert set(records[1]) == {"source", "position", "ts_ms", "databaseName", "schemaName", "ddl", "tableChanges"}
    assert records[1]["source"] == {"server": "dbserver1"} and records[1]["position"]["file"].startswith("mysql-bin")
    change = records[1]["tableChanges"][0]
    assert (change["type"], change["id"]) == ("ALTER", f'"{mariadb_db.database}"."t"')
    assert [(c["name"], c["typeName"], c["optional"]) for c in change["table"]["columns"]] == [
        ("id", "INT", False),
        ("c", "INT", True),
    ]
    assert change["table"]["primaryKeyColumnNames"] == ["id"]


def test_kafka_schema_history_writes_one_record_per_ddl(tansu) -> None:
    # The history creates its topic the way Debezium does (one partition, kept forever).
    history = KafkaSchemaHistory("schema-history.inventory", tansu.bootstrap)
    history.record({"source": {"server": "s"}, "position": {"file": "f", "pos": 4}, "ddl": "CREATE TABLE t (i INT)"})
    history.close()
    log_ = KafkaLog(tansu.bootstrap)
    try:
        assert log_.describe_topic("schema-history.inventory").partitions == 1
        values = [json.loads(r.value) for r in topic_records(log_, "schema-history.inventory")]
    finally:
        log_.close()
    assert values == [{"source": {"server": "s"}, "position": {"file": "f", "pos": 4}, "ddl": "CREATE TABLE t (i INT)"}]


def test_kafka_schema_history_takes_debezium_client_settings(tansu) -> None:
    # schema.history.internal.producer.* / .consumer.*, Java names included, reach its clients.
    big = {"ddl": "x" * 1_500_000}  # over librdkafka's default message.max.bytes
    history = KafkaSchemaHistory(
        "schema-history.settings", tansu.bootstrap, producer={"max.request.size": "2000000"}, consumer={}
    )
    history.record(big)
    history.close()
    with pytest.raises(ConfigException) as e:
        KafkaSchemaHistory("schema-history.settings", tansu.bootstrap, consumer={"sasl.jaas.config": "nonsense"})
    assert e.value.name == "schema.history.internal.consumer.sasl.jaas.config"


def test_kafka_schema_history_reads_back_what_it_wrote_at_a_restart(tansu) -> None:
    """A restart reads the Kafka history from its start (Debezium's recoverRecords): the declared
    column types and the newly captured tables' check need it. Before, records() returned nothing, so
    a restart with a Kafka history warned that every captured table had never been read."""
    topic = "schema-history.restart"
    first = KafkaSchemaHistory(topic, tansu.bootstrap)
    assert first.records() == [] and not first.exists()
    written = [
        {"source": {"server": "s"}, "position": {"file": "f", "pos": 4 + i}, "ddl": f"CREATE TABLE t{i} (i INT)"}
        for i in range(25)
    ]
    for record in written:
        first.record(record)
    first.close()
    again = KafkaSchemaHistory(topic, tansu.bootstrap)  # a new task: its own clients
    assert again.records() == written and again.exists()
    again.record({"ddl": "DROP TABLE t0"})
    assert again.records() == [*written, {"ddl": "DROP TABLE t0"}]
    again.close()

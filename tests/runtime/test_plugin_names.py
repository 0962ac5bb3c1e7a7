"""Plugins are listed under Kafka's and Debezium's class names, as Kafka Connect lists them.

Connect UIs and tools match on `io.debezium.connector.mysql.MySqlConnector`; a Python path in
`GET /connector-plugins` left them blind. Every name a plugin was ever known by (its Python
path, its simple names, the short names) still resolves to the same class.
"""

from __future__ import annotations

import pytest

from cdc.runtime.plugins import CONNECTOR_KINDS, PluginKind, PluginRegistry
from cdc.runtime.worker_config import inferred_transport


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    return PluginRegistry.discover()


def test_connectors_listed_under_debeziums_names(registry: PluginRegistry) -> None:
    listed = {p.class_name for p in registry.of_kind(*CONNECTOR_KINDS)}
    assert {
        "io.debezium.connector.mysql.MySqlConnector",
        "io.debezium.connector.mariadb.MariaDbConnector",
        "io.debezium.connector.postgresql.PostgresConnector",
    } <= listed
    assert not any(name.startswith(("cdc_mysql.", "cdc_postgres.")) for name in listed)


def test_every_listed_name_and_alias_resolves_to_its_class(registry: PluginRegistry) -> None:
    for plugin in registry.plugins:
        for name in {plugin.class_name, *plugin.aliases}:
            found = registry.resolve(name, [plugin.kind])
            assert found.cls is plugin.cls, (name, plugin.class_name, found.class_name)


@pytest.mark.parametrize(
    ("name", "listed"),
    [
        ("mysql", "io.debezium.connector.mysql.MySqlConnector"),
        ("MySqlConnector", "io.debezium.connector.mysql.MySqlConnector"),
        ("cdc_mysql.connector.MySqlConnector", "io.debezium.connector.mysql.MySqlConnector"),
        ("mariadb", "io.debezium.connector.mariadb.MariaDbConnector"),
        ("io.debezium.connector.mariadb.MariaDbConnector", "io.debezium.connector.mariadb.MariaDbConnector"),
        ("Filter", "org.apache.kafka.connect.transforms.Filter"),  # not Debezium's scripted Filter
        ("postgres", "io.debezium.connector.postgresql.PostgresConnector"),
        ("postgresql", "io.debezium.connector.postgresql.PostgresConnector"),
    ],
)
def test_short_names_resolve(registry: PluginRegistry, name: str, listed: str) -> None:
    kinds = [PluginKind.TRANSFORMATION] if name == "Filter" else CONNECTOR_KINDS
    assert registry.resolve(name, kinds, "connector.class").class_name == listed


def test_kafka_smts_and_converters_keep_kafkas_names(registry: PluginRegistry) -> None:
    transforms = {p.class_name for p in registry.of_kind(PluginKind.TRANSFORMATION)}
    assert "org.apache.kafka.connect.transforms.Cast$Value" in transforms
    assert "io.debezium.transforms.ExtractNewRecordState" in transforms
    converters = {p.class_name for p in registry.of_kind(PluginKind.CONVERTER)}
    assert "org.apache.kafka.connect.json.JsonConverter" in converters


@pytest.mark.parametrize(
    ("props", "distributed", "expected"),
    [
        ({"bootstrap.servers": "k:9092", "group.id": "g"}, True, "kafka"),  # connect-distributed.properties
        ({"group.id": "g"}, True, "kafka"),
        ({"bootstrap.servers": "k:9092", "offset.storage.file.filename": "/tmp/o"}, False, "kafka"),  # standalone
        ({"state.dir": "/tmp/s"}, False, None),  # the embedded default
        ({"transport": "embedded", "bootstrap.servers": "k:9092"}, True, None),  # said: never overridden
    ],
)
def test_transport_inferred_only_when_unsaid(props: dict[str, str], distributed: bool, expected: str | None) -> None:
    assert inferred_transport(props, distributed=distributed) == expected

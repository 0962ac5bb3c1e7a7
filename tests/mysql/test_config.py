"""Configuration: Debezium's names, validation errors that name the field, one task only."""

from __future__ import annotations

import logging

import pytest

from cdc.api import ConfigException
from cdc_mysql.config import MySqlConnectorConfig, validate
from cdc_mysql.connector import MySqlConnector

BASE = {
    "database.hostname": "db",
    "database.user": "u",
    "database.password": "p",
    "database.server.id": "5400",
    "topic.prefix": "dbserver1",
}


def _errors(props: dict[str, str]) -> dict[str, list[str]]:
    return {v.name: v.errors for v in validate(props) if v.errors}


def test_valid_config_has_debezium_defaults() -> None:
    c = MySqlConnectorConfig(BASE)
    assert (c.port, c.snapshot_mode, c.locking_mode, c.max_batch_size, c.max_queue_size) == (
        3306, "initial", "minimal", 2048, 8192
    )  # fmt: skip
    assert c.skipped_operations == {"t"} and c.tombstones_on_delete and c.include_schema_changes
    assert c.decimal_mode.value == "precise" and c.time_mode.value == "adaptive_time_microseconds"


@pytest.mark.parametrize(
    ("extra", "field", "fragment"),
    [
        ({"database.server.id": "0"}, "database.server.id", "at least 1"),
        ({"snapshot.mode": "never"}, "snapshot.mode", "snapshot.mode=no_data to stream changes from now on"),
        ({"decimal.handling.mode": "exact"}, "decimal.handling.mode", "precise"),
        ({"skipped.operations": "x"}, "skipped.operations", "c, u, d, t, none"),
        ({"topic.prefix": "bad prefix"}, "topic.prefix", "may only contain"),
        ({"topic.prefix": "p" * 250}, "topic.prefix", "at most 249"),
        ({"topic.prefix": ".."}, "topic.prefix", "other than '.' or '..'"),
        ({"max.batch.size": "100", "max.queue.size": "50"}, "max.queue.size", "larger than max.batch.size"),
        ({"table.include.list": "a", "table.exclude.list": "b"}, "table.exclude.list", "mutually exclusive"),
        ({"message.key.columns": "nocolon"}, "message.key.columns", "<db>.<table regex>"),
        ({"database.port": "x"}, "database.port", "32-bit integer"),
        ({"message.key.columns": "inv.t(:id"}, "message.key.columns", "not a valid regular expression"),
        ({"column.mask.with.4.chars": "inv.t.(ssn"}, "column.mask.with.4.chars", "not a valid regular expression"),
        (
            {"column.mask.hash.WHIRLPOOL.with.salt.x": "inv.t.ssn"},
            "column.mask.hash.WHIRLPOOL.with.salt.x",
            "not a hash algorithm",
        ),
        ({"column.blacklist": "inv.t.ssn"}, "column.blacklist", "renamed to column.exclude.list"),
        ({"inconsistent.schema.handling.mode": "loud"}, "inconsistent.schema.handling.mode", "fail, warn, skip"),
    ],
)
def test_invalid_values_name_the_field(extra: dict[str, str], field: str, fragment: str) -> None:
    errors = _errors({**BASE, **extra})
    assert field in errors and fragment in " ".join(errors[field]), errors
    with pytest.raises(ConfigException) as e:
        MySqlConnectorConfig({**BASE, **extra})
    assert e.value.name == field


def test_missing_required_and_renamed_keys() -> None:
    errors = _errors({k: v for k, v in BASE.items() if k != "topic.prefix"})
    assert "topic.prefix" in errors
    with pytest.raises(ConfigException, match=r"database\.server\.name was renamed to topic\.prefix"):
        MySqlConnectorConfig({**{k: v for k, v in BASE.items() if k != "topic.prefix"}, "database.server.name": "x"})
    assert MySqlConnectorConfig({**BASE, "snapshot.mode": "schema_only"}).snapshot_mode == "no_data"


def test_malformed_stored_offset_is_advice_not_a_bug() -> None:
    from cdc.api import ConnectException
    from cdc_mysql.offset_context import MySqlOffsetContext

    for stored in ({"pos": 4}, {"file": "mysql-bin.000001", "pos": 4, "row": "x"}):
        with pytest.raises(ConnectException, match="delete the connector's offsets"):
            MySqlOffsetContext.load(stored)


def test_exactly_one_task_with_a_warning(caplog) -> None:
    c = MySqlConnector()
    c.start(dict(BASE))
    with caplog.at_level(logging.WARNING):
        assert len(c.task_configs(3)) == 1
    assert "exactly one task" in caplog.text
    with pytest.raises(ConfigException) as e:
        MySqlConnector().start({**BASE, "database.server.id": "-1"})
    assert e.value.name == "database.server.id"


def test_failure_modes_are_read_as_debezium_spells_them() -> None:
    """Implemented since issue 19 (they used to act as fail): tests/mysql/test_debezium_keys.py drives them."""
    c = MySqlConnectorConfig({**BASE, "event.deserialization.failure.handling.mode": "SKIP"})
    assert (c.deserialization_failure, c.processing_failure, c.inconsistent_schema) == ("skip", "fail", "fail")

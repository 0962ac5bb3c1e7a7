"""`snapshot.mode=configuration_based` and `custom` mean the same on both connectors (issue 31, item 6).

MySQL refused `configuration_based` while PostgreSQL ran it as `initial` whatever its keys said.
Both now resolve it in cdc_debezium.snapshot_modes: the one combination a built-in mode equals
(`snapshot.data` and `start.stream` true, no snapshot on errors) runs as `always`, as Debezium's
ConfigurationBasedSnapshotter snapshots at every start; every other one, and `custom`, is
refused on `snapshot.mode` with the reason, by both connectors with the same words.
"""

from __future__ import annotations

import itertools
import logging

import pytest

from cdc.api import ConfigException
from cdc_debezium import snapshot_modes
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.config import validate as mysql_validate
from cdc_postgres.config import PostgresConnectorConfig
from cdc_postgres.config import validate as postgres_validate

MYSQL = {
    "database.hostname": "db",
    "database.user": "u",
    "database.password": "p",
    "database.server.id": "5400",
    "topic.prefix": "a",
}
POSTGRES = {"database.hostname": "db", "database.user": "u", "database.dbname": "d", "topic.prefix": "a"}
COMBINATIONS = list(itertools.product(["true", "false", "TRUE", None], repeat=5))[::7]  # a spread of the 1024


def _with(flags: tuple[str | None, ...], mode: str = "configuration_based") -> dict[str, str]:
    props = {"snapshot.mode": mode}
    props |= {key: value for key, value in zip(snapshot_modes.KEYS, flags, strict=True) if value is not None}
    return props


def _outcome(make, base: dict[str, str], props: dict[str, str]) -> tuple[str, str]:
    try:
        return "mode", make({**base, **props}).snapshot_mode
    except ConfigException as e:
        assert e.name == "snapshot.mode"
        return "refused", str(e)


@pytest.mark.parametrize("flags", COMBINATIONS)
def test_both_connectors_resolve_every_combination_alike(flags: tuple[str | None, ...]) -> None:
    props = _with(flags)
    mysql, postgres = _outcome(MySqlConnectorConfig, MYSQL, props), _outcome(PostgresConnectorConfig, POSTGRES, props)
    assert mysql == postgres
    data, _, stream, on_schema, on_data = (str(f).lower() == "true" for f in flags)
    if data and stream and not (on_schema or on_data):
        assert mysql == ("mode", "always")
    else:
        assert mysql[0] == "refused" and "nearest built-in mode" in mysql[1] and "\n" not in mysql[1]


def test_validation_reports_the_refusal_on_snapshot_mode_in_both() -> None:
    props = _with(("false", "true", "true", "false", "false"))
    for validate, base in ((mysql_validate, MYSQL), (postgres_validate, POSTGRES)):
        errors = {v.name: v.errors for v in validate({**base, **props}) if v.errors}
        assert list(errors) == ["snapshot.mode"] and "no_data" in errors["snapshot.mode"][0]


def test_custom_is_refused_by_both_with_the_same_reason() -> None:
    mysql = _outcome(MySqlConnectorConfig, MYSQL, {"snapshot.mode": "custom"})
    postgres = _outcome(PostgresConnectorConfig, POSTGRES, {"snapshot.mode": "custom"})
    assert mysql == postgres and mysql[0] == "refused" and "Java Snapshotter" in mysql[1]


def test_the_keys_are_not_called_unsupported_when_configuration_based_reads_them(caplog) -> None:
    props = _with(("true", "true", "true", "false", "false"))
    with caplog.at_level(logging.WARNING):
        MySqlConnectorConfig({**MYSQL, **props})
        PostgresConnectorConfig({**POSTGRES, **props})
    assert not [r for r in caplog.records if "configuration.based" in r.getMessage()]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        PostgresConnectorConfig({**POSTGRES, "snapshot.mode.configuration.based.snapshot.data": "true"})
    assert any("configuration.based.snapshot.data" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("mode", ["extended", "EXTENDED", "minimal_percona", "custom"])
def test_mysql_locking_modes_it_does_not_have_are_refused_with_the_reason(mode: str) -> None:
    errors = {v.name: v.errors for v in mysql_validate({**MYSQL, "snapshot.locking.mode": mode}) if v.errors}
    assert list(errors) == ["snapshot.locking.mode"]
    message = errors["snapshot.locking.mode"][0]
    assert f"snapshot.locking.mode={mode.lower()} is not supported: it " in message and "Use minimal" in message

"""The runtime's side of `Connector.validate_connection` (issue 31, item 8), with a test connector.

Debezium's `validate` checks the live connection only once every key is valid, and Kafka
Connect's herder then refuses the create with 400. Here: a REST-submitted config (untrusted)
passes the check, and its error refuses the create or update and shows on the validate
endpoint, secrets hidden; a config with a key error is not checked; the operator's own files
(trusted) start without it. The real connectors' checks run against servers in
tests/rest/test_connection_validation.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from cdc.api import ConfigDef, ConfigType, ConfigValue, Importance
from cdc.api.errors import ConfigException
from cdc.runtime.standalone import StandaloneHerder
from tests.rest.conftest import make_worker
from tests.runtime.connectors import GeneratorSource

CHECKED_DEF = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH)
    .define("count", ConfigType.INT, 0)
    .define("db.password", ConfigType.PASSWORD, importance=Importance.HIGH)
)
GOOD = "the-good-one"


class CheckedSource(GeneratorSource):
    """Refuses a `db.password` other than GOOD, quoting it as a careless driver message might."""

    checked: list[str] = []

    def config(self) -> ConfigDef:
        return CHECKED_DEF

    def validate_connection(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        password = connector_configs["db.password"]
        CheckedSource.checked.append(connector_configs["name"])
        if password == GOOD:
            return []
        return [ConfigValue("db.password", password, errors=[f"login refused (password {password!r})"])]


def _config(name: str = "src", **extra: str) -> dict[str, str]:
    return {"name": name, "connector.class": "CheckedSource", "topic": "t", "db.password": GOOD, **extra}


def _errors(infos: dict[str, Any]) -> dict[str, list[str]]:
    return {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"] if c["value"] and c["value"]["errors"]}


@pytest.fixture
def checked(tmp_path: Path) -> Iterator[StandaloneHerder]:
    """A started standalone herder (no REST server) with CheckedSource installed."""
    worker = make_worker(tmp_path)
    worker.validator.registry.add(CheckedSource, "1.0", "test")
    CheckedSource.checked = []
    h = StandaloneHerder(worker)
    h.start()
    yield h
    h.stop()


def test_a_refused_connection_refuses_the_create_with_kafkas_message_and_hides_the_secret(
    checked: StandaloneHerder,
) -> None:
    with pytest.raises(ConfigException) as refused:
        checked.put_connector_config(_config(**{"db.password": "s3cr3t-value"}))
    assert str(refused.value) == (
        "Connector configuration is invalid and contains the following 1 error(s):\n"
        "login refused (password '[hidden]')\n"
        "You can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`"
    )
    assert checked.connector_names() == []
    infos = checked.validate_connector_config(_config(**{"db.password": "s3cr3t-value"}))
    assert infos["error_count"] == 1 and _errors(infos) == {"db.password": ["login refused (password '[hidden]')"]}
    assert "s3cr3t-value" not in str(infos)


def test_a_good_connection_creates_and_a_refused_one_cannot_replace_it(checked: StandaloneHerder) -> None:
    assert checked.put_connector_config(_config()) is True
    with pytest.raises(ConfigException, match="login refused"):
        checked.put_connector_config(_config(topic="t2", **{"db.password": "wrong"}))
    assert checked.connector_config("src")["topic"] == "t"
    assert checked.validate_connector_config(_config())["error_count"] == 0
    assert CheckedSource.checked == ["src", "src", "src"]


def test_a_config_with_a_key_error_is_not_checked_against_the_live_system(checked: StandaloneHerder) -> None:
    infos = checked.validate_connector_config(_config(count="many", **{"db.password": "wrong"}))
    assert list(_errors(infos)) == ["count"]
    assert CheckedSource.checked == []


def test_the_operators_own_config_starts_without_the_check(checked: StandaloneHerder) -> None:
    assert checked.put_connector_config(_config(**{"db.password": "wrong"}), trusted=True) is True
    assert checked.connector_names() == ["src"] and CheckedSource.checked == []

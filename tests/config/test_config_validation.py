"""The validate endpoint's JSON shape (Kafka's ConfigInfos) and one-line error summaries."""

from __future__ import annotations

import json

from cdc.api.config import ConfigDef, ConfigType, ConfigValue, Importance, Password, Range, ValidString, Width
from cdc.config import (
    config_groups,
    config_infos,
    error_lines,
    first_error_line,
    invalid_config_message,
    validate_config,
)

CONNECTOR = "io.debezium.connector.mysql.MySqlConnector"


def make_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(
            "database.hostname",
            ConfigType.STRING,
            importance=Importance.HIGH,
            documentation="Resolvable hostname or IP address of the database server.",
            group="Connection",
            order_in_group=1,
            width=Width.MEDIUM,
            display_name="Hostname",
        )
        .define(
            "database.password",
            ConfigType.PASSWORD,
            importance=Importance.HIGH,
            documentation="Password of the database user.",
            group="Connection",
            order_in_group=2,
            width=Width.SHORT,
            display_name="Password",
        )
        .define("tasks.max", ConfigType.INT, 1, Range.at_least(1), Importance.HIGH, "Maximum number of tasks.")
        .define(
            "snapshot.mode",
            ConfigType.STRING,
            "initial",
            ValidString.in_("initial", "never", "when_needed"),
            Importance.LOW,
            "When to snapshot.",
            group="Snapshot",
            dependents=["snapshot.locking.mode"],
        )
        .define("table.include.list", ConfigType.LIST, "", importance=Importance.MEDIUM, group="Filters")
        .define("secret.default", ConfigType.PASSWORD, "changeme", importance=Importance.LOW)
    )


def test_shape_matches_kafka() -> None:
    props = {"database.hostname": "db", "database.password": "s3cr3t", "tasks.max": "abc"}
    infos = validate_config(CONNECTOR, make_def(), props)
    assert list(infos) == ["name", "error_count", "groups", "configs"]
    assert infos["name"] == CONNECTOR
    assert infos["error_count"] == 1
    assert infos["groups"] == ["Connection", "Snapshot", "Filters"]
    first = infos["configs"][0]
    assert first == {
        "definition": {
            "name": "database.hostname",
            "type": "STRING",
            "required": True,
            "default_value": None,
            "importance": "HIGH",
            "documentation": "Resolvable hostname or IP address of the database server.",
            "group": "Connection",
            "width": "MEDIUM",
            "display_name": "Hostname",
            "dependents": [],
            "order": 1,
        },
        "value": {
            "name": "database.hostname",
            "value": "db",
            "recommended_values": [],
            "errors": [],
            "visible": True,
        },
    }
    by_name = {c["definition"]["name"]: c for c in infos["configs"]}
    tasks = by_name["tasks.max"]
    assert tasks["definition"]["default_value"] == "1"
    assert tasks["definition"]["required"] is False
    assert tasks["definition"]["group"] is None
    assert tasks["definition"]["order"] == -1
    assert tasks["definition"]["width"] == "NONE"
    assert tasks["definition"]["display_name"] == "tasks.max"  # Kafka's default display name
    assert tasks["value"]["errors"] == [
        "Invalid value abc for configuration tasks.max: Expected value to be a 32-bit integer"
    ]
    assert by_name["snapshot.mode"]["definition"]["dependents"] == ["snapshot.locking.mode"]
    assert by_name["table.include.list"]["value"]["value"] == ""
    json.dumps(infos)  # JSON-serialisable as is


def test_passwords_are_masked() -> None:
    props = {"database.hostname": "db", "database.password": "s3cr3t"}
    infos = validate_config(CONNECTOR, make_def(), props)
    text = json.dumps(infos)
    assert "s3cr3t" not in text
    assert "changeme" not in text
    by_name = {c["definition"]["name"]: c for c in infos["configs"]}
    assert by_name["database.password"]["value"]["value"] == "[hidden]"
    assert by_name["secret.default"]["definition"]["default_value"] == "[hidden]"
    assert by_name["secret.default"]["value"]["value"] == "[hidden]"


def test_password_objects_masked_even_for_undefined_keys() -> None:
    infos = config_infos(CONNECTOR, ConfigDef(), [ConfigValue("extra.secret", Password("s3cr3t"))])
    assert infos["configs"] == [
        {
            "definition": None,
            "value": {
                "name": "extra.secret",
                "value": "[hidden]",
                "recommended_values": [],
                "errors": [],
                "visible": True,
            },
        }
    ]


def test_masked_keys_hide_provider_values() -> None:
    # Kafka validates the provider-resolved config, so a resolved STRING would be echoed.
    props = {"database.hostname": "secret-host"}
    infos = validate_config(CONNECTOR, make_def(), props, masked_keys={"database.hostname"})
    assert "secret-host" not in json.dumps(infos)


def test_undefined_values_first_and_missing_values_null() -> None:
    config_def = ConfigDef().define("a", ConfigType.STRING, "x").define("b", ConfigType.STRING, "y")
    values = [ConfigValue("b", "1"), ConfigValue("zzz", "v", errors=["Unknown configuration zzz", "second"])]
    infos = config_infos("C", config_def, values)
    assert [(c["definition"] or {}).get("name") for c in infos["configs"]] == [None, "a", "b"]
    assert infos["configs"][0]["value"]["name"] == "zzz"
    assert infos["configs"][1]["value"] is None
    assert infos["error_count"] == 2  # error messages, not keys with errors


def test_recommended_values_as_strings() -> None:
    config_def = ConfigDef().define("n", ConfigType.INT, 1).define("l", ConfigType.LIST, "")
    values = [ConfigValue("n", 3, recommended_values=[1, 2, 3]), ConfigValue("l", ["a"], recommended_values=["a", "b"])]
    by_name = {c["value"]["name"]: c["value"] for c in config_infos("C", config_def, values)["configs"]}
    assert by_name["n"]["recommended_values"] == ["1", "2", "3"]
    assert by_name["l"]["recommended_values"] == ["a", "b"]
    assert by_name["l"]["value"] == "a"


def test_explicit_groups_and_group_order() -> None:
    assert config_groups(make_def()) == ["Connection", "Snapshot", "Filters"]
    infos = config_infos("C", make_def(), [], groups=["Common", "Connection"])
    assert infos["groups"] == ["Common", "Connection"]


def test_first_error_line() -> None:
    props = {"database.hostname": "db", "database.password": "p", "tasks.max": "abc"}
    infos = validate_config(CONNECTOR, make_def(), props)
    assert first_error_line(infos) == (
        "tasks.max: Invalid value abc for configuration tasks.max: Expected value to be a 32-bit integer"
    )


def test_first_error_line_none_when_valid() -> None:
    infos = validate_config(CONNECTOR, make_def(), {"database.hostname": "db", "database.password": "p"})
    assert infos["error_count"] == 0
    assert first_error_line(infos) is None


def test_error_lines_and_kafka_message() -> None:
    infos = validate_config(CONNECTOR, make_def(), {"tasks.max": "0", "snapshot.mode": "sometimes"})
    lines = error_lines(infos)
    assert lines[0] == (
        'database.hostname: Missing required configuration "database.hostname" which has no default value.'
    )
    assert len(lines) == infos["error_count"] == 4
    message = invalid_config_message(infos)
    assert message.startswith("Connector configuration is invalid and contains the following 4 error(s):\n")
    assert message.endswith(
        "\nYou can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`"
    )

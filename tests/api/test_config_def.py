from __future__ import annotations

import pytest

from cdc.api import (
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    Importance,
    Password,
    Range,
    ValidString,
)


def definition() -> ConfigDef:
    return (
        ConfigDef()
        .define("host", ConfigType.STRING, importance=Importance.HIGH, documentation="Host.")
        .define("port", ConfigType.INT, 3306, Range.between(1, 65535), Importance.HIGH, "Port.")
        .define("password", ConfigType.PASSWORD, None, None, Importance.HIGH, "Secret.")
        .define("mode", ConfigType.STRING, "initial", ValidString.in_("initial", "never"))
        .define("tables", ConfigType.LIST, "")
        .define("enabled", ConfigType.BOOLEAN, False)
        .define("ratio", ConfigType.DOUBLE, 0.5)
        .define("big", ConfigType.LONG, 0)
    )


def test_parse_types_and_defaults() -> None:
    parsed = definition().parse(
        {"host": " db ", "password": "s3cret", "tables": "a, b ,c", "enabled": "TRUE", "ratio": "2", "big": "9" * 18}
    )
    assert parsed["host"] == "db"
    assert parsed["port"] == 3306
    assert parsed["tables"] == ["a", "b", "c"]
    assert parsed["enabled"] is True
    assert parsed["ratio"] == 2.0
    assert parsed["big"] == int("9" * 18)
    assert isinstance(parsed["password"], Password) and parsed["password"].value() == "s3cret"


@pytest.mark.parametrize(
    ("props", "key", "text"),
    [
        ({}, "host", 'Missing required configuration "host"'),
        ({"host": "h", "port": "abc"}, "port", "32-bit integer"),
        ({"host": "h", "port": "70000"}, "port", "no more than 65535"),
        ({"host": "h", "mode": "sometimes"}, "mode", "initial, never"),
        ({"host": "h", "enabled": "yes"}, "enabled", "true or false"),
        ({"host": "h", "big": "1e3"}, "big", "64-bit integer"),
    ],
)
def test_errors_name_the_key(props: dict[str, str], key: str, text: str) -> None:
    with pytest.raises(ConfigException) as e:
        definition().parse(props)
    assert e.value.name == key
    assert text in str(e.value) and key in str(e.value)


def test_validate_collects_every_error() -> None:
    values = {v.name: v for v in definition().validate({"port": "x", "mode": "y"})}
    assert values["host"].errors and values["port"].errors and values["mode"].errors
    assert not values["tables"].errors


def test_password_never_shows() -> None:
    secret = Password("hunter2")
    assert "hunter2" not in str(secret) and "hunter2" not in repr(secret)
    assert "hunter2" not in repr({"p": secret})
    masked = definition().mask({"password": "hunter2", "host": "h"})
    assert masked == {"password": "[hidden]", "host": "h"}
    cfg = AbstractConfig(definition(), {"host": "h", "password": "hunter2"})
    assert "hunter2" not in repr(cfg)
    assert definition().convert_to_string("password", secret) == "[hidden]"


def test_invalid_default_is_rejected_at_definition() -> None:
    with pytest.raises(ConfigException, match="at least"):
        ConfigDef().define("n", ConfigType.INT, -1, Range.at_least(0))


def test_prefixed_originals() -> None:
    cfg = AbstractConfig(ConfigDef(), {"value.converter.schemas.enable": "false", "other": "1"})
    assert cfg.originals_with_prefix("value.converter.") == {"schemas.enable": "false"}

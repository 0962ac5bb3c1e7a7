"""Worker and connector files in Kafka Connect's standalone formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc.config import (
    ConfigFileError,
    load_connector_config,
    load_connector_request,
    load_worker_config,
)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_properties_connector(tmp_path: Path) -> None:
    path = write(tmp_path, "mysql.properties", "name=inventory\nconnector.class=MySql\ntasks.max=1\n")
    assert load_connector_config(path) == {"name": "inventory", "connector.class": "MySql", "tasks.max": "1"}


def test_rest_create_body(tmp_path: Path) -> None:
    body = {"name": "inventory", "config": {"connector.class": "MySql", "tasks.max": "1"}}
    path = write(tmp_path, "inventory.json", json.dumps(body))
    assert load_connector_config(path) == {"connector.class": "MySql", "tasks.max": "1", "name": "inventory"}


def test_rest_create_body_with_initial_state(tmp_path: Path) -> None:
    body = {"name": "inv", "config": {"connector.class": "X"}, "initial_state": "PAUSED"}
    request = load_connector_request(write(tmp_path, "inv.json", json.dumps(body)))
    assert request.name == "inv"
    assert request.initial_state == "PAUSED"
    assert request.config == {"connector.class": "X", "name": "inv"}


def test_rest_get_output_loads(tmp_path: Path) -> None:
    # GET /connectors/<name> adds "tasks" and "type"; Kafka ignores unknown fields, so do we.
    body = {"name": "inv", "config": {"connector.class": "X", "name": "inv"}, "tasks": [], "type": "source"}
    assert load_connector_config(write(tmp_path, "inv.json", json.dumps(body))) == {
        "connector.class": "X",
        "name": "inv",
    }


def test_create_body_name_only_in_config(tmp_path: Path) -> None:
    body = {"config": {"connector.class": "X", "name": "inv"}}
    assert load_connector_config(write(tmp_path, "c.json", json.dumps(body)))["name"] == "inv"


def test_create_body_name_mismatch(tmp_path: Path) -> None:
    body = {"name": "a", "config": {"name": "b"}}
    with pytest.raises(ConfigFileError, match="make them equal"):
        load_connector_config(write(tmp_path, "c.json", json.dumps(body)))


def test_bad_initial_state(tmp_path: Path) -> None:
    body = {"name": "a", "config": {}, "initial_state": "running"}
    with pytest.raises(ConfigFileError, match="RUNNING, PAUSED, STOPPED"):
        load_connector_request(write(tmp_path, "c.json", json.dumps(body)))


def test_flat_json_scalars_become_strings(tmp_path: Path) -> None:
    text = '{"name": "inv", "tasks.max": 1, "snapshot.fetch.size": 1e3, "ratio": 0.50, "enabled": true}'
    assert load_connector_config(write(tmp_path, "c.json", text)) == {
        "name": "inv",
        "tasks.max": "1",
        "snapshot.fetch.size": "1e3",  # the JSON text, as Jackson's string coercion gives it
        "ratio": "0.50",
        "enabled": "true",
    }


def test_json_detected_without_json_suffix(tmp_path: Path) -> None:
    path = write(tmp_path, "inventory.conf", '\n  {"name": "inv", "a": "b"}')
    assert load_connector_config(path) == {"name": "inv", "a": "b"}


@pytest.mark.parametrize(
    ("body", "key", "hint"),
    [
        ({"name": "n", "table.include.list": ["a", "b"]}, "table.include.list", "comma-separated"),
        ({"name": "n", "config": {"x": {"y": 1}}}, "x", "flat dotted keys"),
        ({"name": "n", "database.password": None}, "database.password", "null"),
    ],
)
def test_non_scalar_values_name_the_key(tmp_path: Path, body: dict[str, object], key: str, hint: str) -> None:
    with pytest.raises(ConfigFileError) as info:
        load_connector_config(write(tmp_path, "c.json", json.dumps(body)))
    assert info.value.name == key
    assert key in str(info.value)
    assert hint in str(info.value)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", '{\n  "name": "inv",\n  "tasks.max": 1,\n}\n')
    with pytest.raises(ConfigFileError) as info:
        load_connector_config(path)
    e = info.value
    assert (e.line_number, e.column) == (4, 1)
    assert str(e).startswith(f"{path}:4:1: invalid JSON: ")
    assert "\n" not in str(e)


def test_json_must_be_an_object(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="JSON object"):
        load_connector_config(write(tmp_path, "c.json", '["name", "x"]'))


@pytest.mark.parametrize(
    ("name", "text"),
    [("c.properties", "connector.class=X\n"), ("c.json", '{"connector.class": "X"}'), ("d.json", '{"config": {}}')],
)
def test_connector_without_name(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(ConfigFileError, match="has no name"):
        load_connector_config(write(tmp_path, name, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError) as info:
        load_connector_config(tmp_path / "nope.properties")
    assert "no such file" in str(info.value)
    assert str(tmp_path / "nope.properties") in str(info.value)


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="is a directory"):
        load_worker_config(tmp_path)


def test_worker_config_properties_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "worker.properties", "bootstrap.servers=x\nplugin.path=C:\\users\\me\n")
    with pytest.raises(ConfigFileError) as info:
        load_worker_config(path)
    assert str(info.value).startswith(f"{path}:2: malformed \\uXXXX escape")


def test_worker_config_utf8_and_bom(tmp_path: Path) -> None:
    path = write(tmp_path, "w.properties", "\ufeffname=caf\u00e9\n".encode())
    assert load_worker_config(path) == {"name": "caf\u00e9"}


def test_worker_config_latin1_fallback(tmp_path: Path) -> None:
    path = write(tmp_path, "w.properties", "name=caf\u00e9\n".encode("iso-8859-1"))
    assert load_worker_config(path) == {"name": "caf\u00e9"}


def test_worker_config_keeps_references(tmp_path: Path) -> None:
    path = write(tmp_path, "w.properties", "sasl.password=${env:KAFKA_PASSWORD}\n")
    assert load_worker_config(path) == {"sasl.password": "${env:KAFKA_PASSWORD}"}

"""Loading worker and connector config files in Kafka Connect's standalone formats.

`connect-standalone worker.properties conn.properties|conn.json ...` accepts, for each
connector (ConnectStandalone.parseConnectorConfigurationFile, KIP-980):

- a `.properties` file;
- the REST create body `{"name": ..., "config": {...}, "initial_state": ...}`, whose
  `name` is put into the config as `name`;
- a flat JSON object of config keys.

Kafka tries JSON first and silently falls back to `.properties` when the JSON does not
parse, so a JSON typo turns into nonsense keys. Here a file is JSON when it is named
`*.json` or starts with `{`, and a JSON syntax error is reported with its line and column.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc.config.properties import ConfigFileError, parse_properties

__all__ = [
    "ConnectorRequest",
    "load_connector_config",
    "load_connector_request",
    "load_properties_file",
    "load_worker_config",
    "read_config_text",
]

INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")


@dataclass(frozen=True)
class ConnectorRequest:
    """What a connector file declares: Kafka's CreateConnectorRequest."""

    name: str
    config: dict[str, str]
    initial_state: str | None = None


def read_config_text(path: str | os.PathLike[str]) -> str:
    """The file's text: UTF-8 (a BOM is dropped), or ISO-8859-1 if it is not valid UTF-8.

    Java's `Properties.load(InputStream)` reads ISO-8859-1, and Kafka loads worker files
    that way; the JDK's own resource bundles read UTF-8 and fall back to ISO-8859-1. We do
    the latter so a UTF-8 file means what its author sees. A BOM would otherwise become
    part of the first key (Java keeps it) and that key would silently never match.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ConfigFileError(str(path), None, f"no such file (looked for {p.absolute()}); check the path") from None
    except IsADirectoryError:
        raise ConfigFileError(str(path), None, "is a directory, not a config file; name the file inside it") from None
    except OSError as e:
        raise ConfigFileError(str(path), None, f"cannot be read: {e.strerror or e}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("iso-8859-1")


def load_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """A `.properties` file as a dict, read as `java.util.Properties.load` would."""
    return parse_properties(read_config_text(path), str(path))


def load_worker_config(path: str | os.PathLike[str]) -> dict[str, str]:
    """A worker `.properties` file. `${provider:...}` references are left for ConfigTransformer."""
    return load_properties_file(path)


def load_connector_config(path: str | os.PathLike[str]) -> dict[str, str]:
    """A connector file (`.properties`, REST create body JSON, or flat JSON) as a config dict.

    The result always has `name`; a file that gives no name is an error.
    """
    return load_connector_request(path).config


def load_connector_request(path: str | os.PathLike[str]) -> ConnectorRequest:
    """A connector file with its `initial_state` (only the REST create body can carry one)."""
    source = str(path)
    text = read_config_text(path)
    if Path(path).suffix.lower() == ".json" or text.lstrip().startswith("{"):
        return _from_json(source, text)
    config = parse_properties(text, source)
    name = config.get("name")
    if not name:
        raise ConfigFileError(source, None, "has no name; add a line name=<connector name>")
    return ConnectorRequest(name, config)


class _JsonNumber(str):
    """A JSON number's source text, so `1e3` stays "1e3" (Jackson's string coercion keeps the text)."""


def _from_json(source: str, text: str) -> ConnectorRequest:
    try:
        doc = json.loads(text, parse_int=_JsonNumber, parse_float=_JsonNumber)
    except json.JSONDecodeError as e:
        raise ConfigFileError(source, e.lineno, f"invalid JSON: {e.msg}", column=e.colno) from None
    if not isinstance(doc, dict):
        raise ConfigFileError(
            source, None, 'must hold a JSON object: {"name": ..., "config": {...}} or {"key": "value", ...}'
        )
    if isinstance(doc.get("config"), dict):
        # The REST create body. Other top-level fields are ignored, as Kafka does, so the
        # output of GET /connectors/<name> (which adds "tasks" and "type") loads as well.
        config = _string_values(source, doc["config"], "config.")
        top_name = doc.get("name")
        if top_name is not None and not isinstance(top_name, str):
            raise ConfigFileError(source, None, '"name" must be a string', name="name")
        if top_name is not None and "name" in config and config["name"] != top_name:
            raise ConfigFileError(
                source,
                None,
                f'"name" is {top_name!r} but config.name is {config["name"]!r}; make them equal or drop config.name',
                name="name",
            )
        name = top_name if top_name is not None else config.get("name")
        if not name:
            raise ConfigFileError(source, None, 'has no name; add "name": "<connector name>" next to "config"')
        config["name"] = name
        state = doc.get("initial_state")
        if state is not None and state not in INITIAL_STATES:
            raise ConfigFileError(
                source,
                None,
                f'"initial_state" is {state!r}; use one of {", ".join(INITIAL_STATES)} or leave it out',
                name="initial_state",
            )
        return ConnectorRequest(name, config, state)
    config = _string_values(source, doc, "")
    name = config.get("name")
    if not name:
        raise ConfigFileError(source, None, 'has no name; add "name": "<connector name>"')
    return ConnectorRequest(name, config)


def _string_values(source: str, obj: dict[str, Any], where: str) -> dict[str, str]:
    """Every value as the string Kafka's `Map<String, String>` binding would give it."""
    out: dict[str, str] = {}
    for key, value in obj.items():
        if isinstance(value, str):  # also _JsonNumber: its text, as written
            out[key] = str(value)
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif value is None:
            raise ConfigFileError(
                source, None, f"{where}{key} is null; give it a string value or remove the key", name=key
            )
        elif isinstance(value, list):
            raise ConfigFileError(
                source,
                None,
                f'{where}{key} is a JSON array; write a list as one comma-separated string, e.g. "a,b"',
                name=key,
            )
        else:
            raise ConfigFileError(
                source,
                None,
                f"{where}{key} is a JSON object; config values are strings, so write nested settings "
                f'as flat dotted keys, e.g. "{key}.field": "..."',
                name=key,
            )
    return out

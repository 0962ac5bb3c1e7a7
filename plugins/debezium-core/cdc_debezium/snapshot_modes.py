"""Debezium's pluggable snapshot modes (`custom`, `configuration_based`) as a built-in mode, or a refusal.

Both connectors resolve `snapshot.mode` here, so a value means the same on MySQL/MariaDB and
PostgreSQL. Debezium's `configuration_based` mode reads five keys
(`snapshot.mode.configuration.based.*`) and asks them at every start, whatever the stored
offset says (its `ConfigurationBasedSnapshotter` returns `snapshot.data` for
`shouldSnapshotData(offsetExists, …)`). The only combination a built-in mode behaves exactly
like is `snapshot.data=true` with `start.stream=true` and no snapshot on errors: `always`
(a data snapshot reads the schema too). Every other combination is refused with the built-in
mode closest to it, rather than run as something it did not ask for. `custom` loads a Java
`Snapshotter` by name, which cannot run here: refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api import ConfigException

SNAPSHOT_MODE = "snapshot.mode"
CONFIGURATION_BASED = "configuration_based"
CUSTOM = "custom"
_PREFIX = "snapshot.mode.configuration.based."
DATA = _PREFIX + "snapshot.data"
SCHEMA = _PREFIX + "snapshot.schema"
STREAM = _PREFIX + "start.stream"
ON_SCHEMA_ERROR = _PREFIX + "snapshot.on.schema.error"
ON_DATA_ERROR = _PREFIX + "snapshot.on.data.error"
KEYS = (DATA, SCHEMA, STREAM, ON_SCHEMA_ERROR, ON_DATA_ERROR)


def _flag(props: Mapping[str, Any], key: str) -> bool:
    """Debezium's boolean: `true` in any case is true; anything else (and no value) is false."""
    return str(props.get(key, "false")).strip().lower() == "true"


def resolve(props: Mapping[str, Any]) -> str | None:
    """The built-in mode that does what `snapshot.mode=configuration_based` asks, None for any other
    mode (left to the connector), or ConfigException on `snapshot.mode` saying why and what to set."""
    raw = props.get(SNAPSHOT_MODE)
    mode = str(raw).strip().lower() if raw is not None else ""
    if mode == CUSTOM:
        raise ConfigException(
            "snapshot.mode=custom loads a Java Snapshotter (snapshot.mode.custom.name), which cannot run here; "
            "choose a built-in snapshot.mode (initial, initial_only, no_data, when_needed, always)",
            SNAPSHOT_MODE,
            raw,
        )
    if mode != CONFIGURATION_BASED:
        return None
    data, stream = _flag(props, DATA), _flag(props, STREAM)
    on_errors = [k for k in (ON_SCHEMA_ERROR, ON_DATA_ERROR) if _flag(props, k)]
    if data and stream and not on_errors:
        return "always"
    if on_errors:
        nearest = "when_needed (a snapshot when the stored position can no longer be read)"
    elif data:
        nearest = "initial_only (a snapshot without streaming, on the first start only)"
    elif stream:
        nearest = "no_data (the schema, then streaming, without the existing rows; on the first start only)"
    else:
        nearest = "none: it would neither snapshot nor stream"
    settings = ", ".join(f"{k.removeprefix(_PREFIX)}={str(_flag(props, k)).lower()}" for k in KEYS)
    raise ConfigException(
        f"snapshot.mode=configuration_based with {settings} asks for a snapshot decision at every start that no "
        f"built-in mode makes; only snapshot.data=true with start.stream=true (and no snapshot on errors) runs, as "
        f"snapshot.mode=always. The nearest built-in mode: {nearest}",
        SNAPSHOT_MODE,
        raw,
    )


def applies(props: Mapping[str, Any], key: str) -> bool:
    """Is `key` one of the configuration_based keys, read because snapshot.mode=configuration_based?
    (A connector's warning about keys it does not implement leaves these out then.)"""
    return key in KEYS and str(props.get(SNAPSHOT_MODE, "")).strip().lower() == CONFIGURATION_BASED

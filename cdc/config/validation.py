"""The JSON that Kafka Connect's `PUT /connector-plugins/{type}/config/validate` returns.

Ported from `AbstractHerder.generateResult`, `convertConfigKey` and `convertConfigValue`
and the entities `ConfigInfos`, `ConfigInfo`, `ConfigKeyInfo` and `ConfigValueInfo`, so
UIs and scripts written against Kafka Connect read our output unchanged::

    {"name": <connector class>, "error_count": N, "groups": [...],
     "configs": [{"definition": {...} | null, "value": {...} | null}, ...]}

Note the field names that differ from the Java ones: `order` (orderInGroup),
`default_value`, `display_name`, `recommended_values`, `error_count`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from cdc.api.config import ConfigDef, ConfigKey, ConfigType, ConfigValue, Password, convert_to_string
from cdc.api.sensitive import is_sensitive

__all__ = [
    "config_groups",
    "config_infos",
    "config_key_info",
    "config_value_info",
    "error_lines",
    "first_error_line",
    "invalid_config_message",
    "validate_config",
]


def config_key_info(key: ConfigKey) -> dict[str, Any]:
    """A ConfigKeyInfo: a key's definition, its default shown as a string (passwords masked)."""
    return {
        "name": key.name,
        "type": key.type.name,
        "required": not key.has_default,
        "default_value": convert_to_string(key.default_value, key.type) if key.has_default else None,
        "importance": key.importance.name,
        "documentation": key.documentation,
        "group": key.group,
        "width": key.width.name,
        "display_name": key.display_name,
        "dependents": list(key.dependents),
        "order": key.order_in_group,
    }


def config_value_info(value: ConfigValue, type: ConfigType | None, *, masked: bool = False) -> dict[str, Any]:
    """A ConfigValueInfo. PASSWORD values, Password objects, values of keys shaped like secrets
    (cdc.api.sensitive) and `masked` values show as `[hidden]`."""
    shown = convert_to_string(value.value, type)
    if (masked or is_sensitive(value.name)) and shown is not None:
        shown = Password.HIDDEN
    # Kafka renders a LIST key's recommended values one element at a time, as STRINGs.
    element_type = ConfigType.STRING if type is ConfigType.LIST else type
    return {
        "name": value.name,
        "value": shown,
        "recommended_values": [convert_to_string(v, element_type) for v in value.recommended_values],
        "errors": list(value.errors),
        "visible": value.visible,
    }


def config_groups(config_def: ConfigDef | Mapping[str, ConfigKey]) -> list[str]:
    """Groups in the order their first key was defined (Kafka's ConfigDef.groups())."""
    keys = config_def.config_keys if isinstance(config_def, ConfigDef) else config_def
    return list(dict.fromkeys(k.group for k in keys.values() if k.group is not None))


def config_infos(
    connector_class: str,
    config_def: ConfigDef | Mapping[str, ConfigKey],
    config_values: Iterable[ConfigValue],
    *,
    groups: Sequence[str] | None = None,
    masked_keys: Collection[str] = (),
) -> dict[str, Any]:
    """Kafka's `generateResult`: the validate endpoint's body.

    Values for undefined keys come first with a null definition; then every defined key
    in definition order, with a null value if none was validated. `error_count` is the
    number of error messages, not of keys with errors. `masked_keys` are shown as
    `[hidden]` whatever their type: pass `TransformResult.resolved_keys`, because Kafka
    validates the provider-resolved config and would otherwise echo the secrets.
    """
    keys = config_def.config_keys if isinstance(config_def, ConfigDef) else dict(config_def)
    if groups is None:
        groups = config_groups(keys)
    by_name: dict[str, ConfigValue] = {}
    configs: list[dict[str, Any]] = []
    error_count = 0
    for cv in config_values:
        by_name[cv.name] = cv
        if cv.name not in keys:
            configs.append({"definition": None, "value": config_value_info(cv, None, masked=cv.name in masked_keys)})
            error_count += len(cv.errors)
    for name, key in keys.items():
        value_info = None
        if name in by_name:
            cv = by_name[name]
            value_info = config_value_info(cv, key.type, masked=name in masked_keys)
            error_count += len(cv.errors)
        configs.append({"definition": config_key_info(key), "value": value_info})
    return {"name": connector_class, "error_count": error_count, "groups": list(groups), "configs": configs}


def validate_config(
    connector_class: str,
    config_def: ConfigDef,
    props: Mapping[str, Any],
    *,
    masked_keys: Collection[str] = (),
) -> dict[str, Any]:
    """Validate `props` against `config_def` and return the endpoint's body."""
    return config_infos(connector_class, config_def, config_def.validate(props), masked_keys=masked_keys)


def error_lines(infos: Mapping[str, Any]) -> list[str]:
    """Every error as `key: message`, in the order of `configs`."""
    lines: list[str] = []
    for info in infos.get("configs", []):
        value = info.get("value")
        if value:
            lines.extend(f"{value['name']}: {error}" for error in value.get("errors") or [])
    return lines


def first_error_line(infos: Mapping[str, Any]) -> str | None:
    """The first error as one line for a CLI, e.g.
    `tasks.max: Invalid value abc for configuration tasks.max: Expected value to be a 32-bit integer`;
    None when the config is valid."""
    lines = error_lines(infos)
    return lines[0] if lines else None


def invalid_config_message(infos: Mapping[str, Any]) -> str:
    """The 400 message Kafka's herder gives when creating a connector with an invalid config."""
    errors = [e for info in infos.get("configs", []) if info.get("value") for e in info["value"].get("errors") or []]
    count = infos.get("error_count", len(errors))
    return (
        f"Connector configuration is invalid and contains the following {count} error(s):\n"
        + "".join(e + "\n" for e in errors)
        + "You can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`"
    )

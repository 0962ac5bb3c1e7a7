"""Connector config validation: common keys, the connector's own ConfigDef and every SMT's keys.

Shared by the worker (before starting a connector), the REST validate endpoint and
`cdc validate` for job files; it needs only the plugin registry.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from cdc.api.config import ConfigDef, ConfigType, ConfigValue
from cdc.api.connector import Connector
from cdc.api.errors import ConfigException
from cdc.api.sensitive import secret_values
from cdc.api.sink import SinkConnector
from cdc.api.source import SourceConnector
from cdc.config.validation import config_infos
from cdc.runtime.client_overrides import override_errors
from cdc.runtime.connector_config import SINK_CONFIG_DEF, SOURCE_CONFIG_DEF
from cdc.runtime.plugins import CONNECTOR_KINDS, PluginKind, PluginRegistry
from cdc.runtime.traces import redact
from cdc.runtime.unknown_keys import UnknownKey, unknown_connector_keys
from cdc.transforms.chain import transformation_config_def, validate_transformations


def name_error(name: str) -> str | None:
    """Kafka's NonEmptyStringWithoutControlChars on `name` (Java's Character.isISOControl):
    a connector name must fit a URL, a header and a log line."""
    controls = [str(ord(c)) for c in name if ord(c) <= 0x1F or 0x7F <= ord(c) <= 0x9F]
    if not controls:
        return None
    return (
        f"Invalid value {name} for configuration name: String may not contain control sequences "
        f"but had the following ASCII chars: {', '.join(controls)}"
    )


def _merge(values: dict[str, ConfigValue], more: Iterable[ConfigValue]) -> None:
    """Add `more`'s results to `values` (by key name), each error once."""
    for v in more:
        if v.name in values:
            values[v.name].errors.extend(e for e in v.errors if e not in values[v.name].errors)
        else:
            values[v.name] = v


class ConnectorValidator:
    def __init__(self, registry: PluginRegistry, override_policy: str = "All") -> None:
        self.registry = registry
        self.override_policy = override_policy  # the worker's connector.client.config.override.policy

    def connector_class(self, props: Mapping[str, str]) -> type[Connector]:
        name = props.get("connector.class")
        if not name:
            raise ConfigException(
                'Missing required configuration "connector.class" which has no default value.', "connector.class"
            )
        return self.registry.resolve(name, CONNECTOR_KINDS, "connector.class").cls

    def validate(
        self, props: Mapping[str, str], secret_keys: Collection[str] = (), *, connect: bool = False
    ) -> list[ConfigValue]:
        """Every key's result: common keys, the connector's own keys, and each SMT's keys.

        `connect`: when every key is valid, also the connector's check against the live system
        (`Connector.validate_connection`), as Debezium's `validate` runs `validateConnection` only
        on a config without errors. Off for offline checks (`cdc validate --offline`, a worker's
        own files before it starts).

        Error messages never quote a secret: values of PASSWORD keys, of keys shaped like secrets
        (cdc.api.sensitive) and of `secret_keys` (e.g. provider-resolved ones) show as `[hidden]`.
        """
        values = self._validate(props)
        if connect and not any(v.errors for v in values):
            by_name = {v.name: v for v in values}
            _merge(by_name, self.connector_class(props)().validate_connection(props))
            values = list(by_name.values())
        secrets = self.secret_values(props, secret_keys)
        if secrets:
            for v in values:
                v.errors = [redact(e, secrets) for e in v.errors]
        return values

    def _validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        cls = self.connector_class(props)
        common = SOURCE_CONFIG_DEF if issubclass(cls, SourceConnector) else SINK_CONFIG_DEF
        values = {v.name: v for v in common.validate(props)}
        if issubclass(cls, SinkConnector):
            topics = (props.get("topics") or "").strip()
            regex = (props.get("topics.regex") or "").strip()
            if bool(topics) == bool(regex):
                values["topics"].add_error_message(
                    "Must configure exactly one of topics or topics.regex"
                    + (" (both are set)" if topics else " (neither is set)")
                )
        self._check_name(props, values)
        self._check_converters(props, values)
        for key, error in override_errors(self.override_policy, props).items():
            values.setdefault(key, ConfigValue(key, props[key])).add_error_message(error)
        _merge(values, [*cls().validate(props), *validate_transformations(props, self.resolve_for_chain)])
        return list(values.values())

    def validate_infos(
        self, props: Mapping[str, str], masked_keys: Iterable[str] = (), *, connect: bool = False
    ) -> dict[str, Any]:
        """The body Kafka Connect's `PUT /connector-plugins/{type}/config/validate` returns, plus
        `warnings`: one `{"name", "message", "suggestion"}` per unknown key (see `unknown_keys`).

        Kafka's fields keep their shape and meaning (`error_count` counts errors only), so clients
        written for Kafka Connect read the body unchanged; `warnings` is a cdc extension.
        `connect`: as for `validate`."""
        cls = self.connector_class(props)
        masked = set(masked_keys)
        definition = self.definition(props)
        values = self.validate(props, masked, connect=connect)
        infos = config_infos(f"{cls.__module__}.{cls.__qualname__}", definition, values, masked_keys=masked)
        infos["warnings"] = [u.as_json() for u in self.unknown_keys(props, definition, values)]
        return infos

    def definition(self, props: Mapping[str, str]) -> ConfigDef:
        """The common connector keys, the connector's own and every listed SMT's, prefixed."""
        cls = self.connector_class(props)
        common = SOURCE_CONFIG_DEF if issubclass(cls, SourceConnector) else SINK_CONFIG_DEF
        return transformation_config_def(props, self.resolve_for_chain, common.merge(cls().config()))

    def password_keys(self, props: Mapping[str, str]) -> frozenset[str]:
        """Keys a ConfigDef declares PASSWORD (the common ones when the connector class is unknown)."""
        try:
            definition = self.definition(props)
        except Exception:
            definition = SOURCE_CONFIG_DEF.merge(SINK_CONFIG_DEF)
        return frozenset(name for name, key in definition.config_keys.items() if key.type is ConfigType.PASSWORD)

    def secret_values(self, props: Mapping[str, str], secret_keys: Collection[str] = ()) -> frozenset[str]:
        """`props`' secret values: of keys declared PASSWORD, shaped like a secret, or in `secret_keys`."""
        return secret_values(props, self.password_keys(props) | set(secret_keys))

    def unknown_keys(
        self,
        props: Mapping[str, str],
        definition: ConfigDef | None = None,
        values: Iterable[ConfigValue] | None = None,
    ) -> list[UnknownKey]:
        """Keys of `props` no ConfigDef knows, each with a did-you-mean where one is close
        (Kafka's "The configuration ... was supplied but isn't a known config.")."""
        definition = definition if definition is not None else self.definition(props)
        values = list(values) if values is not None else self._validate(props)
        known = definition.names() | {v.name for v in values}
        unchecked = [
            v.name.removesuffix("type")
            for v in values
            if v.errors and v.name.startswith(("transforms.", "predicates.")) and v.name.endswith(".type")
        ]
        return unknown_connector_keys(props, known, unchecked)

    @staticmethod
    def _check_name(props: Mapping[str, str], values: dict[str, ConfigValue]) -> None:
        error = name_error(props.get("name") or "")
        if error and "name" in values:
            values["name"].add_error_message(error)

    def _check_converters(self, props: Mapping[str, str], values: dict[str, ConfigValue]) -> None:
        """A converter override must name an installed class now, not when a task first starts."""
        for role in ("key.converter", "value.converter", "header.converter"):
            name = (props.get(role) or "").strip()
            if not name or role not in values:
                continue
            kinds = [PluginKind.HEADER_CONVERTER] if role == "header.converter" else [PluginKind.CONVERTER]
            try:
                self.registry.resolve(name, kinds, role)
            except ConfigException as e:
                values[role].add_error_message(str(e))

    def resolve_for_chain(self, kind: str, name: str) -> type:
        plugin_kind = PluginKind.PREDICATE if kind == "predicate" else PluginKind.TRANSFORMATION
        return self.registry.resolve(name, [plugin_kind]).cls

    def ensure_valid(self, props: Mapping[str, str]) -> None:
        """Raise ConfigException for the first invalid key, naming it."""
        for v in self.validate(props):
            if v.errors:
                message = v.errors[0]
                if v.name not in message:
                    message = f"{v.name}: {message}"
                raise ConfigException(message, v.name)

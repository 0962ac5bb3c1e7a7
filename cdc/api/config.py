"""Declaring and checking configuration (Kafka's ConfigDef, ConfigValue, AbstractConfig).

Every value arrives as a string (from .properties, JSON or YAML) and is parsed by its
declared type. Errors always name the key and say what was expected, so the runtime can
report them per field the way Kafka Connect's validate endpoint does.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from cdc.api.errors import ConfigException
from cdc.api.sensitive import is_sensitive


class ConfigType(Enum):
    """How a key's string value is parsed (Kafka's ConfigDef.Type); see `parse_type` for each rule."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(Enum):
    """How much a user should care about a key, shown by the config listing (Kafka's ConfigDef.Importance)."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(Enum):
    """A hint for UIs on how wide a key's value usually is (Kafka's ConfigDef.Width)."""

    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class Password:
    """A secret whose text never shows in str(), repr(), logs or REST output."""

    HIDDEN = "[hidden]"
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def value(self) -> str:
        """The secret's text; call it only where the secret is used (a login), never to log it."""
        return self._value

    def __str__(self) -> str:
        return self.HIDDEN

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT_VALUE"


NO_DEFAULT_VALUE: Any = _NoDefault()

Validator = Callable[[str, Any], None]
"""Raises ConfigException(name=...) when the parsed value is not acceptable."""


# -- validators ---------------------------------------------------------------------------
class Range:
    """Numeric bounds, inclusive."""

    def __init__(self, min: float | None = None, max: float | None = None) -> None:
        self.min, self.max = min, max

    @classmethod
    def at_least(cls, min: float) -> Range:
        """Values `min` or more."""
        return cls(min, None)

    @classmethod
    def between(cls, min: float, max: float) -> Range:
        """Values from `min` to `max`, both included."""
        return cls(min, max)

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigException(f"Invalid value null for configuration {name}: must be set", name)
        if self.min is not None and value < self.min:
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: value must be at least {self.min}",
                name,
                value,
            )
        if self.max is not None and value > self.max:
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: value must be no more than {self.max}",
                name,
                value,
            )

    def __str__(self) -> str:
        if self.max is None:
            return f"[{self.min},...]"
        return f"[{'...' if self.min is None else self.min},...,{self.max}]"


class ValidString:
    """One of a fixed set of strings."""

    def __init__(self, *allowed: str, case_sensitive: bool = True) -> None:
        self.allowed = list(allowed)
        self.case_sensitive = case_sensitive

    @classmethod
    def in_(cls, *allowed: str) -> ValidString:
        """Exactly one of `allowed` (case matters)."""
        return cls(*allowed)

    @classmethod
    def in_ignore_case(cls, *allowed: str) -> ValidString:
        """One of `allowed`, in any case; the value is kept as the user wrote it."""
        return cls(*allowed, case_sensitive=False)

    def __call__(self, name: str, value: Any) -> None:
        ok = (
            value in self.allowed
            if self.case_sensitive
            else isinstance(value, str) and value.lower() in {a.lower() for a in self.allowed}
        )
        if not ok:
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: String must be one of: " + ", ".join(self.allowed),
                name,
                value,
            )

    def __str__(self) -> str:
        return "[" + ", ".join(self.allowed) + "]"


class ValidList:
    """Every list element is one of the allowed strings."""

    def __init__(self, *allowed: str) -> None:
        self.allowed = list(allowed)

    def __call__(self, name: str, value: Any) -> None:
        bad = [v for v in value or [] if v not in self.allowed]
        if bad:
            raise ConfigException(
                f"Invalid value {','.join(bad)} for configuration {name}: "
                f"each entry must be one of: {', '.join(self.allowed)}",
                name,
                value,
            )

    def __str__(self) -> str:
        return "[" + ", ".join(self.allowed) + "]"


class NonEmptyString:
    """A string that is set and not blank (a required key with no sensible default)."""

    def __call__(self, name: str, value: Any) -> None:
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ConfigException(f"Invalid value for configuration {name}: String may not be empty", name, value)

    def __str__(self) -> str:
        return "non-empty string"


class ValidRegex:
    """A string that compiles as a regular expression."""

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        for v in value if isinstance(value, list) else [value]:
            try:
                re.compile(v)
            except re.error as e:
                raise ConfigException(
                    f"Invalid value {v} for configuration {name}: not a valid regular expression ({e})",
                    name,
                    value,
                ) from e

    def __str__(self) -> str:
        return "a valid regular expression"


# -- definition ---------------------------------------------------------------------------
@dataclass
class ConfigKey:
    """One declared key, as `ConfigDef.define` stored it; read it through `ConfigDef.config_keys`."""

    name: str
    type: ConfigType
    default_value: Any
    validator: Validator | None
    importance: Importance
    documentation: str
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str | None = None
    dependents: list[str] = field(default_factory=list)
    internal: bool = False

    @property
    def has_default(self) -> bool:
        """False for a required key (declared without a default)."""
        return self.default_value is not NO_DEFAULT_VALUE


@dataclass
class ConfigValue:
    """One key's outcome of validation: the parsed value plus every error found for it."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True

    def add_error_message(self, message: str) -> None:
        """Add one error; a `Connector.validate` override uses it for cross-field checks (name the fix)."""
        self.errors.append(message)


class ConfigDef:
    """A connector's, converter's or transform's declared configuration (Kafka's ConfigDef).

    Build it once at module level with chained `define` calls and return it from the plugin's
    `config()`. The runtime uses it to validate configs per key (each error names its key),
    to list the plugin's settings (`GET /connector-plugins/{type}/config`) and to mask PASSWORD
    values; the plugin uses `parse` in `start` to get typed values.
    """

    def __init__(self, base: ConfigDef | None = None) -> None:
        self._keys: dict[str, ConfigKey] = dict(base._keys) if base else {}

    def define(
        self,
        name: str,
        type: ConfigType,
        default_value: Any = NO_DEFAULT_VALUE,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        documentation: str = "",
        group: str | None = None,
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str | None = None,
        dependents: Iterable[str] = (),
        internal: bool = False,
    ) -> ConfigDef:
        """Declare a key; returns self, so definitions chain.

        Without `default_value` the key is required. A default is parsed by `type` and checked by
        `validator` now, so a wrong default fails when the ConfigDef is built (at import for a
        module-level one), not when a user starts the connector.
        `validator(name, parsed_value)` raises ConfigException naming the key (see `Range`,
        `ValidString`, ...). `group`, `order_in_group`, `width`, `display_name` and `dependents`
        only shape the config listing; `internal` marks a key users are not meant to set. A name
        defined twice raises ConfigException.
        """
        if name in self._keys:
            raise ConfigException(f"Configuration {name} is defined twice.", name)
        if default_value is not NO_DEFAULT_VALUE and default_value is not None:
            default_value = parse_type(name, default_value, type)
            if validator is not None:
                validator(name, default_value)
        self._keys[name] = ConfigKey(
            name,
            type,
            default_value,
            validator,
            importance,
            documentation,
            group,
            order_in_group,
            width,
            display_name or name,
            list(dependents),
            internal,
        )
        return self

    def define_internal(
        self, name: str, type: ConfigType, default_value: Any, importance: Importance = Importance.LOW
    ) -> ConfigDef:
        """Declare an internal key (one the runtime or plugin sets, not the user); returns self."""
        return self.define(name, type, default_value, importance=importance, internal=True)

    @property
    def config_keys(self) -> dict[str, ConfigKey]:
        """A copy of the declared keys by name, in definition order."""
        return dict(self._keys)

    def names(self) -> set[str]:
        """The declared key names."""
        return set(self._keys)

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new ConfigDef holding both definitions; `other` wins on clashes."""
        merged = ConfigDef(self)
        merged._keys.update(other._keys)
        return merged

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse every defined key; raise on the first missing or invalid one."""
        out: dict[str, Any] = {}
        for key in self._keys.values():
            out[key.name] = self._parse_value(key, props.get(key.name), key.name in props)
        return out

    def _parse_value(self, key: ConfigKey, raw: Any, is_set: bool) -> Any:
        if is_set:
            value = parse_type(key.name, raw, key.type)
        elif key.has_default:
            value = key.default_value
        else:
            raise ConfigException(
                f'Missing required configuration "{key.name}" which has no default value.',
                key.name,
            )
        if key.validator is not None and (value is not None or not key.has_default or is_set):
            key.validator(key.name, value)
        return value

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        """Every key's ConfigValue with all its errors (no exception), for the validate endpoint."""
        results: list[ConfigValue] = []
        for key in self._keys.values():
            cv = ConfigValue(key.name)
            try:
                cv.value = self._parse_value(key, props.get(key.name), key.name in props)
            except ConfigException as e:
                cv.value = props.get(key.name)
                cv.add_error_message(str(e))
            results.append(cv)
        return results

    def validate_all(self, props: Mapping[str, Any]) -> dict[str, ConfigValue]:
        """`validate`'s results by key name."""
        return {cv.name: cv for cv in self.validate(props)}

    def convert_to_string(self, name: str, value: Any) -> str | None:
        """`value` as the string the REST API shows for key `name` (passwords masked)."""
        return convert_to_string(value, self._keys[name].type if name in self._keys else None)

    def mask(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """A copy safe to print: PASSWORD values, Password objects and values of keys shaped like
        secrets (cdc.api.sensitive) become `[hidden]`."""
        out: dict[str, Any] = {}
        for k, v in props.items():
            key = self._keys.get(k)
            hidden = (key is not None and key.type is ConfigType.PASSWORD) or isinstance(v, Password) or is_sensitive(k)
            out[k] = Password.HIDDEN if hidden and v is not None else v
        return out


def _type_error(name: str, value: Any, expected: str) -> ConfigException:
    return ConfigException(f"Invalid value {value} for configuration {name}: Expected {expected}", name, value)


def parse_type(name: str, value: Any, type: ConfigType) -> Any:
    """Turn a raw (usually string) value into the declared type, naming `name` on failure."""
    if value is None:
        return None
    trimmed = value.strip() if isinstance(value, str) else value
    match type:
        case ConfigType.BOOLEAN:
            if isinstance(trimmed, bool):
                return trimmed
            if isinstance(trimmed, str) and trimmed.lower() in ("true", "false"):
                return trimmed.lower() == "true"
            raise _type_error(name, value, "value to be either true or false")
        case ConfigType.PASSWORD:
            if isinstance(value, Password):
                return value
            if isinstance(value, str):
                return Password(value)
            raise _type_error(name, "[hidden]", "value to be a string")
        case ConfigType.STRING:
            if isinstance(trimmed, str):
                return trimmed
            raise _type_error(name, value, f"value to be a string, but it was a {type_name(value)}")
        case ConfigType.INT | ConfigType.SHORT | ConfigType.LONG:
            bits = {ConfigType.INT: 32, ConfigType.SHORT: 16, ConfigType.LONG: 64}[type]
            try:
                if isinstance(trimmed, bool):
                    raise ValueError
                number = int(trimmed)
                if isinstance(trimmed, float) and number != trimmed:
                    raise ValueError
            except (TypeError, ValueError):
                raise _type_error(name, value, f"value to be a {bits}-bit integer") from None
            if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
                raise _type_error(name, value, f"value to be a {bits}-bit integer (out of range)")
            return number
        case ConfigType.DOUBLE:
            try:
                if isinstance(trimmed, bool):
                    raise ValueError
                return float(trimmed)
            except (TypeError, ValueError):
                raise _type_error(name, value, "value to be a number") from None
        case ConfigType.LIST:
            if isinstance(trimmed, list | tuple):
                return [str(v).strip() for v in trimmed]
            if isinstance(trimmed, str):
                return [] if not trimmed else [p.strip() for p in trimmed.split(",")]
            raise _type_error(name, value, "a comma-separated list")
        case ConfigType.CLASS:
            if isinstance(trimmed, str):
                return trimmed
            if isinstance(trimmed, builtins.type):
                return f"{trimmed.__module__}.{trimmed.__qualname__}"
            raise _type_error(name, value, "a class name")
    raise ConfigException(f"Unknown type {type} for configuration {name}", name)


def type_name(value: Any) -> str:
    """The Python type name of `value` (for example "str"), for error messages."""
    return builtins.type(value).__name__


def convert_to_string(value: Any, type: ConfigType | None) -> str | None:
    """The string form shown in REST output; passwords are masked."""
    if value is None:
        return None
    if isinstance(value, Password) or type is ConfigType.PASSWORD:
        return Password.HIDDEN
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


class AbstractConfig:
    """Parsed config with typed getters; keeps the originals for prefix look-ups (Kafka's AbstractConfig).

    Subclass it for a connector's typed config class: `__init__` parses `originals` with the
    ConfigDef and raises ConfigException naming the first missing or invalid key. Its repr masks
    passwords and keys shaped like secrets, so it is safe to log.
    """

    def __init__(self, definition: ConfigDef, originals: Mapping[str, Any]) -> None:
        self.definition = definition
        self._originals = dict(originals)
        self._values = definition.parse(originals)

    def get(self, name: str) -> Any:
        """The parsed value of a declared key; ConfigException for a key the ConfigDef does not declare."""
        if name not in self._values:
            raise ConfigException(f"Unknown configuration '{name}'", name)
        return self._values[name]

    def get_string(self, name: str) -> str | None:
        """The value of a STRING key (None when unset with a None default)."""
        return self.get(name)

    def get_int(self, name: str) -> int | None:
        """The value of an INT or SHORT key."""
        return self.get(name)

    def get_long(self, name: str) -> int | None:
        """The value of a LONG key."""
        return self.get(name)

    def get_boolean(self, name: str) -> bool | None:
        """The value of a BOOLEAN key."""
        return self.get(name)

    def get_list(self, name: str) -> list[str] | None:
        """The value of a LIST key, entries trimmed (an empty string gives [])."""
        return self.get(name)

    def get_password(self, name: str) -> Password | None:
        """The value of a PASSWORD key, still wrapped: call `.value()` only where it is used."""
        return self.get(name)

    def values(self) -> dict[str, Any]:
        """Every declared key's parsed value (a copy)."""
        return dict(self._values)

    def originals(self) -> dict[str, Any]:
        """The config as given, undeclared keys included (a copy)."""
        return dict(self._originals)

    def originals_with_prefix(self, prefix: str, strip: bool = True) -> dict[str, Any]:
        """The original keys starting with `prefix` (say `database.`), stripped of it unless `strip` is False."""
        return {(k[len(prefix) :] if strip else k): v for k, v in self._originals.items() if k.startswith(prefix)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.definition.mask(self._values)!r})"

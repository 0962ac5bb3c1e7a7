"""A connector's SMT chain, built from Kafka Connect's connector-config layout.

    transforms=route,mask
    transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
    transforms.route.regex=(.*)
    transforms.route.replacement=copy-$1
    transforms.route.predicate=isTombstone
    transforms.route.negate=true
    predicates=isTombstone
    predicates.isTombstone.type=org.apache.kafka.connect.transforms.predicates.RecordIsTombstone

Everything under `transforms.<alias>.` (and `predicates.<alias>.`) goes to the plugin's
`configure()` with the prefix stripped, as Kafka's ConnectorConfig.transformations() does.
Errors name the full key (`transforms.route.regex`), so the runtime and the validate endpoint
can report them per field. Class names are turned into classes by the runtime's
`resolve_class(kind, name)`, kind being "transform" or "predicate"; this module never
discovers plugins itself.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic

from cdc.api.config import (
    NO_DEFAULT_VALUE,
    ConfigDef,
    ConfigType,
    ConfigValue,
    Importance,
    Width,
    parse_type,
)
from cdc.api.errors import ConfigException
from cdc.api.transforms import Predicate, Transformation
from cdc.transforms._util import R, config_error

log = logging.getLogger(__name__)

TRANSFORMS = "transforms"
PREDICATES = "predicates"
TYPE = "type"
PREDICATE = "predicate"
NEGATE = "negate"

ResolveClass = Callable[[str, str], type]
"""`resolve_class(kind, name)`: kind is "transform" or "predicate"; returns the class or raises."""

_GROUP_KEY = {"transform": TRANSFORMS, "predicate": PREDICATES}
_BASE: dict[str, type] = {"transform": Transformation, "predicate": Predicate}
_LABEL = {"transform": "Transformation", "predicate": "Predicate"}
_EXAMPLE = {
    "transform": "org.apache.kafka.connect.transforms.RegexRouter",
    "predicate": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
}


# -- running --------------------------------------------------------------------------------
class TransformationStage(Generic[R]):
    """One transform, applied only where its predicate (xor `negate`) holds (Kafka's TransformationStage)."""

    __slots__ = ("alias", "negate", "predicate", "predicate_alias", "transformation")

    def __init__(
        self,
        alias: str,
        transformation: Transformation[R],
        predicate: Predicate[R] | None = None,
        negate: bool = False,
        predicate_alias: str | None = None,
    ) -> None:
        self.alias = alias
        self.transformation = transformation
        self.predicate = predicate
        self.negate = negate
        self.predicate_alias = predicate_alias

    def apply(self, record: R) -> R | None:
        if self.predicate is None or self.predicate.test(record) != self.negate:
            return self.transformation.apply(record)
        return record

    def close(self) -> None:
        _close_quietly(self.transformation)
        if self.predicate is not None:
            _close_quietly(self.predicate)

    def __repr__(self) -> str:
        pred = f", predicate={self.predicate!r}, negate={self.negate}" if self.predicate is not None else ""
        return f"TransformationStage({self.alias!r}, {type(self.transformation).__name__}{pred})"


class TransformationChain(Generic[R]):
    """Applies its stages in order; a stage returning None drops the record and stops the chain.

    The runtime can iterate `stages` itself when it wants per-stage error handling
    (errors.tolerance, retries), as Kafka's RetryWithToleranceOperator does.
    """

    def __init__(self, stages: Iterable[TransformationStage[R] | Transformation[R]] = ()) -> None:
        self.stages: tuple[TransformationStage[R], ...] = tuple(
            s if isinstance(s, TransformationStage) else TransformationStage(type(s).__name__, s) for s in stages
        )

    def apply(self, record: R) -> R | None:
        current: R | None = record
        for stage in self.stages:
            current = stage.apply(current)  # type: ignore[arg-type]
            if current is None:
                return None
        return current

    def close(self) -> None:
        for stage in self.stages:
            stage.close()

    def __repr__(self) -> str:
        return f"TransformationChain({list(self.stages)!r})"


def _close_quietly(plugin: Transformation[Any] | Predicate[Any]) -> None:
    try:
        plugin.close()
    except Exception:
        log.warning("Failed to close %s", type(plugin).__name__, exc_info=True)


# -- building -------------------------------------------------------------------------------
def build_transformation_chain(
    connector_config: Mapping[str, Any], resolve_class: ResolveClass
) -> TransformationChain[Any]:
    """Instantiate and configure every transform (and its predicate) listed in `transforms`.

    Raises ConfigException naming the offending key on the first problem found.
    """
    transforms = _aliases(connector_config, TRANSFORMS, "transformation")
    predicates = _aliases(connector_config, PREDICATES, "predicate")
    _warn_unlisted(connector_config, transforms, predicates)
    predicate_classes = {p: _resolve_type(connector_config, resolve_class, "predicate", p) for p in predicates}

    stages: list[TransformationStage[Any]] = []
    try:
        for alias in transforms:
            prefix = f"{TRANSFORMS}.{alias}."
            negate = _negate(connector_config, prefix)
            cls = _resolve_type(connector_config, resolve_class, "transform", alias)
            predicate_alias = _predicate_reference(connector_config, prefix, predicates)
            transformation = _create(connector_config, "transform", alias, cls)
            predicate = None
            if predicate_alias is not None:
                try:
                    # A fresh instance per stage, as Kafka does, so each stage owns what it closes.
                    pred_cls = predicate_classes[predicate_alias]
                    predicate = _create(connector_config, "predicate", predicate_alias, pred_cls)
                except BaseException:
                    _close_quietly(transformation)
                    raise
            stages.append(TransformationStage(alias, transformation, predicate, negate, predicate_alias))
        referenced = {s.predicate_alias for s in stages if s.predicate_alias}
        for alias in predicates:
            if alias not in referenced:
                # Unused, but its config must still be valid (Kafka validates every listed predicate).
                _close_quietly(_create(connector_config, "predicate", alias, predicate_classes[alias]))
    except BaseException:
        for stage in stages:
            stage.close()
        raise
    return TransformationChain(stages)


def _aliases(config: Mapping[str, Any], key: str, what: str) -> list[str]:
    aliases = parse_type(key, config.get(key), ConfigType.LIST) or []
    _check_aliases(key, aliases, what)
    return aliases


def _check_aliases(key: str, aliases: list[str], what: str) -> None:
    seen: set[str] = set()
    for alias in aliases:
        if not alias:
            raise config_error(key, aliases, f"an empty {what} alias is listed; remove the stray comma")
        if alias in seen:
            raise config_error(
                key,
                aliases,
                f"Duplicate alias provided: '{alias}' is listed more than once; give each {what} its own alias",
            )
        seen.add(alias)


class _Armed:
    """A validator that looks at the whole connector config, armed once its key is defined.

    ConfigDef.define() runs the validator on the default; for these checks that would
    judge the connector config before validation has even started.
    """

    def __init__(self, check: Callable[[str, Any], None]) -> None:
        self.check = check
        self.armed = False

    def __call__(self, name: str, value: Any) -> None:
        if self.armed:
            self.check(name, value)


def _define_armed(
    definition: ConfigDef,
    name: str,
    type: ConfigType,
    default: Any,
    check: Callable[[str, Any], None],
    documentation: str,
    group: str,
    order: int,
) -> None:
    validator = _Armed(check)
    definition.define(
        name, type, default, validator, Importance.MEDIUM, documentation, group=group, order_in_group=order
    )
    validator.armed = True


class _AliasValidator:
    def __init__(self, what: str) -> None:
        self.what = what

    def __call__(self, name: str, value: Any) -> None:
        _check_aliases(name, value or [], self.what)

    def __str__(self) -> str:
        return f"unique {self.what} aliases"


def _warn_unlisted(config: Mapping[str, Any], transforms: list[str], predicates: list[str]) -> None:
    # Kafka silently ignores these; a warning catches the usual typo (alias not added to the list).
    for group_key, aliases in ((TRANSFORMS, transforms), (PREDICATES, predicates)):
        prefixes = tuple(f"{group_key}.{a}." for a in aliases)
        for key in config:
            if key.startswith(group_key + ".") and not key.startswith(prefixes):
                log.warning("Ignoring %s: its alias is not listed in '%s'", key, group_key)


def _resolve_type(config: Mapping[str, Any], resolve_class: ResolveClass, kind: str, alias: str) -> type:
    key = f"{_GROUP_KEY[kind]}.{alias}.{TYPE}"
    raw = config.get(key)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise ConfigException(
            f'Missing required configuration "{key}" which has no default value. '
            f"Set it to the {_LABEL[kind].lower()} class, e.g. {_EXAMPLE[kind]}",
            key,
        )
    return _class_for(key, parse_type(key, raw, ConfigType.CLASS), kind, resolve_class)


def _class_for(key: str, name: str, kind: str, resolve_class: ResolveClass) -> type:
    label = _LABEL[kind]
    try:
        cls = resolve_class(kind, name)
    except Exception as e:
        hint = _did_you_mean(name, kind, resolve_class) or (
            "Check the class name and that the plugin providing it is installed "
            "(an entry point in the cdc.plugins group, or a directory on plugin.path)."
        )
        raise config_error(key, name, f"Class {name} could not be found ({e}). {hint}") from e
    if not (isinstance(cls, type) and issubclass(cls, _BASE[kind])):
        raise config_error(key, name, f"Not a {label}")
    if inspect.isabstract(cls):
        hint = _did_you_mean(name, kind, resolve_class)
        if hint is None:
            concrete = [f"{c.__module__}:{c.__qualname__}" for c in cls.__subclasses__() if not inspect.isabstract(c)]
            hint = f"Did you mean {' or '.join(concrete)}?" if concrete else None
        raise config_error(key, name, f"{label} is abstract and cannot be created." + (f" {hint}" if hint else ""))
    return cls


def _did_you_mean(name: str, kind: str, resolve_class: ResolveClass) -> str | None:
    """Kafka's Key/Value SMTs are nested classes; suggest `X$Key`/`X$Value` when `X` was given."""
    found = []
    for suffix in ("$Key", "$Value"):
        try:
            resolve_class(kind, name + suffix)
        except Exception:
            continue
        found.append(name + suffix)
    return f"Did you mean {' or '.join(found)}?" if found else None


def _predicate_reference(config: Mapping[str, Any], prefix: str, predicates: list[str]) -> str | None:
    key = prefix + PREDICATE
    raw = config.get(key)
    alias = parse_type(key, raw, ConfigType.STRING) if raw is not None else ""
    _check_predicate_alias(key, alias, predicates)
    return alias or None


def _check_predicate_alias(key: str, alias: str | None, predicates: list[str]) -> None:
    if alias and alias not in predicates:
        defined = f" (defined: {', '.join(predicates)})" if predicates else ""
        raise config_error(
            key,
            alias,
            f"predicate '{alias}' is not defined{defined}; add '{alias}' to '{PREDICATES}' and set "
            f"'{PREDICATES}.{alias}.{TYPE}'",
        )


def _negate(config: Mapping[str, Any], prefix: str) -> bool:
    key = prefix + NEGATE
    if key not in config:
        return False
    value = parse_type(key, config[key], ConfigType.BOOLEAN)
    _check_negate_has_predicate(config, prefix)
    return bool(value)


def _check_negate_has_predicate(config: Mapping[str, Any], prefix: str) -> None:
    key, predicate_key = prefix + NEGATE, prefix + PREDICATE
    if key in config and not str(config.get(predicate_key) or "").strip():
        raise ConfigException(
            f"Config '{key}' was provided but there is no config '{predicate_key}' defining a predicate "
            f"to be negated. Set '{predicate_key}' to one of the '{PREDICATES}' aliases, or remove '{key}'.",
            key,
            config[key],
        )


def _plugin_configs(config: Mapping[str, Any], prefix: str, kind: str) -> dict[str, Any]:
    # `type` is passed through as Kafka's originalsWithPrefix does; predicate/negate belong to the stage.
    dropped = (PREDICATE, NEGATE) if kind == "transform" else ()
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix) and k[len(prefix) :] not in dropped}


def _create(config: Mapping[str, Any], kind: str, alias: str, cls: type) -> Any:
    """Instantiate and configure; config errors come back with the alias prefix on the key."""
    prefix = f"{_GROUP_KEY[kind]}.{alias}."
    type_key = prefix + TYPE
    what = f"{kind} '{alias}'"
    try:
        plugin = cls()
    except Exception as e:
        raise config_error(type_key, config.get(type_key), f"could not create the {kind}: {e}") from e
    try:
        plugin.configure(_plugin_configs(config, prefix, kind))
    except ConfigException as e:
        _close_quietly(plugin)
        raise prefixed_config_error(e, prefix, type_key, what) from e
    except Exception as e:
        _close_quietly(plugin)
        raise config_error(
            type_key, config.get(type_key), f"the {what} failed to configure: {type(e).__name__}: {e}"
        ) from e
    return plugin


def prefixed_config_error(e: ConfigException, prefix: str, anchor: str, what: str) -> ConfigException:
    """Re-home a plugin's ConfigException under its connector-config key (`regex` -> `transforms.a.regex`).

    An error that names no key is attached to `anchor` (the alias's `type` key).
    """
    message = str(e)
    if e.name is None:
        return ConfigException(f"Invalid configuration for {what}: {message}", anchor, e.value)
    if e.name.startswith(prefix):
        return e
    full = prefix + e.name
    for old, new in (
        (f"configuration {e.name}:", f"configuration {full}:"),
        (f'configuration "{e.name}"', f'configuration "{full}"'),
    ):
        if old in message:
            return ConfigException(message.replace(old, new, 1), full, e.value)
    return ConfigException(f"Invalid configuration {full}: {message}", full, e.value)


# -- validation (Kafka's ConnectorConfig.enrich) ---------------------------------------------
def transformation_config_def(
    connector_config: Mapping[str, Any], resolve_class: ResolveClass, base: ConfigDef | None = None
) -> ConfigDef:
    """`base` plus `transforms`, `predicates` and every alias's keys, prefixed.

    For each listed alias this defines `<prefix>type` (validated by resolving the class),
    `transforms.<alias>.predicate` / `.negate`, and the plugin's own ConfigDef under the
    prefix. An alias whose class cannot be resolved contributes only its `type` key (and
    that key carries the error), like Kafka's non-strict enrich.
    """
    definition = ConfigDef(base)
    names = definition.names()
    if TRANSFORMS not in names:
        definition.define(
            TRANSFORMS,
            ConfigType.LIST,
            [],
            _AliasValidator("transformation"),
            Importance.LOW,
            "Aliases for the transformations to be applied to records.",
            group="Transforms",
            width=Width.LONG,
            display_name="Transforms",
        )
    if PREDICATES not in names:
        definition.define(
            PREDICATES,
            ConfigType.LIST,
            [],
            _AliasValidator("predicate"),
            Importance.LOW,
            "Aliases for the predicates used by transformations.",
            group="Predicates",
            width=Width.LONG,
            display_name="Predicates",
        )
    transforms = _lenient_aliases(connector_config, TRANSFORMS)
    predicates = _lenient_aliases(connector_config, PREDICATES)
    for alias in transforms:
        _enrich(definition, connector_config, resolve_class, "transform", alias, predicates)
    for alias in predicates:
        _enrich(definition, connector_config, resolve_class, "predicate", alias, predicates)
    return definition


def validate_transformations(connector_config: Mapping[str, Any], resolve_class: ResolveClass) -> list[ConfigValue]:
    """Per-key results for `transforms`, `predicates` and all their prefixed keys.

    Beyond the ConfigDefs, each alias whose keys are clean is also configured once, so
    checks that live in `configure()` (InsertField's "no field insertion configured", a
    replacement referring to a missing regex group, ...) show up on the right key too.
    """
    definition = transformation_config_def(connector_config, resolve_class)
    values = {cv.name: cv for cv in definition.validate(connector_config)}
    for kind in ("transform", "predicate"):
        for alias in _lenient_aliases(connector_config, _GROUP_KEY[kind]):
            prefix = f"{_GROUP_KEY[kind]}.{alias}."
            if any(cv.errors for name, cv in values.items() if name.startswith(prefix)):
                continue
            try:
                cls = _resolve_type(connector_config, resolve_class, kind, alias)
                _close_quietly(_create(connector_config, kind, alias, cls))
            except ConfigException as e:
                name = e.name or prefix + TYPE
                cv = values.setdefault(name, ConfigValue(name, connector_config.get(name)))
                cv.add_error_message(str(e))
    return list(values.values())


def _lenient_aliases(config: Mapping[str, Any], key: str) -> list[str]:
    try:
        aliases = parse_type(key, config.get(key), ConfigType.LIST) or []
    except ConfigException:
        return []
    return [a for a in dict.fromkeys(aliases) if a]


def _enrich(
    definition: ConfigDef,
    config: Mapping[str, Any],
    resolve_class: ResolveClass,
    kind: str,
    alias: str,
    predicates: list[str],
) -> None:
    prefix = f"{_GROUP_KEY[kind]}.{alias}."
    group = f"{_GROUP_KEY[kind].capitalize()}: {alias}"
    label = _LABEL[kind]
    order = 0

    def type_validator(name: str, value: Any) -> None:
        _class_for(name, value, kind, resolve_class)

    definition.define(
        prefix + TYPE,
        ConfigType.CLASS,
        NO_DEFAULT_VALUE,
        type_validator,
        Importance.HIGH,
        f"Class for the '{alias}' {label.lower()}.",
        group=group,
        order_in_group=order,
        width=Width.LONG,
        display_name=f"{label} type for {alias}",
    )
    reserved = {TYPE}
    if kind == "transform":
        reserved |= {PREDICATE, NEGATE}
        _define_armed(
            definition,
            prefix + PREDICATE,
            ConfigType.STRING,
            "",
            lambda name, value: _check_predicate_alias(name, value, predicates),
            "The alias of a predicate used to determine whether to apply this transformation.",
            group,
            order + 1,
        )
        _define_armed(
            definition,
            prefix + NEGATE,
            ConfigType.BOOLEAN,
            False,
            lambda name, value: _check_negate_has_predicate(config, prefix),
            "Whether the configured predicate should be negated.",
            group,
            order + 2,
        )
        order += 2
    plugin_def = _plugin_config_def(config, resolve_class, kind, alias)
    if plugin_def is None:
        return
    for key in plugin_def.config_keys.values():
        if key.name in reserved:
            # The implicit keys mask a plugin's own keys of the same name, as in Kafka.
            log.warning("%s config %s of %s is masked by the implicit config of that name", label, key.name, alias)
            continue
        order += 1
        definition.define(
            prefix + key.name,
            key.type,
            key.default_value,
            key.validator,
            key.importance,
            key.documentation,
            group=group,
            order_in_group=order,
            width=key.width,
            display_name=key.display_name,
            dependents=[prefix + d for d in key.dependents],
            internal=key.internal,
        )


def _plugin_config_def(
    config: Mapping[str, Any], resolve_class: ResolveClass, kind: str, alias: str
) -> ConfigDef | None:
    try:
        cls = _resolve_type(config, resolve_class, kind, alias)
        return cls().config()
    except Exception:
        # The `type` key's own validator reports why; the plugin's keys are just not known.
        return None

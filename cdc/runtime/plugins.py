"""Plugin discovery: installed entry points plus `plugin.path` drop-ins.

The Python analogue of Kafka Connect's service manifests (KIP-898): a plugin declares its
classes as entry points in the `cdc.plugins` group. Every top-level entry of a
`plugin.path` directory is one plugin: a `pip install --target` directory or a wheel.
The runtime never imports a plugin by name; it only resolves what discovery found.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import inspect
import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from cdc.api.errors import ConfigException
from cdc.api.sink import SinkConnector
from cdc.api.source import SourceConnector
from cdc.api.storage import Converter, HeaderConverter
from cdc.api.transforms import Predicate, Transformation

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "cdc.plugins"


class PluginKind(Enum):
    """Kafka Connect's plugin type names, as `GET /connector-plugins` reports them."""

    SOURCE = "source"
    SINK = "sink"
    CONVERTER = "converter"
    HEADER_CONVERTER = "header_converter"
    TRANSFORMATION = "transformation"
    PREDICATE = "predicate"
    CONFIG_PROVIDER = "config_provider"


CONNECTOR_KINDS = frozenset({PluginKind.SOURCE, PluginKind.SINK})


def _kinds_of(cls: type) -> list[PluginKind]:
    from cdc.config.providers import ConfigProvider

    kinds: list[PluginKind] = []
    checks: list[tuple[type, PluginKind]] = [
        (SourceConnector, PluginKind.SOURCE),
        (SinkConnector, PluginKind.SINK),
        (Converter, PluginKind.CONVERTER),
        (HeaderConverter, PluginKind.HEADER_CONVERTER),
        (Transformation, PluginKind.TRANSFORMATION),
        (Predicate, PluginKind.PREDICATE),
        (ConfigProvider, PluginKind.CONFIG_PROVIDER),
    ]
    for base, kind in checks:
        if inspect.isclass(cls) and issubclass(cls, base) and not inspect.isabstract(cls):
            kinds.append(kind)
    return kinds


@dataclass
class PluginDesc:
    class_name: str
    kind: PluginKind
    version: str
    location: str
    cls: type
    aliases: set[str] = field(default_factory=set)

    def as_json(self) -> dict[str, str]:
        return {"class": self.class_name, "type": self.kind.value, "version": self.version}


@dataclass(frozen=True)
class PluginLoadError:
    location: str
    entry_point: str
    message: str


class PluginNotFoundError(ConfigException):
    pass


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _default_aliases(cls: type, kind: PluginKind) -> set[str]:
    # Kafka Connect's PluginUtils aliases: the simple name, and for connectors and
    # converters the simple name without its "Connector"/"Converter" suffix.
    return _simple_aliases(cls.__qualname__)


def _simple_aliases(simple: str) -> set[str]:
    out = {simple}
    for suffix in ("Connector", "Converter"):
        if simple.endswith(suffix) and len(simple) > len(suffix):
            out.add(simple[: -len(suffix)])
    return out


def _is_jvm_class_name(name: str) -> bool:
    """An entry point named like a Kafka/Debezium class (`io.debezium.connector.mysql.MySqlConnector`,
    `org.apache.kafka.connect.transforms.Cast$Key`): the plugin is listed under that name, as
    Kafka Connect lists it, so Connect UIs and tools that match on class names recognise it."""
    package, _, simple = name.rpartition(".")
    return (
        bool(package)
        and simple[:1].isupper()
        and all(part.isidentifier() for part in package.split("."))
        and all(part.isidentifier() for part in simple.split("$"))
    )


class PluginRegistry:
    def __init__(self) -> None:
        self.plugins: list[PluginDesc] = []
        self.errors: list[PluginLoadError] = []
        self.plugin_path: list[str] = []

    # -- discovery ---------------------------------------------------------------------------
    @classmethod
    def discover(cls, plugin_path: Iterable[str] = (), include_installed: bool = True) -> PluginRegistry:
        reg = cls()
        if include_installed:
            for ep in md.entry_points(group=ENTRY_POINT_GROUP):
                dist = ep.dist
                location = f"installed: {dist.name if dist else '?'}"
                reg._add_entry_point(ep, dist.version if dist else "unknown", location)
        for directory in plugin_path:
            reg._scan_plugin_dir(Path(directory))
        return reg

    def _scan_plugin_dir(self, directory: Path) -> None:
        if not directory.is_dir():
            # As Kafka Connect's plugin scanner does with an entry it cannot list: say so, go on.
            why = "is not a directory, skipped; create it or fix plugin.path"
            log.warning("plugin.path entry %r %s", str(directory), why)
            return
        self.plugin_path.append(str(directory))
        for entry in sorted(directory.iterdir()):
            if entry.name.startswith("."):
                continue
            if entry.is_dir() or entry.suffix == ".whl":
                self._load_plugin(entry)

    def _load_plugin(self, location: Path) -> None:
        dists = list(md.distributions(path=[str(location)]))
        if not dists:
            self.errors.append(
                PluginLoadError(
                    str(location),
                    "",
                    "no *.dist-info found; install a plugin with `pip install --target <plugin.path>/<name> <pkg>` "
                    "or drop its wheel here",
                )
            )
            return
        # Each plugin's code is importable only once it is on sys.path; appending keeps the
        # runtime's own packages first so a plugin cannot shadow them.
        if str(location) not in sys.path:
            sys.path.append(str(location))
        found = False
        for dist in dists:
            for ep in dist.entry_points:
                if ep.group == ENTRY_POINT_GROUP:
                    found = True
                    self._add_entry_point(ep, dist.version, str(location))
        if not found:
            self.errors.append(
                PluginLoadError(
                    str(location), "", f"no entry points in group {ENTRY_POINT_GROUP!r}; declare the plugin's classes"
                )
            )

    def _add_entry_point(self, ep: md.EntryPoint, version: str, location: str) -> None:
        try:
            obj = ep.load()
        except Exception as e:  # a broken plugin must not take the worker down
            self.errors.append(PluginLoadError(location, f"{ep.name} = {ep.value}", f"{type(e).__name__}: {e}"))
            log.warning("cannot load plugin %s from %s: %s", ep.value, location, e)
            return
        kinds = _kinds_of(obj)
        if not kinds:
            self.errors.append(
                PluginLoadError(location, f"{ep.name} = {ep.value}", "not a connector, converter, transform, predicate")
            )
            return
        listed_as = ep.name if _is_jvm_class_name(ep.name) else None
        self.add(obj, version, location, aliases={ep.name}, kinds=kinds, listed_as=listed_as)

    def add(
        self,
        cls: type,
        version: str = "unknown",
        location: str = "",
        aliases: Iterable[str] = (),
        kinds: list[PluginKind] | None = None,
        listed_as: str | None = None,
    ) -> None:
        """Register `cls`; `listed_as` is a Kafka/Debezium class name it implements.

        A class with such names is listed once per name (Debezium's MySqlConnector and
        MariaDbConnector are two classes there, one here) and never under its Python path,
        which stays an alias; a class without one is listed under its Python path.
        """
        python_name = _class_name(cls)
        for kind in kinds or _kinds_of(cls):
            same = [p for p in self.plugins if p.cls is cls and p.kind is kind]
            if listed_as is None:
                if same:
                    same[0].aliases.update(aliases)
                    continue
                self.plugins.append(
                    PluginDesc(
                        python_name,
                        kind,
                        _plugin_version(cls, version),
                        location,
                        cls,
                        set(aliases) | _default_aliases(cls, kind),
                    )
                )
                continue
            # Not the JVM class's simple name: Debezium's Filter would take "Filter" from Kafka's.
            names = set(aliases) | {python_name}
            listed = next((p for p in same if p.class_name == listed_as), None)
            if listed is None:
                listed = next((p for p in same if p.class_name == python_name), None)
                if listed is not None:  # first known under its Python path: list it under this name
                    listed.class_name = listed_as
            if listed is not None:
                listed.aliases.update(names)
                continue
            self.plugins.append(
                PluginDesc(
                    listed_as,
                    kind,
                    _plugin_version(cls, version),
                    location,
                    cls,
                    names | _default_aliases(cls, kind),
                )
            )

    # -- lookup ------------------------------------------------------------------------------
    def of_kind(self, *kinds: PluginKind) -> list[PluginDesc]:
        return sorted((p for p in self.plugins if p.kind in kinds), key=lambda p: (p.kind.value, p.class_name))

    def resolve(self, name: str, kinds: Iterable[PluginKind], config_key: str | None = None) -> PluginDesc:
        """Find a plugin by class name or alias, or raise an error that names `config_key`."""
        kinds = frozenset(kinds)
        name = name.strip()
        candidates = [p for p in self.plugins if p.kind in kinds and name == p.class_name]
        if not candidates:
            candidates = [p for p in self.plugins if p.kind in kinds and name in p.aliases]
        # One class listed under two names (MySQL's and MariaDB's connector) is not ambiguous.
        unique = {p.cls: p for p in candidates}
        if len(unique) == 1:
            (cls,) = unique
            listings = [p for p in self.plugins if p.cls is cls and p.kind in kinds]
            return min(listings, key=lambda p: _preference(p, name))
        what = " or ".join(sorted(k.value for k in kinds))
        if len(unique) > 1:
            raise PluginNotFoundError(
                f"{config_key or what}: {name!r} is ambiguous; it matches "
                f"{', '.join(sorted(p.class_name for p in unique.values()))}. "
                "Use the full class name",
                config_key,
                name,
            )
        imported = self._import_by_path(name, kinds)
        if imported is not None:
            return imported
        known = sorted({p.class_name for p in self.plugins if p.kind in kinds})
        where = f"plugin.path ({', '.join(self.plugin_path)})" if self.plugin_path else "a plugin.path directory"
        raise PluginNotFoundError(
            f"{config_key or what}: unknown {what} class {name!r}. "
            f"Known: {', '.join(known) or 'none'}. Install the plugin into {where} "
            "with `pip install --target DIR/NAME PACKAGE`, or into this Python environment",
            config_key,
            name,
        )

    def _import_by_path(self, name: str, kinds: frozenset[PluginKind]) -> PluginDesc | None:
        # A dotted module path that is importable works too (plugins under development),
        # but only if the class really is of the wanted kind.
        module_name, _, attr = name.rpartition(".")
        if not module_name or "$" in name:
            return None
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError):
            return None
        matching = [k for k in _kinds_of(obj) if k in kinds]
        if not matching:
            return None
        self.add(obj, location=f"module: {module_name}", kinds=matching)
        return self.resolve(name, kinds)

    def new_instance(self, name: str, kinds: Iterable[PluginKind], config_key: str | None = None) -> Any:
        return self.resolve(name, kinds, config_key).cls()


def _preference(plugin: PluginDesc, name: str) -> tuple[bool, bool, bool, str]:
    """Of one class's listings: the one `name` is, else the one it names (`mariadb` names
    MariaDbConnector), else the one named like the class itself."""
    simple = plugin.class_name.rpartition(".")[2]
    named = name.lower() in {a.lower() for a in _simple_aliases(simple)}
    return (name != plugin.class_name, not named, simple != plugin.cls.__qualname__, plugin.class_name)


def _plugin_version(cls: type, dist_version: str) -> str:
    try:
        declared = cls().version() if hasattr(cls, "version") else "unknown"  # type: ignore[call-arg]
    except Exception:
        declared = "unknown"
    return declared if declared and declared != "unknown" else dist_version

"""Every Debezium SMT registered in plugins/debezium-core/pyproject.toml loads under Debezium's class
name, declares its keys, and validates per key through the runtime's validate path (issue 23)."""

from __future__ import annotations

import importlib
import inspect
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cdc.api import ConfigDef, Transformation
from cdc.runtime.plugins import PluginKind, PluginRegistry
from cdc.transforms import validate_transformations

PYPROJECT = Path(__file__).resolve().parents[3] / "plugins" / "debezium-core" / "pyproject.toml"
ENTRY_POINTS: dict[str, str] = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["cdc.plugins"]

# A minimal valid config per SMT, and one bad key with the key the error must name.
MINIMAL: dict[str, tuple[dict[str, str], tuple[str, str]]] = {
    "io.debezium.transforms.ExtractNewRecordState": ({}, ("delete.tombstone.handling.mode", "keep")),
    "io.debezium.transforms.outbox.EventRouter": ({}, ("route.topic.regex", "(")),
    "io.debezium.transforms.ByLogicalTableRouter": (
        {"topic.regex": "(.*)", "topic.replacement": "$1.all"},
        ("topic.replacement", "$9"),
    ),
    "io.debezium.transforms.ToLogicalTopicRouter": (
        {"topic.regex": "(.*)", "topic.replacement": "$1.all"},
        ("topic.regex", "(("),
    ),
    "io.debezium.transforms.ExtractChangedRecordState": ({"header.changed.name": "c"}, ("header.unchanged.name", None)),
    "io.debezium.transforms.HeaderToValue": (
        {"headers": "h", "fields": "f", "operation": "copy"},
        ("operation", "swap"),
    ),
    "io.debezium.transforms.partitions.PartitionRouting": (
        {"partition.payload.fields": "change.id", "partition.topic.num": "4"},
        ("partition.topic.num", "-1"),
    ),
    "io.debezium.transforms.TimezoneConverter": ({"converted.timezone": "UTC"}, ("converted.timezone", "Nowhere/X")),
    "io.debezium.transforms.Filter": (
        {"language": "cdc.expr", "condition": "value != null"},
        ("language", "jsr223.groovy"),
    ),
    "io.debezium.transforms.ContentBasedRouter": (
        {"language": "cdc.expr", "topic.expression": "topic + '.x'"},
        ("topic.expression", "topic +"),
    ),
}


def test_every_registered_smt_has_a_case() -> None:
    assert set(ENTRY_POINTS) == set(MINIMAL)


@pytest.mark.parametrize(("name", "target"), sorted(ENTRY_POINTS.items()))
def test_entry_point_loads_a_concrete_transformation(name: str, target: str) -> None:
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    assert issubclass(cls, Transformation) and not inspect.isabstract(cls)
    assert isinstance(cls().config(), ConfigDef)
    assert name.rsplit(".", 1)[-1] in (cls.__name__, "Filter")
    assert name in (cls.__doc__ or "")  # the docstring names the Debezium class it mirrors


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    return PluginRegistry.discover()


def resolver(registry: PluginRegistry) -> Any:
    kinds = {"transform": [PluginKind.TRANSFORMATION], "predicate": [PluginKind.PREDICATE]}
    return lambda kind, name: registry.resolve(name, kinds[kind]).cls


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_validate_reports_per_key(registry: PluginRegistry, name: str) -> None:
    good, (bad_key, bad_value) = MINIMAL[name]
    config: dict[str, Any] = {"transforms": "t", "transforms.t.type": name}
    config |= {f"transforms.t.{k}": v for k, v in good.items()}
    errors = {cv.name: cv.errors for cv in validate_transformations(config, resolver(registry)) if cv.errors}
    assert errors == {}
    if bad_value is None:
        return
    config[f"transforms.t.{bad_key}"] = bad_value
    errors = {cv.name: cv.errors for cv in validate_transformations(config, resolver(registry)) if cv.errors}
    assert list(errors) == [f"transforms.t.{bad_key}"], errors
    assert all("\n" not in e for e in errors[f"transforms.t.{bad_key}"])

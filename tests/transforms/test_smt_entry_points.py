"""The Kafka class names in pyproject must load our SMTs, so Kafka Connect configs keep working."""

import importlib
import inspect
import tomllib
from pathlib import Path

import pytest

from cdc.api import ConfigDef, ConfigType, Predicate, Transformation
from cdc.transforms import transformation_config_def

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
ENTRY_POINTS = {
    name: target
    for name, target in tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["cdc.plugins"].items()
    if target.startswith("cdc.transforms.")
}


def load(target: str) -> type:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def test_all_expected_smts_are_registered() -> None:
    short = {name.rsplit(".", 1)[-1] for name in ENTRY_POINTS}
    assert short == {
        "RegexRouter",
        "InsertField$Key",
        "InsertField$Value",
        "ReplaceField$Key",
        "ReplaceField$Value",
        "MaskField$Key",
        "MaskField$Value",
        "Filter",
        "TopicNameMatches",
        "RecordIsTombstone",
        "HasHeaderKey",
        "HoistField$Key",
        "HoistField$Value",
        "TimestampRouter",
        "InsertHeader",
        "DropHeaders",
        "ExtractField$Key",
        "ExtractField$Value",
        "SetSchemaMetadata$Key",
        "SetSchemaMetadata$Value",
        "ValueToKey",
        "HeaderFrom$Key",
        "HeaderFrom$Value",
        "Flatten$Key",
        "Flatten$Value",
        "Cast$Key",
        "Cast$Value",
        "TimestampConverter$Key",
        "TimestampConverter$Value",
    }


@pytest.mark.parametrize(("name", "target"), sorted(ENTRY_POINTS.items()))
def test_entry_point_loads_a_concrete_plugin(name: str, target: str) -> None:
    cls = load(target)
    base = Predicate if ".predicates." in name else Transformation
    assert issubclass(cls, base) and not inspect.isabstract(cls)
    instance = cls()
    assert isinstance(instance.config(), ConfigDef)
    side = name.rpartition("$")[2] if "$" in name else None
    if side:
        assert cls.__name__.endswith(side)


def test_config_def_keeps_a_runtime_base_definition() -> None:
    base = ConfigDef().define("name", ConfigType.STRING).define("transforms", ConfigType.LIST, [])
    names = {v: load(t) for v, t in ENTRY_POINTS.items()}
    definition = transformation_config_def(
        {"transforms": "f", "transforms.f.type": "org.apache.kafka.connect.transforms.Filter"},
        lambda kind, n: names[n],
        base,
    )
    assert {"name", "transforms", "predicates", "transforms.f.type", "transforms.f.negate"} <= definition.names()
    assert base.names() == {"name", "transforms"}  # the base is not modified

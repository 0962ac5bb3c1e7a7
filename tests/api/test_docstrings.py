"""Every public name of the plugin SPI (`cdc.api`) has a docstring written in the code.

A plugin author reads only `cdc.api` (as a Kafka Connect plugin author reads connect-api's
javadoc), so each module, each public class and function defined in it, and each public
method or property defined in a public class body must carry its own docstring.

The rule, kept simple:
- public means the name has no leading underscore (dunder methods such as `__eq__` are not checked);
- a name is checked where it is defined: re-exports (`cdc.api.Schema`) and members inherited
  unchanged from a base class are not checked again;
- a method defined in a class body, including an override of a documented base method, must
  have its own `__doc__`: Python's inherited docstring (`inspect.getdoc`) does not count;
- the docstring that `dataclass` and `NamedTuple` generate from the signature does not count.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import cdc.api


def _modules() -> list[ModuleType]:
    found = [cdc.api]
    for info in pkgutil.walk_packages(cdc.api.__path__, prefix="cdc.api."):
        found.append(importlib.import_module(info.name))
    return found


def _public(name: str) -> bool:
    return not name.startswith("_")


def _own_doc(obj: object) -> bool:
    doc = getattr(obj, "__doc__", None)
    return isinstance(doc, str) and bool(doc.strip())


def _class_doc(cls: type) -> bool:
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or not doc.strip():
        return False
    # dataclass and NamedTuple write `Name(field, ...)` when the class body has no docstring.
    return not doc.startswith(f"{cls.__name__}(")


def _member_function(member: object) -> object | None:
    """The function carrying a class member's docstring, or None when it is not a method or property."""
    if isinstance(member, staticmethod | classmethod):
        return member.__func__
    if isinstance(member, property):
        return member.fget
    if inspect.isfunction(member):
        return member
    return None


def undocumented() -> tuple[list[str], int]:
    """The qualified names without a docstring, and how many public names were checked."""
    missing: list[str] = []
    checked = 0
    for module in _modules():
        checked += 1
        if not _own_doc(module):
            missing.append(module.__name__)
        for name, obj in vars(module).items():
            if not _public(name) or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                checked += 1
                if not _own_doc(obj):
                    missing.append(f"{module.__name__}.{name}")
            elif inspect.isclass(obj):
                checked += 1
                if not _class_doc(obj):
                    missing.append(f"{module.__name__}.{name}")
                for attr, member in vars(obj).items():
                    function = _member_function(member)
                    if not _public(attr) or function is None:
                        continue
                    checked += 1
                    if not _own_doc(function):
                        missing.append(f"{module.__name__}.{name}.{attr}")
    return missing, checked


def test_every_public_name_of_cdc_api_has_a_docstring() -> None:
    missing, checked = undocumented()
    assert checked > 100  # the walk found the package's names
    assert not missing, f"{len(missing)} of {checked} public names of cdc.api have no docstring:\n" + "\n".join(missing)


def test_the_rule_sees_generated_and_inherited_docstrings_as_missing() -> None:
    from dataclasses import dataclass
    from typing import NamedTuple

    @dataclass
    class Generated:
        x: int

    class Tuple(NamedTuple):
        x: int

    class Base:
        def run(self) -> None:
            """Documented here."""

    class Override(Base):
        def run(self) -> None:
            pass

    assert not _class_doc(Generated)
    assert not _class_doc(Tuple)
    assert _own_doc(Base.run)
    assert not _own_doc(Override.run)
    assert inspect.getdoc(Override().run) == "Documented here."  # what the rule refuses to count

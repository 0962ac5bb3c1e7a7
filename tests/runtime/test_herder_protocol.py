"""Both herders satisfy the `Herder` protocol the REST layer and the CLI call (Kafka's Herder interface):
every member, with parameters a caller of the protocol may pass, by name and by position."""

from __future__ import annotations

import inspect

import pytest

from cdc.runtime.abstract_herder import AbstractHerder
from cdc.runtime.distributed.herder import DistributedHerder
from cdc.runtime.herder import Herder
from cdc.runtime.standalone import StandaloneHerder

_MEMBERS = sorted(
    name for name, value in vars(Herder).items() if inspect.isfunction(value) and not name.startswith("_")
)


def _params(function: object) -> list[inspect.Parameter]:
    return list(inspect.signature(function).parameters.values())[1:]  # without self


def test_the_protocol_lists_what_the_rest_layer_calls() -> None:
    assert {"connector_status", "validate_connector_config", "restart_connector_and_tasks", "stop"} <= set(_MEMBERS)
    assert "worker" in Herder.__annotations__


@pytest.mark.parametrize("herder", [StandaloneHerder, DistributedHerder])
@pytest.mark.parametrize("member", _MEMBERS)
def test_each_herder_accepts_every_protocol_call(herder: type, member: str) -> None:
    assert issubclass(herder, AbstractHerder) and not herder.__abstractmethods__
    wanted, have = _params(getattr(Herder, member)), _params(getattr(herder, member))
    by_name = {p.name: p for p in have}
    for i, p in enumerate(wanted):
        assert p.name in by_name, f"{herder.__name__}.{member} lacks parameter {p.name}"
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            assert have[i].name == p.name, f"{herder.__name__}.{member}: {p.name} is not in position {i}"
        if p.default is not inspect.Parameter.empty:
            assert by_name[p.name].default == p.default, f"{herder.__name__}.{member}: default of {p.name}"
    extra = [p for p in have if p.name not in {w.name for w in wanted}]
    assert all(p.default is not inspect.Parameter.empty for p in extra), f"{herder.__name__}.{member}: {extra}"

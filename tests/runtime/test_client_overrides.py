"""`connector.client.config.override.policy` decides which client overrides a connector may carry (KIP-458)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc.api.errors import ConfigException
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.worker_config import WorkerConfig
from tests.rest.conftest import make_worker

SOURCE = {"name": "src", "connector.class": "ControlledSource", "topic": "t-overrides"}


def _errors(infos: dict) -> dict[str, list[str]]:
    return {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"] if c["value"] and c["value"]["errors"]}


def test_the_default_policy_all_allows_any_override(tmp_path: Path) -> None:
    worker = make_worker(tmp_path)
    infos = worker.validate_infos({**SOURCE, "producer.override.linger.ms": "5", "consumer.override.x": "1"})
    assert infos["error_count"] == 0


def test_policy_none_refuses_every_override_and_the_connector_is_not_created(tmp_path: Path) -> None:
    worker = make_worker(tmp_path, **{"connector.client.config.override.policy": "None"})
    infos = worker.validate_infos({**SOURCE, "producer.override.linger.ms": "5"})
    assert infos["error_count"] == 1
    [message] = _errors(infos)["producer.override.linger.ms"]
    assert message.startswith("The 'None' policy does not allow 'linger.ms' to be overridden")
    herder = StandaloneHerder(worker)
    herder.start()
    try:
        with pytest.raises(ConfigException, match=r"Remove producer\.override\.linger\.ms"):
            herder.put_connector_config({**SOURCE, "producer.override.linger.ms": "5"})
        assert herder.connector_names() == []
        herder.put_connector_config(SOURCE)  # without overrides it is fine
        assert herder.connector_names() == ["src"]
    finally:
        herder.stop()


def test_policy_principal_allows_only_the_client_identity(tmp_path: Path) -> None:
    worker = make_worker(
        tmp_path,
        **{
            "connector.client.config.override.policy": (
                "org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy"
            )
        },
    )
    infos = worker.validate_infos(
        {
            **SOURCE,
            "producer.override.security.protocol": "SASL_SSL",
            "producer.override.sasl.mechanism": "PLAIN",
            "consumer.override.sasl.jaas.config": "x",
            "producer.override.acks": "1",
        }
    )
    assert list(_errors(infos)) == ["producer.override.acks"]


def test_an_unknown_policy_is_refused_with_advice() -> None:
    with pytest.raises(
        ConfigException, match=r"connector\.client\.config\.override\.policy: use All, None or Principal"
    ):
        WorkerConfig({"connector.client.config.override.policy": "Everything"})

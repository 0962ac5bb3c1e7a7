"""The worker creates its internal topics as Kafka Connect does: compacted, with its partition
counts and each topic's own `*.replication.factor` (-1: the broker's default)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from cdc.api.errors import ConfigException
from cdc.log.base import TopicSpec
from cdc.log.embedded import EmbeddedLog
from cdc.runtime.distributed.config_topic import ConfigTopic
from cdc.runtime.transport import open_offset_store, open_status_store
from cdc.runtime.worker_config import WorkerConfig


class _RecordingLog(EmbeddedLog):
    """An embedded log that remembers every topic spec it was asked to create."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.specs: dict[str, TopicSpec] = {}

    def create_topics(self, specs: Sequence[TopicSpec]) -> list[str]:
        self.specs.update({s.name: s for s in specs})
        return super().create_topics(specs)


def test_each_internal_topic_gets_its_own_replication_factor_and_kafka_connects_layout(tmp_path: Path) -> None:
    config = WorkerConfig(
        {
            "state.dir": str(tmp_path),
            "offset.storage.replication.factor": "3",
            "status.storage.replication.factor": "2",
            "config.storage.replication.factor": "4",
        }
    )
    log_ = _RecordingLog(tmp_path / "log")
    offsets, status = open_offset_store(config, log_), open_status_store(config, log_)
    configs = ConfigTopic(
        log_, config.get("config.storage.topic"), lambda: None, config.get("config.storage.replication.factor")
    )
    offsets.start()
    status.start()
    configs.start()
    try:
        layout = {
            name: (s.partitions, s.replication_factor, dict(s.config).get("cleanup.policy"))
            for name, s in log_.specs.items()
        }
        assert layout == {
            "connect-offsets": (25, 3, "compact"),
            "connect-status": (5, 2, "compact"),
            "connect-configs": (1, 4, "compact"),
        }
    finally:
        configs.stop()
        status.stop()
        offsets.stop()
        log_.close()


def test_replication_factors_default_to_the_brokers_default() -> None:
    config = WorkerConfig({})
    for key in ("offset", "status", "config"):
        assert config.get(f"{key}.storage.replication.factor") == -1


@pytest.mark.parametrize("key", ["offset", "status", "config"])
def test_a_replication_factor_of_zero_is_refused_with_advice(key: str) -> None:
    with pytest.raises(ConfigException, match=rf"{key}\.storage\.replication\.factor: use -1 .*at least 1"):
        WorkerConfig({f"{key}.storage.replication.factor": "0"})


def test_a_config_topic_with_several_partitions_is_refused(tmp_path: Path) -> None:
    """Kafka Connect refuses it too: configs are only ordered within one partition."""
    log_ = EmbeddedLog(str(tmp_path))
    log_.create_topics([TopicSpec("shared-configs", 3, config={"cleanup.policy": "compact"})])
    topic = ConfigTopic(log_, "shared-configs", lambda: None)
    try:
        with pytest.raises(ConfigException, match=r"'shared-configs'.*single partition.*found 3 partitions") as e:
            topic.start()
        assert e.value.name == "config.storage.topic"
    finally:
        log_.close()

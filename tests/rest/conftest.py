from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cdc.rest.server import RestServer
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from tests.rest.connectors import ControlledSource, ControlledTask
from tests.runtime.connectors import CollectingSink, GeneratorSource


def wait_until(cond: Callable[[], Any], timeout: float = 20, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = cond()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def make_worker(tmp_path: Path, **extra: str) -> Worker:
    ControlledSource.instances.clear()
    ControlledTask.failures_left.clear()
    config = WorkerConfig(
        {
            "transport": "embedded",
            "state.dir": str(tmp_path / "state"),
            "offset.flush.interval.ms": "100",
            "listeners": "http://127.0.0.1:0",
            **extra,
        }
    )
    registry = PluginRegistry.discover()
    for cls in (GeneratorSource, CollectingSink, ControlledSource):
        registry.add(cls, "1.0", "test")
    log_ = open_log(config)
    return Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_), "w1")


class Rest:
    """A running standalone herder with its REST API, and an HTTP client for it."""

    def __init__(self, tmp_path: Path, **worker_props: str) -> None:
        self.worker = make_worker(tmp_path, **worker_props)
        self.herder = StandaloneHerder(self.worker, tick_interval=0.05)
        self.server = RestServer(self.worker.config, self.herder, cluster_id="test-cluster")
        self.herder.start()
        self.server.start()
        self.url = self.server.url
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def close(self) -> None:
        self.http.close()
        self.server.stop()
        self.herder.stop()

    def state(self, name: str) -> dict[str, Any]:
        return self.http.get(f"/connectors/{name}/status").json()


@pytest.fixture
def rest(tmp_path: Path) -> Iterator[Rest]:
    r = Rest(tmp_path)
    yield r
    r.close()


def controlled(name: str = "ctl", **extra: str) -> dict[str, Any]:
    return {"name": name, "config": {"connector.class": "ControlledSource", "topic": f"{name}.out", **extra}}

"""In-process distributed workers on a real broker, each with its own REST API."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx

from cdc.rest.server import RestServer
from cdc.runtime.distributed.herder import DistributedHerder
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from tests.rest.connectors import ControlledSource
from tests.runtime.connectors import CollectingSink, GeneratorSource


def cluster_props(bootstrap: str, **extra: str) -> dict[str, str]:
    run = uuid.uuid4().hex[:8]
    return {
        "transport": "kafka",
        "bootstrap.servers": bootstrap,
        "group.id": f"connect-{run}",
        "config.storage.topic": f"configs-{run}",
        "offset.storage.topic": f"offsets-{run}",
        "offset.storage.partitions": "6",
        "status.storage.topic": f"status-{run}",
        "listeners": "http://127.0.0.1:0",
        "scheduled.rebalance.max.delay.ms": "2000",
        "offset.flush.interval.ms": "200",
        **extra,
    }


class Member:
    def __init__(self, props: dict[str, str], before_start: Callable[[Member], None] | None = None) -> None:
        config = WorkerConfig(props)
        registry = PluginRegistry.discover()
        for cls in (GeneratorSource, CollectingSink, ControlledSource):
            registry.add(cls, "1.0", "test")
        log_ = open_log(config)
        self.worker = Worker(
            config, registry, log_, open_offset_store(config, log_, True), open_status_store(config, log_)
        )
        self.herder = DistributedHerder(self.worker)
        self.rest = RestServer(config, self.herder)
        self.rest.start()
        self.worker.worker_id = self.worker.reporter.worker_id = self.rest.url.removeprefix("http://")
        if before_start is not None:
            before_start(self)
        self.herder.start(self.rest.url)
        self.http = httpx.Client(base_url=self.rest.url, timeout=60)

    def state(self, name: str) -> Any:
        return self.http.get(f"/connectors/{name}/status").json()

    def close(self) -> None:
        if self.http.is_closed:
            return
        self.http.close()
        self.herder.stop()
        self.rest.stop()

"""A standalone worker as `cdc standalone` builds it (with its ConfigTransformer) behind the real REST API.

(Helpers for the provider, path and file-mode tests of issue 17; not a conftest, so that the
other helpers' files in tests/security stay independent.)
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cdc.config.providers import ConfigTransformer
from cdc.rest.server import RestServer
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from tests.rest.connectors import ControlledSource
from tests.security.connectors import QuotingSource


class SecureRest:
    """`cdc standalone`'s wiring in-process: worker props resolved by providers, the herder
    given the transformer, the REST API on a free loopback port."""

    def __init__(self, tmp_path: Path, **props: str) -> None:
        raw = {
            "transport": "embedded",
            "state.dir": str(tmp_path / "state"),
            "offset.flush.interval.ms": "100",
            "listeners": "http://127.0.0.1:0",
            **props,
        }
        self.transformer = ConfigTransformer.from_worker_config(raw)
        config = WorkerConfig(self.transformer.transform(raw).data)
        registry = PluginRegistry.discover()
        for cls in (ControlledSource, QuotingSource):
            registry.add(cls, "1.0", "test")
        log_ = open_log(config)
        self.worker = Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_))
        self.herder = StandaloneHerder(self.worker, self.transformer, tick_interval=0.05)
        self.server = RestServer(config, self.herder, cluster_id="test-cluster")
        self.herder.start()
        self.server.start()
        self.http = httpx.Client(base_url=self.server.url, timeout=30)

    def close(self) -> None:
        self.http.close()
        self.server.stop()
        self.herder.stop()
        self.transformer.close()

    def state(self, name: str) -> dict[str, Any]:
        return self.http.get(f"/connectors/{name}/status").json()

    def every_response(self, name: str) -> str:
        """Everything the REST API says about connector `name` (and the connector list)."""
        paths = ["/connectors", "/connectors?expand=status&expand=info"]
        paths += [f"/connectors/{name}{p}" for p in ("", "/config", "/status", "/tasks", "/tasks/0/status")]
        return "\n".join(self.http.get(p).text for p in paths)


@contextlib.contextmanager
def secure_rest(tmp_path: Path, **props: str) -> Iterator[SecureRest]:
    rest = SecureRest(tmp_path, **props)
    try:
        yield rest
    finally:
        rest.close()


def capture_everything(caplog: pytest.LogCaptureFixture) -> None:
    """Every log record, DEBUG included (what a worker run with --log-level DEBUG would print)."""
    caplog.set_level(logging.DEBUG)


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    """Every captured record as the log would print it, with its exception trace."""
    formatter = logging.Formatter()
    return "\n".join(formatter.format(r) for r in caplog.records)


def quoting(name: str, **extra: str) -> dict[str, Any]:
    return {"name": name, "config": {"connector.class": "QuotingSource", "topic": f"{name}.out", **extra}}

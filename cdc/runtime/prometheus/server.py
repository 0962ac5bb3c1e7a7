"""`metrics.port`: the worker's Prometheus metrics on a port of their own.

prometheus_client's `start_http_server` (a WSGI server on a daemon thread) serves the worker's
registry; it answers any path with the exposition, as the JMX exporter agent does. The REST
listener's `GET /metrics` serves the same registry behind the REST guards; this port has no
auth, so it listens on loopback unless `metrics.host` says otherwise (the exposition holds
names, states and counts: no config value, no secret).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from prometheus_client import start_http_server
from prometheus_client.registry import Collector

from cdc.api.errors import ConfigException
from cdc.runtime.prometheus import worker_registry
from cdc.runtime.worker_config import WorkerConfig

log = logging.getLogger(__name__)


class MetricsServer:
    def __init__(self, server: Any, thread: threading.Thread, host: str) -> None:
        self._server = server
        self._thread = thread
        self.host = host
        self.port: int = server.server_port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def start_metrics_server(config: WorkerConfig, herder: Any, *collectors: Collector) -> MetricsServer | None:
    """Serve `herder`'s worker metrics on `metrics.port`, or None when the key is unset.
    `collectors`: more metrics in the same exposition (`cdc run` adds its sink's)."""
    port = config.get("metrics.port")
    if port is None:
        return None
    host = config.get("metrics.host")
    registry = worker_registry(herder)
    for collector in collectors:
        registry.register(collector)
    try:
        server, thread = start_http_server(port, host, registry=registry)
    except OSError as e:
        raise ConfigException(
            f"metrics.port: cannot listen on {host}:{port} ({e.strerror}): another process may be using it; "
            "set metrics.port to a free port (0 picks one)",
            "metrics.port",
        ) from None
    metrics = MetricsServer(server, thread, host)
    log.info("Prometheus metrics on %s", metrics.url)
    return metrics

"""`metrics.port`: the worker's Prometheus metrics on a port of their own.

A WSGI server on a daemon thread serves the worker's registry with prometheus_client's
exposition (text or OpenMetrics by `Accept`, gzip, `name[]` filters). The REST listener's
`GET /metrics` serves the same registry behind the REST guards; this port has no auth, so it
listens on loopback unless `metrics.host` says otherwise (the exposition holds names, states
and counts: no config value, no secret).

prometheus_client's own `start_http_server` answers every path with the exposition and any
Host header, so a web page whose name is re-pointed to 127.0.0.1 (DNS rebinding) could read it.
This one answers `/metrics` only (404 elsewhere) and applies the REST API's Host rule
(cdc.runtime.host_policy) with `metrics.host` as the listener and `rest.allowed.hosts` as the
extra names: 421 for any other name, 400 for a malformed Host. Errors are Kafka's one-line
`{"error_code", "message"}`, as the REST API's are.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.registry import Collector

from cdc.api.errors import ConfigException
from cdc.runtime.host_policy import HostPolicy, host_refusal
from cdc.runtime.prometheus import worker_registry
from cdc.runtime.worker_config import WorkerConfig

log = logging.getLogger(__name__)

METRICS_PATH = "/metrics"
_LOCAL_ADDRESS = "cdc.local_address"  # the WSGI environ key of the address the client connected to
_HOST_ADVICE = "call it by metrics.host or localhost, or add the name to rest.allowed.hosts"
_REASONS = {400: "Bad Request", 404: "Not Found", 421: "Misdirected Request"}

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Handler(WSGIRequestHandler):
    """Silent (no access log on stderr), and tells the app which local address was reached."""

    def log_message(self, format: str, *args: Any) -> None:
        """No line per request: a scraper calls every few seconds."""

    def get_environ(self) -> dict[str, Any]:
        environ: dict[str, Any] = super().get_environ()
        try:
            environ[_LOCAL_ADDRESS] = str(self.connection.getsockname()[0])
        except OSError:
            environ[_LOCAL_ADDRESS] = None
        return environ


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    """A thread per request; the threads are daemons, so a stuck scraper never holds shutdown."""

    daemon_threads = True


def _error(start_response: Callable[..., Any], status: int, message: str) -> list[bytes]:
    body = json.dumps({"error_code": status, "message": message}).encode()
    start_response(
        f"{status} {_REASONS.get(status, 'Error')}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
    )
    return [body]


def metrics_app(registry: Collector, hosts: HostPolicy) -> WsgiApp:
    """The WSGI app of the metrics port: the Host rule first, then `/metrics` only."""
    exposition = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refusal = host_refusal(hosts, environ.get("HTTP_HOST"), environ.get(_LOCAL_ADDRESS), _HOST_ADVICE)
        if refusal is not None:
            return _error(start_response, *refusal)
        if environ.get("PATH_INFO") != METRICS_PATH:
            return _error(start_response, 404, f"HTTP 404 Not Found: the metrics are at {METRICS_PATH}")
        result: Iterable[bytes] = exposition(environ, start_response)
        return result

    return app


class MetricsServer:
    def __init__(self, server: Any, thread: threading.Thread, host: str) -> None:
        self._server = server
        self._thread = thread
        self.host = host
        self.port: int = server.server_port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{METRICS_PATH}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _serve(app: WsgiApp, host: str, port: int) -> tuple[WSGIServer, threading.Thread]:
    """`app` on host:port (IPv4 or IPv6, as the host's first address is) on a daemon thread."""
    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    server_class = type("MetricsWSGIServer", (_ThreadingServer,), {"address_family": family})
    server = make_server(str(sockaddr[0]), port, app, server_class, handler_class=_Handler)
    thread = threading.Thread(target=server.serve_forever, name="cdc-metrics", daemon=True)
    thread.start()
    return server, thread


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
    hosts = HostPolicy.build([host], None, config.get("rest.allowed.hosts") or ())
    try:
        server, thread = _serve(metrics_app(registry, hosts), host, port)
    except OSError as e:
        raise ConfigException(
            f"metrics.port: cannot listen on {host}:{port} ({e.strerror}): another process may be using it; "
            "set metrics.port to a free port (0 picks one)",
            "metrics.port",
        ) from None
    metrics = MetricsServer(server, thread, host)
    log.info("Prometheus metrics on %s", metrics.url)
    return metrics

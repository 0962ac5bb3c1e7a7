"""Serve the REST API with uvicorn on a background thread, bound as `listeners` says."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from cdc.rest.app import create_app
from cdc.rest.auth import BasicAuthMiddleware, load_credentials
from cdc.runtime.worker_config import WorkerConfig

log = logging.getLogger(__name__)


class RestBindError(Exception):
    pass


def parse_listener(listener: str) -> tuple[str, int]:
    """`http://host:port` -> (host, port); an empty host means loopback here, unlike Kafka."""
    parts = urlsplit(listener if "://" in listener else f"http://{listener}")
    if parts.scheme != "http":
        raise RestBindError(f"listeners: {listener!r} uses {parts.scheme}; only http:// listeners are supported")
    try:
        port = parts.port if parts.port is not None else 8083
    except ValueError:
        raise RestBindError(f"listeners: {listener!r} has an invalid port") from None
    return parts.hostname or "127.0.0.1", port


class RestServer:
    def __init__(self, config: WorkerConfig, herder: Any, cluster_id: str = "") -> None:
        listeners = [x for x in config.get("listeners") if x]
        if not listeners:
            raise RestBindError("listeners is empty: set e.g. listeners=http://127.0.0.1:8083")
        self.host, self.port = parse_listener(listeners[0])
        self.app = create_app(herder, cluster_id=cluster_id)
        credentials_file = config.get("rest.basic.auth.credentials.file")
        if credentials_file:
            self.app.add_middleware(BasicAuthMiddleware, credentials=load_credentials(credentials_file))
        self._advertised_host = config.get("rest.advertised.host.name")
        self._advertised_port = config.get("rest.advertised.port")
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as e:
            sock.close()
            raise RestBindError(
                f"REST API cannot listen on {self.host}:{self.port} ({e.strerror}): another worker may be using it; "
                "set listeners=http://127.0.0.1:<free port> in the worker properties (port 0 picks one)"
            ) from e
        sock.listen(128)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[sock])),  # type: ignore[union-attr]
            name="rest-server",
            daemon=True,
        )
        self._thread.start()
        log.info("REST API listening on %s", self.url)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def advertised_url(self) -> str:
        """What other workers use to forward requests here."""
        host = self._advertised_host or (self.host if self.host not in ("0.0.0.0", "::") else socket.gethostname())
        return f"http://{host}:{self._advertised_port or self.port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)

"""Serve the REST API with uvicorn on a background thread, on every `listeners` entry.

As Kafka Connect's RestServer: `http://` and `https://` listeners (TLS from the
`listeners.https.ssl.*` / `ssl.*` keys, see cdc.rest.tls), basic auth from
BasicAuthSecurityRestExtension's JAAS file or `rest.basic.auth.credentials.file`, CORS from
`access.control.allow.*`, and the advertised URL other workers forward requests to. Ahead of
Kafka, the Host allow-list, cross-site write refusal and body limit of cdc.rest.guards.

`bind()` opens every listening socket, so a taken port fails the worker before anything starts
(`cdc standalone` and `cdc worker` exit with one line); `start()` serves and returns once every
listener answers.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.middleware.cors import CORSMiddleware

from cdc.rest.app import create_app
from cdc.rest.auth import BasicAuthMiddleware
from cdc.rest.guards import BodyLimitMiddleware, CrossSiteWriteMiddleware, HostAllowListMiddleware
from cdc.rest.settings import Listener, RestBindError, RestSettings, parse_listener, parse_listener_url
from cdc.runtime.herder import Herder
from cdc.runtime.worker_config import WorkerConfig

__all__ = ["RestBindError", "RestServer", "parse_listener", "parse_listener_url"]

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 30.0


def install_security(app: Any, settings: RestSettings) -> None:
    """The guards and auth, outermost last: Host, CORS, cross-site writes, body size, auth."""
    if settings.credentials is not None:
        app.add_middleware(BasicAuthMiddleware, credentials=settings.credentials)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(CrossSiteWriteMiddleware, cors=settings.cors)
    if settings.cors.enabled:
        # Jetty's CrossOriginFilter as Kafka installs it: only when access.control.allow.origin is set.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=["*"] if "*" in settings.cors.origins else [o for o in settings.cors.origins if "*" not in o],
            allow_origin_regex="|".join(settings.cors.regexes) or None,
            allow_methods=list(settings.cors.methods),
            allow_headers=["X-Requested-With", "Content-Type", "Accept", "Origin", "Authorization"],
            allow_credentials=True,
        )
    app.add_middleware(HostAllowListMiddleware, policy=settings.hosts)


class RestServer:
    def __init__(self, config: WorkerConfig, herder: Herder, cluster_id: str = "") -> None:
        self.settings = RestSettings.from_worker_config(config)
        self.listeners: tuple[Listener, ...] = self.settings.listeners
        self.app = create_app(herder, cluster_id=cluster_id, forward_ssl=self.settings.client_ssl)
        install_security(self.app, self.settings)
        self._sockets: list[socket.socket] = []
        self._ports: list[int] = [x.port for x in self.listeners]
        self._servers: list[uvicorn.Server] = []
        self._thread: threading.Thread | None = None
        # A request still running when the worker stops is cancelled after this (the registry's
        # routes stop their check on cancel), so no handler holds up shutdown.
        self._graceful_s = max(1.0, int(config.get("task.shutdown.graceful.timeout.ms") or 5000) / 1000)

    # -- the first listener, as before several were served ------------------------------------
    @property
    def host(self) -> str:
        return self.listeners[0].host

    @property
    def port(self) -> int:
        return self._ports[0]

    @property
    def url(self) -> str:
        return self.urls[0]

    @property
    def urls(self) -> list[str]:
        return [x.url(port) for x, port in zip(self.listeners, self._ports, strict=True)]

    @property
    def advertised_url(self) -> str:
        """What other workers use to forward requests here (Kafka's RestServer.advertisedUrl)."""
        scheme = self.settings.advertised_scheme
        index = next(i for i, x in enumerate(self.listeners) if x.scheme == scheme)
        listener = self.listeners[index]
        host = self.settings.advertised_host or (
            listener.host if listener.host not in ("0.0.0.0", "::") else socket.gethostname()
        )
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{self.settings.advertised_port or self._ports[index]}"

    def bind(self) -> None:
        """Open every listener's socket; RestBindError (one line) if one cannot be."""
        if self._sockets:
            return
        try:
            for i, listener in enumerate(self.listeners):
                sock = self._bind(listener)
                self._sockets.append(sock)
                self._ports[i] = sock.getsockname()[1]
        except RestBindError:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()
            raise
        for listener in self.settings.exposed_without_auth():
            log.warning(
                "REST API on %s is reachable beyond this machine without authentication: anyone who can connect "
                "can create, change and delete connectors. Turn on basic auth (rest.extension.classes="
                "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension with "
                "java.security.auth.login.config, or rest.basic.auth.credentials.file), or ssl.client.auth=required "
                "on an https listener, or listen on 127.0.0.1",
                listener.url(),
            )

    @staticmethod
    def _bind(listener: Listener) -> socket.socket:
        family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((listener.host, listener.port))
            sock.listen(128)
        except OSError as e:
            sock.close()
            raise RestBindError(
                f"REST API cannot listen on {listener.url()} ({e.strerror}): another process may be using it; "
                f"set listeners={listener.scheme}://127.0.0.1:<free port> in the worker properties (port 0 picks one)"
            ) from e
        return sock

    def start(self) -> None:
        """Serve on every listener; returns once they all accept requests."""
        self.bind()
        for listener in self.listeners:
            config = uvicorn.Config(
                self.app,
                log_level="warning",
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=self._graceful_s,
                # uvicorn's loggers go through the worker's handlers (cdc.runtime.logging_context),
                # whose formatter escapes control characters, instead of a handler of its own.
                log_config=None,
            )
            config.load()
            if listener.scheme == "https":
                config.ssl = self.settings.server_ssl
            self._servers.append(uvicorn.Server(config))
        failure: list[BaseException] = []

        async def serve_all() -> None:
            await asyncio.gather(
                *(server.serve(sockets=[sock]) for server, sock in zip(self._servers, self._sockets, strict=True))
            )

        def run() -> None:
            try:
                asyncio.run(serve_all())
            except BaseException as e:  # reported by start(), not lost in the thread
                failure.append(e)

        self._thread = threading.Thread(target=run, name="rest-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not all(s.started for s in self._servers):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                reason = f"{type(failure[0]).__name__}: {failure[0]}" if failure else "it did not start in time"
                raise RestBindError(f"REST API could not start on {', '.join(self.urls)} ({reason})")
            time.sleep(0.02)
        log.info("REST API listening on %s", ", ".join(self.urls))

    def stop(self) -> None:
        for server in self._servers:
            server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        for sock in self._sockets:
            sock.close()

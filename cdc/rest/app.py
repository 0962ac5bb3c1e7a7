"""The Kafka Connect REST API over a herder: same paths, JSON shapes and status codes.

Bodies are parsed by hand rather than by pydantic models so that malformed JSON, wrong
types and missing fields all come back as Kafka's `{"error_code", "message"}` with advice
(cdc.rest.requests). Herder calls block (stopping a task waits for it), so they run on the
thread pool. The routes live in cdc.rest.resources, one module per Kafka Connect resource.
"""

from __future__ import annotations

import ssl

from fastapi import FastAPI

from cdc import __version__
from cdc.rest.errors import install_error_handlers
from cdc.rest.forward import install_forwarding
from cdc.rest.http_compat import JerseyCompatMiddleware
from cdc.rest.resources.connector_plugins import connector_plugins_router
from cdc.rest.resources.connectors import connectors_router
from cdc.rest.resources.loggers import loggers_router
from cdc.rest.resources.metrics import metrics_router
from cdc.rest.resources.root import root_router
from cdc.rest.resources.schema_registry import install_schema_registry
from cdc.rest.resources.signals import signals_router
from cdc.runtime.herder import Herder


def create_app(
    herder: Herder,
    *,
    cluster_id: str = "",
    title: str = "cdc Connect REST API",
    forward_ssl: ssl.SSLContext | None = None,
) -> FastAPI:
    """Build the app over a `Herder` (a StandaloneHerder or a DistributedHerder). `forward_ssl` is the
    TLS context for requests forwarded to https workers (cdc.rest.tls.client_context).
    The security guards are cdc.rest.server.install_security's."""
    app = FastAPI(title=title, version=__version__, docs_url="/docs", redoc_url=None)
    app.add_middleware(
        JerseyCompatMiddleware, exempt=frozenset({"/docs", "/docs/oauth2-redirect", "/openapi.json", "/metrics"})
    )
    install_error_handlers(app)
    install_forwarding(app, forward_ssl)
    app.include_router(root_router(cluster_id))
    app.include_router(connector_plugins_router(herder))
    app.include_router(connectors_router(herder))
    app.include_router(signals_router(herder))
    app.include_router(loggers_router())
    app.include_router(metrics_router(herder))
    # transport=embedded: Confluent's Schema Registry API over the log's own registry
    registry = getattr(getattr(herder, "worker", None), "schema_registry", lambda: None)()
    if registry is not None:
        install_schema_registry(app, registry)
    return app

"""`GET /metrics`: the worker's Prometheus metrics in the text exposition format (cdc extension).

Kafka Connect has no such resource (its metrics are MBeans, exported by a JMX-exporter agent);
here the same names come out of the REST listener, behind the same guards and basic auth as
every other resource (cdc.rest.server.install_security). The format is negotiated from the
`Accept` header by prometheus_client (OpenMetrics when the scraper asks for it, else text 0.0.4).
The handler is synchronous, so the scrape runs on the thread pool, not the event loop.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client.exposition import choose_encoder

from cdc.runtime.herder import Herder
from cdc.runtime.prometheus import worker_registry


def metrics_router(herder: Herder) -> APIRouter:
    registry = worker_registry(herder)
    router = APIRouter()

    @router.get("/metrics", summary="The worker's Prometheus metrics (cdc extension)", response_class=Response)
    def metrics(request: Request) -> Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(content=encoder(registry), media_type=content_type)

    return router

"""Kafka Connect's LoggingResource (KIP-495): logger levels at runtime."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from cdc.rest.loggers import Loggers
from cdc.rest.requests import LEVEL_BODY, json_body


def loggers_router() -> APIRouter:
    """`/admin/loggers…`: this worker's loggers only."""
    router = APIRouter()
    loggers = Loggers()

    @router.get("/admin/loggers", summary="Loggers with an explicit level")
    async def list_loggers() -> dict[str, Any]:
        return loggers.all()

    @router.get("/admin/loggers/{logger}", summary="One logger's level")
    async def get_logger(logger: str) -> dict[str, Any]:
        return loggers.level(logger)

    @router.put(
        "/admin/loggers/{logger}", summary="Set a logger's level (and its children's)", openapi_extra=LEVEL_BODY
    )
    async def set_logger(logger: str, request: Request) -> Any:
        body = await json_body(request)
        level = body.get("level") if isinstance(body, Mapping) else None
        affected = loggers.set_level(logger, level)
        # Kafka: scope=cluster answers 204; any other scope falls back to worker (200, the loggers changed).
        # Only this worker's loggers change: the herders do not share levels across the cluster.
        if (request.query_params.get("scope") or "worker").lower() == "cluster":
            return Response(status_code=204)
        return affected

    return router

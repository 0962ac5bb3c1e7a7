"""Kafka Connect's RootResource: the worker's version and health."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from cdc import __version__


def root_router(cluster_id: str) -> APIRouter:
    """`GET /` and `GET /health`."""
    router = APIRouter()

    @router.get("/", summary="Worker version and Kafka cluster id")
    async def server_info() -> dict[str, Any]:
        return {"version": __version__, "commit": "", "kafka_cluster_id": cluster_id}

    @router.get("/health", summary="Whether the worker is ready to handle requests")
    async def health() -> dict[str, str]:
        return {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}

    return router

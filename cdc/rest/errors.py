"""Kafka Connect's error body `{"error_code": <http status>, "message": "..."}` for every failure."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from cdc.api.errors import ConfigException
from cdc.runtime.herder import HerderError

log = logging.getLogger(__name__)

_REASONS = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict"}


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error_code": status, "message": message}, status_code=status, headers=headers)


class RestError(Exception):
    """Raised by resources for request-level problems (malformed JSON, bad parameters)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RestError)
    async def _rest(request: Request, exc: RestError) -> JSONResponse:
        return error_response(exc.status, str(exc))

    @app.exception_handler(HerderError)
    async def _herder(request: Request, exc: HerderError) -> JSONResponse:
        return error_response(exc.status, str(exc))

    @app.exception_handler(ConfigException)
    async def _config(request: Request, exc: ConfigException) -> JSONResponse:
        return error_response(400, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Jersey's wording for unknown paths and methods, which clients match on.
        message = f"HTTP {exc.status_code} {_REASONS.get(exc.status_code, '')}".strip()
        if exc.detail and exc.detail not in ("Not Found", "Method Not Allowed"):
            message = str(exc.detail)
        return error_response(exc.status_code, message, getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error_response(400, f"Invalid request parameter {where}: {first.get('msg', 'invalid value')}")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("Uncaught exception in REST call to %s", request.url.path, exc_info=exc)
        return error_response(500, f"{type(exc).__name__}: {exc}")

"""Distributed mode: a request this worker cannot serve goes to the worker that can.

Config writes go to the leader; a task restart goes to the worker running the task. As in
Kafka Connect, a forwarded request is never forwarded again: if its target cannot serve it
either (a rebalance moved things), the client gets 409 and retries.
"""

from __future__ import annotations

import ssl

import httpx
from fastapi import FastAPI, Request, Response

from cdc.rest.errors import error_response
from cdc.runtime.herder import ForwardRequired

FORWARDED = "X-Cdc-Forwarded"
_PASSED = ("content-type", "authorization", "accept")


def install_forwarding(app: FastAPI, ssl_context: ssl.SSLContext | None = None) -> None:
    """Forward to the URL a ForwardRequired names; https peers are checked with `ssl_context`
    (the worker's truststore, and its keystore for peers that require a client certificate)."""
    verify: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True

    @app.exception_handler(ForwardRequired)
    async def _forward(request: Request, exc: ForwardRequired) -> Response:
        if exc.url is None or request.headers.get(FORWARDED):
            return error_response(409, str(exc))
        body = getattr(request.state, "raw_body", b"")
        headers = {k: v for k, v in request.headers.items() if k.lower() in _PASSED}
        headers[FORWARDED] = "1"
        # The path as the client encoded it: a decoded name ("a%2Fb", "50%25") would reach another connector.
        raw_path = request.scope.get("raw_path")
        path = raw_path.decode("latin-1") if isinstance(raw_path, bytes) else request.url.path
        try:
            async with httpx.AsyncClient(timeout=60, verify=verify) as client:
                r = await client.request(
                    request.method,
                    exc.url.rstrip("/") + path,
                    params=list(request.query_params.multi_items()),
                    content=body,
                    headers=headers,
                )
        except httpx.HTTPError as e:
            return error_response(
                409, f"Could not forward the request to {exc.url} ({e}); a rebalance is probably in progress, retry"
            )
        passed = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "location")}
        return Response(r.content, status_code=r.status_code, headers=passed)

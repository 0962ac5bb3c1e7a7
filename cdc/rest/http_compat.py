"""HTTP-level behaviour of Kafka Connect's Jersey resources that FastAPI does differently.

- A trailing slash is served, not redirected: Jersey matches `/connectors/` like `/connectors`,
  whereas Starlette answers 307, which curl (without -L) and most scripts do not follow.
- An encoded slash stays inside its segment: Jersey matches on the encoded path, so a connector
  named `a/b` is `/connectors/a%2Fb`; Starlette decodes first and would see two segments. Routes
  spell such a parameter `{name:segment}`.
- HEAD is answered like GET without a body, as JAX-RS does for every GET resource.
- Every resource `@Produces(application/json)`: an `Accept` header that rules JSON out gets
  Jersey's 406, and every resource `@Consumes(application/json)`: a request body sent with
  another `Content-Type` (curl -d sends application/x-www-form-urlencoded) gets 415. A missing
  `Content-Type` is accepted, as Jersey does. This holds for writes without a body too
  (`POST …/restart`), as Jersey matches the class-level `@Consumes` there as well: so a
  browser form or `text/plain` fetch from another site cannot restart a connector.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from starlette.convertors import Convertor, register_url_convertor
from starlette.types import ASGIApp, Receive, Scope, Send

from cdc.rest.errors import RestError, error_response

_JSON = "application/json"
_ACCEPTS_JSON = frozenset({"*/*", "application/*", _JSON})
# Stands for an encoded slash inside one path segment between the middleware and routing
# (a Unicode noncharacter: never in a connector name).
_SLASH = "\uffff"
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class SegmentConvertor(Convertor[str]):
    """One path segment, in which an encoded slash is a literal `/`."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return value.replace(_SLASH, "/")

    def to_string(self, value: str) -> str:
        return value.replace("/", _SLASH)


register_url_convertor("segment", SegmentConvertor())


def _decoded_path(raw: bytes) -> str:
    """`scope["path"]` from the raw path, decoding each segment alone so %2F does not split it."""
    segments = raw.decode("latin-1").split("/")
    return "/".join(unquote(segment).replace("/", _SLASH) for segment in segments)


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def accepts_json(accept: str) -> bool:
    """Whether an `Accept` header admits application/json (absent or empty admits everything)."""
    if not accept.strip():
        return True
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media.lower() in _ACCEPTS_JSON and q > 0:
            return True
    return False


def check_json_content_type(content_type: str | None) -> None:
    """Raise Jersey's 415 for a body declared as something other than JSON."""
    if content_type and _media_type(content_type) != _JSON:
        raise RestError(
            415,
            f"HTTP 415 Unsupported Media Type: the body was sent as {_media_type(content_type)}; "
            "send JSON with the header Content-Type: application/json",
        )


class JerseyCompatMiddleware:
    """Routes HEAD, %2F and a trailing slash as Jersey does, and enforces `Accept` (not on `exempt` paths)."""

    def __init__(self, app: ASGIApp, exempt: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = dict(scope)  # a copy: the server still knows a HEAD request and sends no body
        if scope.get("method") == "HEAD":
            scope["method"] = "GET"
        raw: Any = scope.get("raw_path")
        if isinstance(raw, bytes) and b"%2f" in raw.lower():
            scope["path"] = _decoded_path(raw)
        path: str = scope["path"]
        if len(path) > 1 and path.endswith("/"):
            scope["path"] = path[:-1]
            if isinstance(raw, bytes) and raw.endswith(b"/"):
                scope["raw_path"] = raw[:-1]
        if scope.get("method") in _WRITES:
            headers = scope.get("headers", ())
            content_type = next((v.decode("latin-1") for k, v in headers if k == b"content-type"), None)
            try:
                check_json_content_type(content_type)
            except RestError as e:
                await error_response(e.status, str(e))(scope, receive, send)
                return
        if scope["path"] not in self.exempt:
            accept = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"accept"), "")
            if not accepts_json(accept):
                response = error_response(
                    406, f"HTTP 406 Not Acceptable: this API only produces {_JSON}, but Accept was {accept!r}"
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

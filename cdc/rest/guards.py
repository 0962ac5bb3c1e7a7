"""Request guards in front of the REST API: Host allow-list, cross-site writes, body size.

Kafka Connect has none of these (Jetty answers any Host, and the only cross-origin control is
CORS headers). They are what a REST API on a developer's machine needs against a web page:
- **Host allow-list** (DNS rebinding): a page on `evil.example` whose name is re-pointed to
  127.0.0.1 sends `Host: evil.example`. Only the listeners' hosts, `rest.advertised.host.name`,
  localhost / 127.0.0.1 / ::1, `rest.allowed.hosts` and, for a wildcard listener (0.0.0.0, ::),
  the machine's names and the address the client connected to are answered; others get 421.
  The rule is cdc.runtime.host_policy's, which the `metrics.port` listener applies too.
- **Cross-site writes** (CSRF): browsers send a "simple" POST (no preflight) to any site; a
  body-less `POST /connectors/x/restart` needs nothing more. A write (POST, PUT, PATCH, DELETE)
  whose `Origin` (or `Sec-Fetch-Site`) says another site is refused with 403 unless CORS
  (`access.control.allow.origin` / `access.control.allow.methods`) allows that origin and method.
- **Body size** (`rest.request.max.bytes`): a larger body gets 413 before it is read whole.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cdc.rest.errors import error_response
from cdc.runtime.host_policy import HostPolicy, host_refusal, split_authority

__all__ = [
    "BodyLimitMiddleware",
    "CorsPolicy",
    "CrossSiteWriteMiddleware",
    "HostAllowListMiddleware",
    "HostPolicy",
]

_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_CORS_METHODS = ("GET", "POST", "HEAD")  # Jetty CrossOriginFilter's default


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


class HostAllowListMiddleware:
    """421 with one JSON line for a Host header the worker does not serve (DNS rebinding)."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        server = scope.get("server")
        refusal = host_refusal(
            self.policy,
            _header(scope, b"host"),
            str(server[0]) if server else None,
            "call it by a listeners host, rest.advertised.host.name or localhost, "
            "or add the name to rest.allowed.hosts",
        )
        if refusal is not None:
            await error_response(*refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)


@dataclass(frozen=True)
class CorsPolicy:
    """Kafka's `access.control.allow.origin` (comma-separated, `*` any, `*` inside a name any
    characters, as Jetty's CrossOriginFilter) and `access.control.allow.methods`."""

    origins: tuple[str, ...] = ()
    methods: tuple[str, ...] = _DEFAULT_CORS_METHODS
    regexes: tuple[str, ...] = ()  # patterns of the origins that contain `*`

    @classmethod
    def build(cls, allow_origin: str | None, allow_methods: str | None) -> CorsPolicy:
        origins = tuple(o.strip() for o in (allow_origin or "").split(",") if o.strip())
        methods = tuple(m.strip().upper() for m in (allow_methods or "").split(",") if m.strip())
        regexes = tuple(
            "(?i:" + ".*".join(re.escape(part) for part in o.split("*")) + ")" for o in origins if "*" in o and o != "*"
        )
        return cls(origins, methods or _DEFAULT_CORS_METHODS, regexes)

    @property
    def enabled(self) -> bool:
        return bool(self.origins)

    def allows(self, origin: str, method: str) -> bool:
        if not self.enabled or method.upper() not in self.methods:
            return False
        return origin in self.origins or "*" in self.origins or any(re.fullmatch(r, origin) for r in self.regexes)


def _same_origin(origin: str, scope: Scope) -> bool:
    """Whether `Origin` names this very API (scheme, host and port as the request reached it)."""
    parts = urlsplit(origin.strip())
    host = _header(scope, b"host")
    scheme = scope.get("scheme", "http")
    if parts.scheme.lower() != scheme or not parts.netloc or host is None:
        return False
    default = "443" if scheme == "https" else "80"
    origin_host, origin_port = split_authority(parts.netloc)
    own_host, own_port = split_authority(host)
    return origin_host is not None and (origin_host, origin_port or default) == (own_host, own_port or default)


class CrossSiteWriteMiddleware:
    """403 for a write a browser sends on behalf of another site's page, unless CORS allows it."""

    def __init__(self, app: ASGIApp, cors: CorsPolicy) -> None:
        self.app = app
        self.cors = cors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in _UNSAFE:
            await self.app(scope, receive, send)
            return
        origin = _header(scope, b"origin")
        fetch_site = (_header(scope, b"sec-fetch-site") or "").strip().lower()
        method = scope["method"]
        refused: str | None = None
        if origin is not None and not _same_origin(origin, scope):
            if not self.cors.allows(origin.strip(), method):
                refused = f"Origin {origin.strip()}"
        elif origin is None and fetch_site in ("cross-site", "same-site") and not self.cors.allows("*", method):
            refused = f"a {fetch_site} page (Sec-Fetch-Site)"
        if refused is None:
            await self.app(scope, receive, send)
            return
        message = (
            f"Cross-site {method} refused: {refused} may not change this worker; "
            "to let a web UI on that origin call the API, list it in access.control.allow.origin "
            "(and its methods in access.control.allow.methods)"
        )
        await error_response(403, message)(scope, receive, send)


class BodyLimitMiddleware:
    """413 for a request body over `max_bytes` (by Content-Length, or counted as it arrives);
    the body is read before the route runs, so a route never sees a partial one."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _refuse(self) -> ASGIApp:
        return error_response(
            413,
            f"The request body is larger than rest.request.max.bytes ({self.max_bytes} bytes): send a smaller "
            "body, or raise rest.request.max.bytes in the worker properties",
            {"Connection": "close"},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _header(scope, b"content-length")
        if length is not None and length.strip().isdigit() and int(length) > self.max_bytes:
            await _drain(receive)
            await self._refuse()(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                # The client went away: let the app see the disconnect as it would have.
                await self.app(scope, _replay([message], receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                if message.get("more_body", False):
                    await _drain(receive)
                await self._refuse()(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], receive), send)


# What a refused body may still send before the 413: read and dropped, so that the client, still
# sending, reads the answer. Closing on unread data makes the kernel reset the connection, and
# the client then loses the 413 it was sent (nginx's "lingering close"). Past these bounds the
# connection is closed anyway.
DRAIN_MAX_BYTES = 64 * 1024 * 1024
DRAIN_MAX_SECONDS = 10.0


async def _drain(receive: Receive) -> None:
    """Read and drop the rest of a request body, within DRAIN_MAX_BYTES and DRAIN_MAX_SECONDS."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DRAIN_MAX_SECONDS
    dropped = 0
    while dropped < DRAIN_MAX_BYTES:
        left = deadline - loop.time()
        if left <= 0:
            return
        try:
            message = await asyncio.wait_for(receive(), left)
        except TimeoutError:
            return
        if message["type"] != "http.request":
            return
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed

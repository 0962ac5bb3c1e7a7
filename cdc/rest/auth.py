"""HTTP basic auth for the REST API, from a `user=password` properties file.

The file format is what Kafka's BasicAuthSecurityRestExtension reads through
PropertyFileLoginModule, so an existing credentials file works unchanged.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from pathlib import Path

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from cdc.config.files import load_properties_file
from cdc.rest.errors import error_response


def load_credentials(path: str) -> dict[str, str]:
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"rest.basic.auth.credentials.file {path!r} does not exist: create it with one `user=password` per line"
        )
    return dict(load_properties_file(path))


class BasicAuthMiddleware(BaseHTTPMiddleware):
    def __init__(self, app: ASGIApp, credentials: dict[str, str]) -> None:
        super().__init__(app)
        self.credentials = credentials

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if self._authorized(request.headers.get("authorization", "")):
            return await call_next(request)
        return error_response(
            401,
            "Credentials are required: send HTTP basic auth for a user in rest.basic.auth.credentials.file",
            {"WWW-Authenticate": 'Basic realm="cdc-connect"'},
        )

    def _authorized(self, header: str) -> bool:
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        expected = self.credentials.get(user)
        return expected is not None and hmac.compare_digest(expected.encode(), password.encode())

"""HTTP basic auth for the REST API, as Kafka's BasicAuthSecurityRestExtension does it.

Two ways turn it on, and both may be given (their users are merged):
- Kafka's: `rest.extension.classes=…BasicAuthSecurityRestExtension` with a JAAS file
  (`java.security.auth.login.config`, see cdc.rest.jaas) whose PropertyFileLoginModule names
  a `user=password` properties file;
- cdc's shortcut: `rest.basic.auth.credentials.file`, the same properties file directly.

Unlike Kafka's PropertyFileLoginModule, an empty credentials file is refused at start
(Kafka lets every request in when the file has no users).
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from cdc.api.errors import ConfigException
from cdc.config.files import load_properties_file
from cdc.rest import jaas
from cdc.rest.errors import error_response

CREDENTIALS_KEY = "rest.basic.auth.credentials.file"
EXTENSIONS_KEY = "rest.extension.classes"


@dataclass(frozen=True)
class Credentials:
    """Users and passwords, and which settings they came from (named in the 401 message)."""

    users: Mapping[str, str]
    source: str  # the settings and files, for the worker's own log
    kinds: str = "this worker's basic auth users"  # the settings only, for the 401 body


def load_credentials(path: str, key: str = CREDENTIALS_KEY) -> dict[str, str]:
    """A PropertyFileLoginModule credentials file: one `user=password` per line."""
    if not Path(path).is_file():
        raise ConfigException(f"{key}: {path} does not exist: create it with one `user=password` per line", key)
    users = dict(load_properties_file(path))
    if not users:
        raise ConfigException(
            f"{key}: {path} has no `user=password` line; basic auth with no users would refuse everyone", key
        )
    return users


def _extensions(classes: list[str]) -> bool:
    """Whether BasicAuthSecurityRestExtension is listed; any other extension is refused."""
    wanted = False
    for name in (c.strip() for c in classes):
        if not name:
            continue
        if name.rsplit(".", 1)[-1] == jaas.EXTENSION_CLASS.rsplit(".", 1)[-1]:
            wanted = True
        else:
            raise ConfigException(
                f"{EXTENSIONS_KEY}: {name} is not supported; the only REST extension is {jaas.EXTENSION_CLASS}",
                EXTENSIONS_KEY,
            )
    return wanted


def resolve_credentials(
    extension_classes: list[str], jaas_config: str | None, credentials_file: str | None, environ: Mapping[str, str]
) -> Credentials | None:
    """The users basic auth checks, or None when basic auth is off."""
    users: dict[str, str] = {}
    sources: list[str] = []
    kinds: list[str] = []
    if _extensions(extension_classes):
        path = jaas.jaas_path(jaas_config, environ)
        if not path:
            raise ConfigException(
                f"{EXTENSIONS_KEY} lists BasicAuthSecurityRestExtension but no JAAS file is given: set "
                f"{jaas.JAAS_KEY}=/path/to/connect_jaas.conf in the worker properties "
                f"(or -D{jaas.JAAS_KEY}=… in KAFKA_OPTS)",
                EXTENSIONS_KEY,
            )
        users.update(load_credentials(jaas.credentials_file(path), f"the JAAS file {path}'s file option"))
        sources.append(f"the JAAS file {path}")
        kinds.append(f"the {jaas.JAAS_KEY} JAAS file")
    if credentials_file:
        users.update(load_credentials(credentials_file))
        sources.append(CREDENTIALS_KEY)
        kinds.append(CREDENTIALS_KEY)
    return Credentials(users, " or ".join(sources), " or ".join(kinds)) if sources else None


class BasicAuthMiddleware:
    """401 with `WWW-Authenticate: Basic` unless the request carries a known user's password.

    CORS preflights (OPTIONS with Access-Control-Request-Method) pass: browsers send them without
    credentials, and they change nothing (Jetty's CrossOriginFilter answers them before Kafka's
    JaasBasicAuthFilter too).
    """

    def __init__(self, app: ASGIApp, credentials: Credentials) -> None:
        self.app = app
        self.credentials = credentials

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._preflight(scope) or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        response = error_response(
            401,
            # Which settings, not which files: the 401 answers callers who have not logged in.
            f"Credentials are required: send HTTP basic auth for a user of {self.credentials.kinds}",
            {"WWW-Authenticate": 'Basic realm="cdc-connect"'},
        )
        await response(scope, receive, send)

    @staticmethod
    def _preflight(scope: Scope) -> bool:
        return scope.get("method") == "OPTIONS" and any(
            k == b"access-control-request-method" for k, _ in scope.get("headers", ())
        )

    def _authorized(self, scope: Scope) -> bool:
        header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"), "")
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return False
        expected = self.credentials.users.get(user)
        # Compared even for an unknown user, so timing does not tell which users exist.
        ok = hmac.compare_digest((expected or "").encode(), password.encode())
        return expected is not None and ok

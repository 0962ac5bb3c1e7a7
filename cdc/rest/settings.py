"""The REST server's settings from the worker config (Kafka's RestServerConfig keys, plus cdc's).

Everything is read and checked when the worker starts: a wrong keystore password, a missing
JAAS file or an unknown REST extension fails the worker with one line naming the key, before
any connector starts, never on the first request.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from cdc.api.errors import ConfigException
from cdc.rest.auth import Credentials, resolve_credentials
from cdc.rest.guards import CorsPolicy, HostPolicy
from cdc.rest.tls import TlsSettings, client_auth, client_context, server_context, tls_settings
from cdc.runtime.worker_config import WorkerConfig

SCHEMES = ("http", "https")


class RestBindError(ConfigException):
    """The REST API cannot listen where `listeners` says (the port is taken, a bad listener);
    a ConfigException, so the CLI reports it in one line naming `listeners`."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "listeners")


@dataclass(frozen=True)
class Listener:
    """One `listeners` entry: `http://host:port` or `https://host:port`."""

    scheme: str
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port if port is None else port}"


def parse_listener_url(listener: str) -> Listener:
    """`http(s)://host:port` (no scheme means http); an empty host means loopback here, unlike Kafka."""
    parts = urlsplit(listener.strip() if "://" in listener else f"http://{listener.strip()}")
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise RestBindError(f"listeners: {listener!r} uses {parts.scheme}; use http:// or https:// listeners")
    try:
        port = parts.port if parts.port is not None else 8083
    except ValueError:
        raise RestBindError(f"listeners: {listener!r} has an invalid port") from None
    return Listener(scheme, parts.hostname or "127.0.0.1", port)


def parse_listener(listener: str) -> tuple[str, int]:
    """`http://host:port` -> (host, port)."""
    parsed = parse_listener_url(listener)
    return parsed.host, parsed.port


@dataclass(frozen=True)
class RestSettings:
    listeners: tuple[Listener, ...]
    advertised_host: str | None
    advertised_port: int | None
    advertised_scheme: str
    hosts: HostPolicy
    cors: CorsPolicy
    max_body_bytes: int
    credentials: Credentials | None
    client_auth: str  # of the https listeners: required, requested or none
    server_ssl: ssl.SSLContext | None
    client_ssl: ssl.SSLContext | None

    @classmethod
    def from_worker_config(cls, config: WorkerConfig, environ: Mapping[str, str] | None = None) -> RestSettings:
        environ = os.environ if environ is None else environ
        listeners = tuple(parse_listener_url(x) for x in config.get("listeners") if x and x.strip())
        if not listeners:
            raise RestBindError("listeners is empty: set e.g. listeners=http://127.0.0.1:8083")
        tls: TlsSettings = tls_settings(config.originals())
        https = any(listener.scheme == "https" for listener in listeners)
        advertised_scheme = (config.get("rest.advertised.listener") or "").lower() or _advertised_scheme(listeners)
        if advertised_scheme not in {listener.scheme for listener in listeners}:
            raise ConfigException(
                f"rest.advertised.listener={advertised_scheme} but listeners has no {advertised_scheme}:// listener: "
                "add one or change rest.advertised.listener",
                "rest.advertised.listener",
            )
        advertised_host = config.get("rest.advertised.host.name")
        return cls(
            listeners=listeners,
            advertised_host=advertised_host,
            advertised_port=config.get("rest.advertised.port"),
            advertised_scheme=advertised_scheme,
            hosts=HostPolicy.build([x.host for x in listeners], advertised_host, config.get("rest.allowed.hosts")),
            cors=CorsPolicy.build(
                config.get("access.control.allow.origin"), config.get("access.control.allow.methods")
            ),
            max_body_bytes=config.get("rest.request.max.bytes"),
            credentials=resolve_credentials(
                config.get("rest.extension.classes"),
                config.get("java.security.auth.login.config"),
                config.get("rest.basic.auth.credentials.file"),
                environ,
            ),
            client_auth=client_auth(tls) if https else "none",
            server_ssl=server_context(tls) if https else None,
            client_ssl=client_context(tls) if https else None,
        )

    def exposed_without_auth(self) -> list[Listener]:
        """Listeners on a non-loopback address that anyone reaching them may use."""
        if self.credentials is not None:
            return []
        mtls = self.client_auth == "required"
        return [x for x in self.listeners if not x.loopback and not (x.scheme == "https" and mtls)]


def _advertised_scheme(listeners: tuple[Listener, ...]) -> str:
    """Kafka's RestServer.determineAdvertisedProtocol: http if there is an http listener, else https."""
    return "http" if any(x.scheme == "http" for x in listeners) else "https"

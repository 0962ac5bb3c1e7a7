"""Which Host header names a listener of this worker answers: the rule against DNS rebinding.

A page on `evil.example` whose name is re-pointed to 127.0.0.1 reaches a listener on the
machine with `Host: evil.example`; a listener that answers only its own names cannot be read
that way. One rule for every listener of the worker: the REST API (cdc.rest.guards, with
`listeners`, `rest.advertised.host.name` and `rest.allowed.hosts`) and the Prometheus port
(cdc.runtime.prometheus.server, with `metrics.host` and `rest.allowed.hosts`). Answered: the
listener's own hosts, localhost / 127.0.0.1 / ::1, the allowed names (`*.example.com` for any
subdomain, `*` for any), and for a wildcard listener (0.0.0.0, ::) the machine's names and the
address the client connected to. `host_refusal` is the whole decision, status and message.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "LOOPBACK_NAMES",
    "WILDCARD_HOSTS",
    "HostPolicy",
    "host_of",
    "host_refusal",
    "machine_names",
    "split_authority",
]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


def _normal(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def split_authority(value: str) -> tuple[str | None, str]:
    """(host, port text) of `name`, `name:port` or `[v6]:port`; host None if malformed."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        rest = value[end + 1 :] if end >= 0 else "x"
        if end < 0 or (rest and not re.fullmatch(r":\d*", rest)):
            return None, ""
        return _normal(value[1:end]) or None, rest[1:]
    name, _, port = value.partition(":")
    if (port and not port.isdigit()) or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        return None, ""
    return _normal(name), port


def host_of(value: str) -> str | None:
    """The host part of a Host header (`name`, `name:port`, `[v6]:port`); None if malformed."""
    return split_authority(value)[0]


def machine_names() -> set[str]:
    """This machine's host names and their addresses, for a wildcard listener."""
    names = {_normal(socket.gethostname()), _normal(socket.getfqdn())}
    for name in list(names):
        try:
            for info in socket.getaddrinfo(name, None):
                names.add(_normal(str(info[4][0])))
        except OSError:
            continue
    return {n for n in names if n}


@dataclass(frozen=True)
class HostPolicy:
    """Which Host header names a listener answers."""

    names: frozenset[str]
    patterns: tuple[str, ...] = ()  # `*.example.com`: any subdomain
    any_host: bool = False
    wildcard_listener: bool = False

    @classmethod
    def build(cls, listener_hosts: Iterable[str], advertised: str | None, extra: Iterable[str]) -> HostPolicy:
        hosts = [_normal(h) for h in listener_hosts]
        names = set(LOOPBACK_NAMES) | {h for h in hosts if h not in WILDCARD_HOSTS}
        wildcard = any(h in WILDCARD_HOSTS for h in hosts)
        if advertised:
            names.add(_normal(advertised))
        if wildcard:
            names |= machine_names()
        extra = [_normal(e) for e in extra if e.strip()]
        patterns = tuple(e[1:] for e in extra if e.startswith("*.") and len(e) > 2)
        names |= {e for e in extra if not e.startswith("*")}
        return cls(frozenset(names), patterns, "*" in extra, wildcard)

    def allows(self, host: str, local_address: str | None) -> bool:
        if self.any_host or host in self.names or any(host.endswith(p) for p in self.patterns):
            return True
        if local_address is None:
            return False
        # The address the client connected to is this machine's, whichever interface it is on
        # (a name could be an attacker's; an IP literal cannot be re-pointed by DNS).
        try:
            return ipaddress.ip_address(host) == ipaddress.ip_address(_normal(local_address))
        except ValueError:
            return False


def host_refusal(
    policy: HostPolicy, header: str | None, local_address: str | None, advice: str
) -> tuple[int, str] | None:
    """(status, one-line message) when a request with Host header `header`, which reached this
    machine at `local_address`, must not be answered, or None. No header passes (HTTP/1.0 may
    omit it; browsers always send it); a malformed one is a 400; a name the policy does not allow
    a 421 (Misdirected Request) ending with `advice`: how to call the listener or allow the name."""
    if header is None:
        return None
    host = host_of(header)
    if host is None:
        return 400, f"Malformed Host header {header!r}"
    if policy.allows(host, local_address):
        return None
    return 421, f"Host {host!r} is not a name of this worker (DNS rebinding protection): {advice}"

"""Which config values are secrets, and how they are hidden: the one rule every output uses.

Part of the plugin SPI so that `ConfigDef.mask` and a plugin printing its own config apply
the same rule as the runtime's REST API, status and logs.

Kafka Connect hides only the values of keys a ConfigDef declares as `Type.PASSWORD`
(`AbstractHerder.maybeAddConfigErrors`/`ConfigDef.convertToString`). A connector config
carries many secrets no ConfigDef declares: JDBC pass-through `database.*` properties,
client overrides (`producer.override.sasl.jaas.config`), the schema history's own clients,
settings of SMTs and converters. So a key is secret when it is declared PASSWORD *or* its
name has the shape of a secret, the union of what Kafka types as PASSWORD
(`ssl.*.password`, `ssl.keystore.key`, `sasl.jaas.config`), Debezium's
`Configuration.PASSWORD_PATTERN` (`.*password$|.*sasl\\.jaas\\.config$|.*\\.api\\.(key|secret)$`)
and Confluent's (`basic.auth.user.info`, `bearer.auth.token`, `*.secret*`, `*credentials*`):

- `*password`, `*passwd`, `*passphrase`, `*.pwd`;
- `*jaas.config`, `sasl.oauthbearer.config` (librdkafka's);
- anything containing `secret`, `token` or `credential`, unless the key names a place or a
  kind rather than the value (`….url`, `….file`, `….path`, `….class`, `….type`, …:
  `sasl.oauthbearer.token.endpoint.url` is not a secret);
- private key material: `ssl.key`, `ssl.keystore.key`, `ssl.key.pem`, `database.sslkey`,
  `*private.key*`, `*.api.key`, `*.access.key`, `*.account.key`, …;
- `*basic.auth.user.info` (`user:password`);
- an HTTP `Authorization` header's value (`header.Authorization`, as pyiceberg's REST catalog
  takes it) and a connection string (`adls.connection-string`: Azure's carry the account key).

Such values show as `[hidden]` in REST bodies and validate results (`mask_config`), and,
through `secret_values` and cdc.runtime.traces.redact, in error messages, status traces, the
worker log and `cdc status`; a `${provider:path:key}` reference is not the secret and shows
as written. PUTting `[hidden]` back keeps the stored value (see `keep_hidden`), but only to
the destination it was stored with: a stored secret is bound to the host, port, user, URL and
TLS keys of its client (the keys sharing its first name part: `database.password` goes with
`database.hostname`, `database.port`, `database.user`, `database.ssl.mode`, ...), and an update
that changes one of them without giving the secret again is refused. Otherwise anyone who may
PUT a config could point `database.hostname` at their own server and receive the password
(secret redirection, as in Kafka Connect's and Debezium's advisories).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from cdc.api.errors import ConfigException

__all__ = [
    "HIDDEN",
    "is_destination",
    "is_sensitive",
    "keep_hidden",
    "mask_config",
    "moved_destinations",
    "secret_keys",
    "secret_values",
]

HIDDEN = "[hidden]"  # Kafka's Password.HIDDEN; equal to cdc.api.config.Password.HIDDEN

_SECRET_NAME = re.compile(
    r"(password|passwd|passphrase)$"
    r"|(^|[._-])pwd$"
    r"|jaas\.config$"
    r"|sasl\.oauthbearer\.config$"
    r"|(^|[._-])user\.info$"
    r"|(^|[._-])(ssl|private|api|access|account|encryption|signing|master|shared|client|sas|secret)[._-]?key$"
    r"|sslkey$"
    r"|keystore\.key$"
    r"|\.key\.pem$"
    r"|private[._-]?key"
    r"|(^|[._-])authorization$"
    r"|connection[._-]?string$",
    re.IGNORECASE,
)
# Words that make any key secret, wherever they are in it ...
_SECRET_WORD = re.compile(r"secret|token|credential", re.IGNORECASE)
# ... unless its last part says the value is a place, a kind or a switch, not the secret itself.
_NOT_THE_VALUE = frozenset(
    {
        "class",
        "url",
        "uri",
        "endpoint",
        "file",
        "filename",
        "path",
        "location",
        "dir",
        "type",
        "enable",
        "enabled",
        "source",
        "mode",
        "provider",
        "algorithm",
        "mechanism",
        "ms",
        "seconds",
    }
)


def is_sensitive(key: str) -> bool:
    """True when `key`'s name has the shape of a secret (whatever any ConfigDef declares)."""
    if _SECRET_NAME.search(key):
        return True
    if _SECRET_WORD.search(key):
        last = re.split(r"[._-]", key.lower())[-1]
        return last not in _NOT_THE_VALUE
    return False


def _is_reference(value: Any) -> bool:
    return isinstance(value, str) and value.lstrip().startswith("${") and value.rstrip().endswith("}")


def secret_keys(config: Mapping[str, Any], declared: Collection[str] = ()) -> set[str]:
    """The keys of `config` whose values are secrets: declared PASSWORD (`declared`) or shaped like one."""
    return {k for k in config if k in declared or is_sensitive(k)}


def mask_config(config: Mapping[str, Any], declared: Collection[str] = ()) -> dict[str, Any]:
    """A copy safe to show: secret values are `[hidden]`; `${provider:…}` references show as written."""
    hidden = secret_keys(config, declared)
    return {k: HIDDEN if k in hidden and v is not None and not _is_reference(v) else v for k, v in config.items()}


def secret_values(config: Mapping[str, Any], declared: Collection[str] = ()) -> frozenset[str]:
    """The values of `config`'s secret keys (not `${…}` references), for redacting free text."""
    return frozenset(
        v for k in secret_keys(config, declared) if isinstance(v := config[k], str) and v and not _is_reference(v)
    )


# Keys that say where a client connects and as whom, judged by name: what a secret is bound to.
_DESTINATION = re.compile(
    r"(^|[._-])(hostname|host|hosts|port|user|username|url|urls|uri|endpoint|servers|connect\.string)$"
    r"|(^|[._-])(ssl|tls)|security\.protocol$|sasl\.mechanisms?$",
    re.IGNORECASE,
)


def is_destination(key: str) -> bool:
    """True when `key` names where a client connects, as whom or how it checks the server: a host,
    port, user, URL, bootstrap servers, or a TLS/SASL setting (and is not itself a secret)."""
    return bool(_DESTINATION.search(key)) and not is_sensitive(key)


def _client_of(key: str) -> str:
    """The group a key belongs to: its first name part (`database`, `producer`, `schema`, ...)."""
    return key.split(".", 1)[0] if "." in key else ""


def moved_destinations(old: Mapping[str, str], new: Mapping[str, str], secret: str) -> list[str]:
    """The destination keys of `secret`'s client that differ (changed, added or removed) between
    the stored config `old` and `new`; every key when the secret's name has no dot."""
    client = _client_of(secret)
    keys = {k for k in (*old, *new) if is_destination(k) and (not client or _client_of(k) == client)}
    return sorted(k for k in keys if old.get(k) != new.get(k))


def keep_hidden(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """`new` with every `[hidden]` value replaced by the stored one: GET shows secrets as `[hidden]`,
    and PUTting that config back (any key: declared PASSWORD or secret by its name) must keep them.

    A secret is kept only for the destination it was stored with: when `new` changes a host, port,
    user, URL or TLS key of the secret's client (`moved_destinations`) and gives `[hidden]` for the
    secret, ConfigException names the key to send again, so no caller can have the worker send a
    stored password to a server of their choosing."""
    kept = sorted(k for k, v in new.items() if v == HIDDEN and k in old)
    for secret in kept:
        if moved := moved_destinations(old, new, secret):
            raise ConfigException(
                f"{secret}: the stored secret is not sent to a changed {', '.join(moved)}; give {secret} again in "
                "this request (a stored secret stays bound to the host, port, user and TLS settings it was "
                "stored with)",
                secret,
                HIDDEN,
            )
    return {k: old[k] if k in kept else v for k, v in new.items()}

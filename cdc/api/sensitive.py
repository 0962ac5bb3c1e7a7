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
- `*basic.auth.user.info` (`user:password`).

Such values show as `[hidden]` in REST bodies and validate results (`mask_config`), and,
through `secret_values` and cdc.runtime.traces.redact, in error messages, status traces, the
worker log and `cdc status`; a `${provider:path:key}` reference is not the secret and shows
as written. PUTting `[hidden]` back keeps the stored value (see `keep_hidden`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

__all__ = [
    "HIDDEN",
    "is_sensitive",
    "keep_hidden",
    "mask_config",
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
    r"|private[._-]?key",
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


def keep_hidden(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """`new` with every `[hidden]` value replaced by the stored one: GET shows secrets as `[hidden]`,
    and PUTting that config back (any key: declared PASSWORD or secret by its name) must keep them."""
    return {k: old[k] if v == HIDDEN and k in old else v for k, v in new.items()}

"""TLS of the PostgreSQL connections: Debezium's `database.ssl*` keys as libpq parameters.

Debezium's PostgresConnectorConfig hands `database.sslmode`, `database.sslrootcert`,
`database.sslcert`, `database.sslkey` and `database.sslpassword` to pgjdbc, whose names are
libpq's; here libpq itself takes them, for every connection of the connector (the normal
ones and the `replication=database` one). `database.sslfactory` (a Java class) has no
equivalent: it is ignored with a warning (libpq checks what `database.sslmode` says, which is
as strict as pgjdbc's default LibPQFactory).

libpq's behaviour applies: `sslrootcert=system` trusts the system's CAs (libpq 16+); without
`database.sslrootcert`, verify-ca/verify-full read `~/.postgresql/root.crt`; the key file
must be private (0600) to its owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api import ConfigDef, ConfigType, Importance, ValidString, libpq_tls

SSLMODE = "database.sslmode"
SSLROOTCERT = "database.sslrootcert"
SSLCERT = "database.sslcert"
SSLKEY = "database.sslkey"
SSLPASSWORD = "database.sslpassword"
SSLFACTORY = "database.sslfactory"
SSL_MODES = libpq_tls.SSL_MODES
DEFAULT_MODE = "prefer"  # Debezium's (and libpq's) default
SSLFACTORY_IGNORED = (
    "%s=%s names a Java SSLSocketFactory, which has no equivalent here and is ignored: libpq checks the server "
    f"certificate as {SSLMODE} says (verify-ca/verify-full against {SSLROOTCERT}; require does not check it)"
)


def define(d: ConfigDef, prefix: str = "database.") -> ConfigDef:
    """Debezium's five libpq TLS keys under `prefix` (`database.` for the connector); sslpassword is PASSWORD."""
    return (
        d.define(
            f"{prefix}sslmode",
            ConfigType.STRING,
            DEFAULT_MODE,
            ValidString.in_ignore_case(*SSL_MODES),
            Importance.MEDIUM,
            "libpq sslmode: disable, allow, prefer (TLS if the server offers it, certificate unchecked), require "
            "(TLS, certificate unchecked), verify-ca (the certificate must be signed by the CA in sslrootcert), "
            "verify-full (verify-ca and the certificate must name the host).",
        )
        .define(
            f"{prefix}sslrootcert",
            ConfigType.STRING,
            None,
            None,
            Importance.MEDIUM,
            "PEM file of the CA certificates the server certificate is checked against (verify-ca, verify-full); "
            "'system' for the system's CAs. Default: ~/.postgresql/root.crt.",
        )
        .define(
            f"{prefix}sslcert", ConfigType.STRING, None, None, Importance.MEDIUM, "PEM client certificate (cert auth)."
        )
        .define(
            f"{prefix}sslkey",
            ConfigType.STRING,
            None,
            None,
            Importance.MEDIUM,
            "Private key of the client certificate (PEM, mode 0600).",
        )
        .define(
            f"{prefix}sslpassword",
            ConfigType.PASSWORD,
            None,
            None,
            Importance.MEDIUM,
            "Password of an encrypted client key.",
        )
    )


def libpq_params(props: Mapping[str, Any]) -> dict[str, str]:
    """The connector's set TLS keys as libpq parameters (`sslmode`, `sslrootcert`, ...); an unknown
    sslmode is refused naming its key.

    Unless the server's certificate is verified (verify-ca/verify-full), libpq 16+ is told to
    refuse the `password` method (`require_auth=!password`): it sends the password as it is, so a
    server that asks for it, or one impersonating the configured host, would read it. scram, md5,
    trust and certificate logins are unaffected."""
    out = libpq_tls.params(props, "database.")
    if out.get("sslmode", DEFAULT_MODE) not in ("verify-ca", "verify-full") and _libpq_has_require_auth():
        out["require_auth"] = "!password"
    return out


def _libpq_has_require_auth() -> bool:
    """libpq 16 added `require_auth`; an older system libpq (psycopg's python build) would refuse it."""
    import psycopg

    return psycopg.pq.version() >= 160000


def advice(message: str) -> str | None:
    """The fix, naming the connector's `database.ssl*` keys, for a connection libpq refused over TLS."""
    return libpq_tls.advice(message, "database.")


first_line = libpq_tls.first_line

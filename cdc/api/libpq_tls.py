"""libpq's TLS parameters under a key prefix, and the fix for each way libpq refuses a connection.

The PostgreSQL connector takes them as Debezium names them (`database.sslmode`,
`database.sslrootcert`, `database.sslcert`, `database.sslkey`, `database.sslpassword`: pgjdbc's
names, which are libpq's), the Spark sink's PostgreSQL target and the job tools under their own
prefixes. In the SPI because both the PostgreSQL connector and the Spark sink plugin use it and
plugins import nothing of each other. Hand-written: libpq's messages are free text, matched here
by the phrases libpq 13-18 use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.errors import ConfigException

PARAMS = ("sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword")
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def _text(value: Any) -> str | None:
    """A setting as text (Password values opened); blanks are unset."""
    if value is None:
        return None
    raw = value.value() if callable(getattr(value, "value", None)) else value
    text = str(raw).strip()
    return text or None


def params(props: Mapping[str, Any], prefix: str) -> dict[str, str]:
    """The `prefix`ed TLS keys that are set, as libpq parameters; an unknown sslmode names its key."""
    out = {p: v for p in PARAMS if (v := _text(props.get(prefix + p))) is not None}
    if "sslmode" in out:
        out["sslmode"] = out["sslmode"].lower()
        if out["sslmode"] not in SSL_MODES:
            raise ConfigException(
                f"Invalid value {out['sslmode']} for configuration {prefix}sslmode: use one of {', '.join(SSL_MODES)}",
                prefix + "sslmode",
                out["sslmode"],
            )
    return out


# libpq's wording → the fix, naming the keys. `{p}` is the key prefix.
_CAUSES: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("certificate verify failed",),
        "the server's TLS certificate is not signed by the CA in {p}sslrootcert: point {p}sslrootcert at the CA "
        "certificate that issued the server's certificate, or set {p}sslmode=require to encrypt without checking it",
    ),
    (
        ("does not match host name",),
        "the server's TLS certificate is not issued for this host ({p}sslmode=verify-full): connect to a name the "
        "certificate holds (its subject alternative names), or set {p}sslmode=verify-ca to check only the CA",
    ),
    (
        ("root certificate file", "does not exist"),
        "{p}sslmode=verify-ca/verify-full needs the CA: set {p}sslrootcert to its PEM file (or to 'system' for the "
        "system's CAs)",
    ),
    (
        ("server does not support ssl",),
        "the server offers no TLS but {p}sslmode requires it: enable ssl on the server, or set {p}sslmode=prefer",
    ),
    (
        ("no pg_hba.conf entry", "no encryption"),
        "the server accepts this user only over TLS (hostssl in pg_hba.conf): set {p}sslmode to require, verify-ca "
        "or verify-full",
    ),
    (
        ("server requested a cleartext password",),
        "the server asked for the password in clear text, which is sent only over a TLS connection whose "
        "certificate is checked: set {p}sslmode=verify-ca or verify-full (with {p}sslrootcert), or have the server "
        "log this user in with scram-sha-256 (pg_hba.conf)",
    ),
    (
        ("requires a valid client certificate",),
        "the server authenticates this user by client certificate: set {p}sslcert and {p}sslkey",
    ),
    (
        ("certificate authentication failed",),
        "the client certificate's common name (CN) is not the user's name: set {p}sslcert/{p}sslkey to a "
        "certificate issued for the connecting user (or map it in the server's pg_ident.conf)",
    ),
    (
        ("private key file", "has group or world access"),
        "the key file in {p}sslkey must be private to its owner: chmod 600 it",
    ),
    (
        ("could not load private key file",),
        "{p}sslkey cannot be read or decrypted: check the path, and {p}sslpassword for an encrypted key",
    ),
    (
        ("could not open certificate file",),
        "{p}sslcert cannot be read: check the path",
    ),
    (
        ("could not read root certificate file",),
        "{p}sslrootcert is not a readable PEM file of CA certificates: check the path",
    ),
    (
        ("alert unknown ca",),
        "the server does not trust the client certificate's CA: set {p}sslcert/{p}sslkey to a certificate signed by "
        "the CA in the server's ssl_ca_file",
    ),
)


def advice(message: str, prefix: str) -> str | None:
    """The fix for a TLS failure libpq reported, naming the `prefix`ed keys; None if it is not one."""
    text = message.lower()
    for needles, fix in _CAUSES:
        if all(n in text for n in needles):
            return fix.format(p=prefix)
    return None


def first_line(error: BaseException) -> str:
    """libpq's message on one line: without its hint lines and the 'connection to server at … failed:' prefix."""
    lines = [ln.strip() for ln in str(error).strip().splitlines() if ln.strip()]
    line = lines[0] if lines else type(error).__name__
    return line.rsplit(" failed: ", 1)[-1] if "connection to server" in line else line

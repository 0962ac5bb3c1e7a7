"""TLS of the MySQL/MariaDB connections: Debezium's `database.ssl.*` keys as one `ssl.SSLContext`.

Mirrors Debezium's `MySqlConnectorConfig.SecureConnectionMode` (`database.ssl.mode`, whose values
are MySQL Connector/J's `sslMode`) and its `database.ssl.keystore` / `database.ssl.truststore`
(Connector/J's `clientCertificateKeyStoreUrl` / `trustCertificateKeyStoreUrl`). The same settings
serve the snapshot connection (PyMySQL) and the binlog stream (python-mysql-replication passes
them on to PyMySQL), so both are equally protected.

Differences from Debezium, all refused or said rather than silently different:
- Java KeyStores (JKS/JCEKS) cannot be read from Python: a JKS store is refused with the
  `keytool` command that converts it to PKCS12 (or use the PEM keys below).
- PEM files, which Debezium has no keys for (it reads only Java stores), are taken under the
  names of the MySQL client's own options: `database.ssl.ca` (--ssl-ca), `database.ssl.cert`
  (--ssl-cert), `database.ssl.key` (--ssl-key) and `database.ssl.key.password`.
- With a client certificate, `preferred` cannot fall back to an unencrypted connection (PyMySQL
  takes a certificate only for a connection it encrypts), so it acts as `required`.
"""

from __future__ import annotations

import logging
import re
import secrets
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from cdc.api import ConfigDef, ConfigException, ConfigType, ConfigValue, Importance, ValidString

log = logging.getLogger(__name__)

SSL_MODE = "database.ssl.mode"
KEYSTORE = "database.ssl.keystore"
KEYSTORE_PASSWORD = "database.ssl.keystore.password"
TRUSTSTORE = "database.ssl.truststore"
TRUSTSTORE_PASSWORD = "database.ssl.truststore.password"
CA = "database.ssl.ca"
CERT = "database.ssl.cert"
KEY = "database.ssl.key"
KEY_PASSWORD = "database.ssl.key.password"
KEYS = (SSL_MODE, KEYSTORE, KEYSTORE_PASSWORD, TRUSTSTORE, TRUSTSTORE_PASSWORD, CA, CERT, KEY, KEY_PASSWORD)

MODES = ("disabled", "preferred", "required", "verify_ca", "verify_identity")
VERIFYING = ("verify_ca", "verify_identity")
DEFAULT_MODE = "preferred"  # Debezium's default

_JKS_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")  # JKS, JCEKS
# "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed … (_ssl.c:1006)" → the words
_SSL_REASON = re.compile(r"\[SSL: [A-Z0-9_]+\] ([^(]+)")


def define(d: ConfigDef) -> ConfigDef:
    """Debezium's `database.ssl.*` keys (PASSWORD-typed secrets), plus the PEM keys of this connector."""
    d.define(
        SSL_MODE,
        ConfigType.STRING,
        DEFAULT_MODE,
        ValidString.in_ignore_case(*MODES),
        Importance.MEDIUM,
        "disabled: no TLS; preferred: TLS when the server offers it, its certificate unchecked; required: TLS or "
        "fail, certificate unchecked; verify_ca: TLS with the server certificate checked against the CA "
        "(database.ssl.truststore or database.ssl.ca, else the system's CAs); verify_identity: verify_ca and the "
        "certificate must name database.hostname.",
    )
    d.define(
        KEYSTORE,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "PKCS12 file with the client certificate and its private key (TLS client authentication, REQUIRE X509). "
        "JKS is refused: convert it with keytool to PKCS12, or use database.ssl.cert/database.ssl.key.",
    )
    d.define(
        KEYSTORE_PASSWORD, ConfigType.PASSWORD, None, None, Importance.MEDIUM, "Password of database.ssl.keystore."
    )
    d.define(
        TRUSTSTORE,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "PKCS12 (or PEM) file with the CA certificates the server certificate is checked against (verify_ca, "
        "verify_identity). JKS is refused: convert it with keytool to PKCS12, or use database.ssl.ca.",
    )
    d.define(
        TRUSTSTORE_PASSWORD, ConfigType.PASSWORD, None, None, Importance.MEDIUM, "Password of database.ssl.truststore."
    )
    d.define(
        CA,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Not a Debezium option (the MySQL client's --ssl-ca): PEM file of CA certificates, instead of "
        "database.ssl.truststore.",
    )
    d.define(
        CERT,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Not a Debezium option (--ssl-cert): PEM client certificate (chain), instead of database.ssl.keystore.",
    )
    d.define(
        KEY,
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Not a Debezium option (--ssl-key): PEM private key of database.ssl.cert (default: in the database.ssl.cert "
        "file).",
    )
    d.define(
        KEY_PASSWORD,
        ConfigType.PASSWORD,
        None,
        None,
        Importance.MEDIUM,
        "Not a Debezium option: password of an encrypted database.ssl.key.",
    )
    return d


def _text(value: Any) -> str | None:
    """A setting as text: Password objects are opened, blanks are unset."""
    if value is None:
        return None
    raw = value.value() if callable(getattr(value, "value", None)) else value
    text = str(raw)
    return text if text.strip() else None


def cross_key_errors(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Contradicting TLS keys: both a Java store and its PEM equivalent, or a key without its certificate."""
    out = []
    for store, pem in ((TRUSTSTORE, CA), (KEYSTORE, CERT), (KEYSTORE, KEY)):
        if _text(props.get(store)) and _text(props.get(pem)):
            cv = ConfigValue(pem, props.get(pem))
            cv.add_error_message(f"{store} and {pem} both give the same certificates: set only one of them")
            out.append(cv)
    if _text(props.get(KEY)) and not _text(props.get(CERT)):
        cv = ConfigValue(KEY, props.get(KEY))
        cv.add_error_message(f"{KEY} needs {CERT}, the client certificate that goes with the key: set {CERT}")
        out.append(cv)
    return out


@dataclass(frozen=True)
class MySqlTls:
    """The connection's TLS settings; `pymysql_kwargs()` gives them to PyMySQL."""

    mode: str = DEFAULT_MODE
    keystore: str | None = None
    keystore_password: str | None = None
    truststore: str | None = None
    truststore_password: str | None = None
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    key_password: str | None = None

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> MySqlTls:
        """From connector properties (strings or Password values); an unknown mode names its key."""
        mode = (_text(props.get(SSL_MODE)) or DEFAULT_MODE).strip().lower()
        if mode not in MODES:
            raise ConfigException(
                f"Invalid value {mode} for configuration {SSL_MODE}: use one of {', '.join(MODES)}", SSL_MODE, mode
            )
        for problem in cross_key_errors(props):
            raise ConfigException(problem.errors[0], problem.name, problem.value)
        tls = cls(mode, *(_text(props.get(k)) for k in KEYS[1:]))
        tls._warn_unused()
        return tls

    @property
    def client_identity(self) -> bool:
        return bool(self.keystore or self.cert)

    @property
    def trust(self) -> str:
        """Where the server certificate's CA comes from, for messages."""
        if self.truststore:
            return f"{TRUSTSTORE} ({self.truststore})"
        if self.ca:
            return f"{CA} ({self.ca})"
        return f"the system's CA certificates (no {TRUSTSTORE} or {CA} set)"

    def _warn_unused(self) -> None:
        values = [getattr(self, f.name) for f in fields(self)][1:]
        given = [k for k, v in zip(KEYS[1:], values, strict=True) if v]
        if self.mode == "disabled" and given:
            log.warning("%s=disabled: %s not used (no TLS)", SSL_MODE, ", ".join(given))
        elif self.mode in ("preferred", "required") and (self.truststore or self.ca):
            log.warning(
                "%s=%s does not check the server certificate, so %s is not used; set %s=verify_ca or "
                "verify_identity to check it",
                SSL_MODE, self.mode, TRUSTSTORE if self.truststore else CA, SSL_MODE,
            )  # fmt: skip

    # -- PyMySQL -----------------------------------------------------------------------------------
    def pymysql_kwargs(self) -> dict[str, Any]:
        """`pymysql.connect` arguments: `ssl_disabled`, nothing (PyMySQL's own PREFERRED), or `ssl`.

        A context given to PyMySQL makes TLS required: a server that offers none is refused with
        "SSL is required but the server doesn't support it" (PyMySQL 1.2+).
        """
        guard = {} if self.mode in VERIFYING else {"auth_plugin_map": CLEARTEXT_REFUSED}
        if self.mode == "disabled":
            return {"ssl_disabled": True, **guard}
        if self.mode == "preferred" and not self.client_identity:
            return guard  # PyMySQL 1.2+: TLS if offered, certificate unchecked, else plain
        return {"ssl": self.context(), **guard}

    def context(self) -> ssl.SSLContext:
        """The SSLContext of this mode, with its trust anchors and client certificate loaded."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if self.mode in VERIFYING:
            if self.truststore:
                ctx.load_verify_locations(cadata=_truststore_pem(self.truststore, self.truststore_password))
            elif self.ca:
                _load_ca_file(ctx, self.ca)
            else:
                ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
            ctx.check_hostname = self.mode == "verify_identity"
            ctx.verify_mode = ssl.CERT_REQUIRED
            # MySQL's auto-generated certificates lack extensions the strict X.509 checks want (as PyMySQL does).
            ctx.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
        else:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.keystore:
            _load_keystore(ctx, self.keystore, self.keystore_password)
        elif self.cert:
            _load_pem_identity(ctx, self.cert, self.key, self.key_password)
        return ctx

    # -- errors ------------------------------------------------------------------------------------
    def refusal(self, host: str, message: str) -> str | None:
        """The fix when TLS refused the connection (a certificate check, a server without TLS), naming
        the keys; None if the failure is not about TLS."""
        text = message.lower()
        if "mismatch" in text and "certificate" in text:
            return (
                f"the server's TLS certificate is not issued for {host!r} ({SSL_MODE}=verify_identity): set "
                "database.hostname to a name the certificate holds (its subject alternative names), or set "
                f"{SSL_MODE}=verify_ca to check only the CA"
            )
        if "certificate_verify_failed" in text or "certificate verify failed" in text:
            return (
                f"the server's TLS certificate is not signed by a CA in {self.trust}: point {TRUSTSTORE} or {CA} at "
                f"the CA certificate that issued the server's certificate, or set {SSL_MODE}=required to encrypt "
                "without checking it"
            )
        if CLEARTEXT_MARK in text:
            return (
                f"the server asked for the password in clear text, which is sent only over a TLS connection whose "
                f"certificate is checked: set {SSL_MODE}=verify_ca or verify_identity (with {TRUSTSTORE} or {CA}), "
                "or give database.user an account that logs in with mysql_native_password, caching_sha2_password "
                "or ed25519"
            )
        if "ssl is required but the server doesn't support it" in text:
            return (
                f"the server offers no TLS but {SSL_MODE}={self.mode} requires it: enable TLS on the server "
                f"(ssl_cert/ssl_key in my.cnf), or set {SSL_MODE}=preferred (or disabled)"
            )
        if "alert" in text and ("unknown ca" in text or "certificate required" in text or "bad certificate" in text):
            return (
                f"the server refused the client certificate ({message.strip()}): set {KEYSTORE} (or {CERT}/{KEY}) "
                "to a certificate signed by a CA the server trusts (its ssl_ca)"
            )
        return None

    def access_denied_hint(self) -> str:
        """What an "Access denied" may mean under these TLS settings (a user created REQUIRE SSL/X509)."""
        if self.mode == "disabled":
            return (
                f"; with {SSL_MODE}=disabled, a user created REQUIRE SSL or REQUIRE X509 is refused like this: "
                f"set {SSL_MODE} to required, verify_ca or verify_identity"
            )
        if not self.client_identity:
            return f"; a user created REQUIRE X509 also needs a client certificate: set {KEYSTORE} (or {CERT}/{KEY})"
        return ""


CLEARTEXT_MARK = "password in clear text"


class _CleartextRefused:
    """PyMySQL's handler for `mysql_clear_password` and `dialog` (PAM): both send the password as it
    is, so a server that asks for them (or one that impersonates the configured host) would read it.
    As the MySQL client refuses the cleartext plugin unless told otherwise, this refuses it unless
    the server's TLS certificate was verified (`database.ssl.mode=verify_ca`/`verify_identity`,
    where the handler is not installed)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def authenticate(self, packet: Any) -> Any:
        import pymysql

        raise pymysql.err.OperationalError(
            2061,  # CR_AUTH_PLUGIN_ERR
            f"{self.connection.host}:{self.connection.port} asked for the {CLEARTEXT_MARK} over a connection "
            "whose TLS certificate is not verified; refused",
        )


CLEARTEXT_REFUSED = {"mysql_clear_password": _CleartextRefused, "dialog": _CleartextRefused}


def short_reason(message: str) -> str:
    """PyMySQL's "Can't connect to MySQL server on 'h' ([SSL: X] certificate verify failed: … (_ssl.c:1006))"
    as "certificate verify failed: …"; other messages as they are."""
    found = _SSL_REASON.search(message)
    return found.group(1).strip() if found else message.strip()


# -- certificate files -------------------------------------------------------------------------------
def _read(key: str, path: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as e:
        raise ConfigException(f"{key}={path}: cannot read it ({e.strerror or e}); check the path", key, path) from None


def _refuse_jks(key: str, path: str, data: bytes) -> None:
    if data[:4] in _JKS_MAGIC:
        pem_key = CA if key == TRUSTSTORE else f"{CERT}/{KEY}"
        raise ConfigException(
            f"{key}={path} is a Java KeyStore (JKS), which cannot be read here: convert it to PKCS12 with `keytool "
            f"-importkeystore -srckeystore {path} -destkeystore store.p12 -deststoretype PKCS12` and point {key} at "
            f"store.p12, or use PEM files with {pem_key}",
            key,
            path,
        )


def _pkcs12(key: str, path: str, data: bytes, password: str | None) -> Any:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError as e:
        raise ConfigException(
            f"{key}={path} cannot be opened as PKCS12 ({e}): check {key}.password, and that the file is PKCS12 "
            "(.p12/.pfx) or PEM",
            key,
            path,
        ) from None


def _truststore_pem(path: str, password: str | None) -> str:
    """The CA certificates of a truststore as PEM text: a PKCS12 store (Java's trusted-certificate
    entries included), or a PEM file."""
    from cryptography.hazmat.primitives.serialization import Encoding

    data = _read(TRUSTSTORE, path)
    _refuse_jks(TRUSTSTORE, path, data)
    if b"-----BEGIN CERTIFICATE-----" in data:
        return data.decode("ascii", "replace")
    store = _pkcs12(TRUSTSTORE, path, data, password)
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.insert(0, store.cert.certificate)
    if not certs:
        raise ConfigException(f"{TRUSTSTORE}={path} holds no certificate: add the server's CA to it", TRUSTSTORE, path)
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certs)


def _load_ca_file(ctx: ssl.SSLContext, path: str) -> None:
    data = _read(CA, path)
    try:
        ctx.load_verify_locations(cadata=data.decode("ascii", "replace"))
    except (ssl.SSLError, ValueError) as e:
        raise ConfigException(f"{CA}={path} is not a PEM file of CA certificates ({e})", CA, path) from None


def _load_pem_identity(ctx: ssl.SSLContext, cert: str, key: str | None, password: str | None) -> None:
    for name, path in ((CERT, cert), (KEY, key)):
        if path is not None:
            _read(name, path)  # a missing file names its key
    try:
        ctx.load_cert_chain(cert, keyfile=key, password=password)
    except (ssl.SSLError, ValueError, OSError) as e:
        raise ConfigException(
            f"{CERT}={cert} with {KEY}={key or cert} cannot be loaded ({e}): give a PEM certificate and the PEM "
            f"private key that belongs to it (and {KEY_PASSWORD} if the key is encrypted)",
            CERT,
            cert,
        ) from None


def _load_keystore(ctx: ssl.SSLContext, path: str, password: str | None) -> None:
    """A PKCS12 keystore's key and certificate chain into `ctx`.

    `ssl` loads certificates only from files: the chain goes through a temporary file, made
    private by mkstemp (0600), with its key encrypted under a one-time password and removed
    as soon as it is loaded.
    """
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, PrivateFormat

    data = _read(KEYSTORE, path)
    _refuse_jks(KEYSTORE, path, data)
    store = _pkcs12(KEYSTORE, path, data, password)
    if store.key is None or store.cert is None:
        raise ConfigException(
            f"{KEYSTORE}={path} holds no private key with its certificate: export the client's key and certificate "
            "into it (or use database.ssl.truststore for CA certificates)",
            KEYSTORE,
            path,
        )
    one_time = secrets.token_hex(32).encode()
    pem = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(one_time))
    for c in [store.cert, *store.additional_certs]:
        pem += c.certificate.public_bytes(Encoding.PEM)
    with tempfile.NamedTemporaryFile(prefix="cdc-keystore-", suffix=".pem") as f:
        f.write(pem)
        f.flush()
        try:
            ctx.load_cert_chain(f.name, password=one_time)
        except ssl.SSLError as e:
            raise ConfigException(
                f"{KEYSTORE}={path}: its key and certificate do not load ({e})", KEYSTORE, path
            ) from None

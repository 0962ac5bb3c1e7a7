"""TLS for the REST API: Kafka Connect's `listeners.https.ssl.*` / `ssl.*` keys as `ssl.SSLContext`s.

Mirrors Kafka's `org.apache.kafka.connect.runtime.rest.util.SSLUtils`:
- the settings are the worker's `listeners.https.`-prefixed keys if any is set, else its
  top-level `ssl.*` keys (Kafka's `valuesWithPrefixAllOrNothing`);
- the server side takes the keystore, the truststore and `ssl.client.auth`
  (`required|requested|none`; Confluent's `ssl.client.authentication` is read too);
- the client side (requests forwarded to other workers) takes the same keystore (its
  certificate is presented to peers that ask for one), the truststore and
  `ssl.endpoint.identification.algorithm` (`https` checks the peer's host name, empty does not).

Keystores: `ssl.keystore.type` PEM (a `ssl.keystore.location` file with the key and its chain,
or the `ssl.keystore.key` / `ssl.keystore.certificate.chain` strings) or PKCS12 (read with
`cryptography`); JKS files are refused with the keytool command that converts them. Without a
type the file's content decides. Truststores: PEM (`ssl.truststore.location` or the
`ssl.truststore.certificates` string) or PKCS12. `ssl.enabled.protocols` bounds the TLS
versions (TLSv1.2 and TLSv1.3 by default, as Kafka); Java cipher suite names are not mapped.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc.api.errors import ConfigException

PREFIX = "listeners.https."
_PEM = b"-----BEGIN"
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True)
class TlsSettings:
    """The `ssl.*` values in use, and the prefix they were given under (for messages)."""

    values: Mapping[str, str]
    prefix: str = ""

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def name(self, key: str) -> str:
        return self.prefix + key


def tls_settings(originals: Mapping[str, Any]) -> TlsSettings:
    """The `listeners.https.` keys (prefix stripped) if any is set, else every top-level key."""
    prefixed = {k[len(PREFIX) :]: v for k, v in originals.items() if k.startswith(PREFIX)}
    chosen, prefix = (prefixed, PREFIX) if prefixed else (dict(originals), "")
    return TlsSettings({k: str(v) for k, v in chosen.items() if v is not None}, prefix)


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ConfigException(f"{key}: cannot read {path} ({e.strerror}): give a readable file", key) from None


def _store_type(settings: TlsSettings, type_key: str, location_key: str, data: bytes) -> str:
    """PEM or PKCS12: `type_key` if set to one of them, else what the file holds."""
    given = (settings.get(type_key) or "").strip().upper()
    if given in ("PEM", "PKCS12"):
        return given
    if given and given != "JKS":
        raise ConfigException(f"{settings.name(type_key)}={given} is not supported: use PEM or PKCS12", type_key)
    if data.lstrip().startswith(_PEM):
        return "PEM"
    if data[:4] == b"\xfe\xed\xfe\xed":  # a Java JKS keystore's magic number
        raise ConfigException(
            f"{settings.name(location_key)}: JKS stores cannot be read here: convert it with keytool "
            "-importkeystore -srckeystore <file> -destkeystore <file>.p12 -deststoretype PKCS12 and set "
            f"{settings.name(type_key)}=PKCS12 (or use PEM files)",
            location_key,
        )
    return "PKCS12"


def _pkcs12(data: bytes, password: str | None, key: str, password_key: str) -> tuple[Any, Any, list[Any]]:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except (ValueError, TypeError) as e:
        raise ConfigException(
            f"{key}: cannot open the PKCS12 store ({e}); check {password_key} and that the file is PKCS12", key
        ) from None


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A path to `data` that only this process can read: an anonymous memory file where the OS has
    them (Linux), else a 0600 temporary file removed at once. Key material is never left on disk."""
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        fd = os.memfd_create("cdc-rest-tls", getattr(os, "MFD_CLOEXEC", 0))
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    handle, path = tempfile.mkstemp(prefix="cdc-rest-tls-")
    try:
        os.write(handle, data)
        os.close(handle)
        yield path
    finally:
        os.unlink(path)


def _load_chain(context: ssl.SSLContext, pem: bytes, password: str | None, key: str) -> None:
    with _private_file(pem) as path:
        try:
            context.load_cert_chain(path, password=password or None)
        except ssl.SSLError as e:
            hint = (
                "the private key does not belong to the first certificate"
                if "KEY_VALUES_MISMATCH" in str(e)
                else "give a PKCS#8 private key and its certificate chain as PEM, and the key's password"
            )
            message = f"{key}: cannot load the key and certificate ({e.reason or e}): {hint}"
            raise ConfigException(message, key) from None


def _load_keystore(context: ssl.SSLContext, settings: TlsSettings) -> bool:
    """Load the key and its certificate chain into `context`; False when no keystore is set."""
    location = settings.get("ssl.keystore.location")
    key_pem = settings.get("ssl.keystore.key")
    chain_pem = settings.get("ssl.keystore.certificate.chain")
    if key_pem or chain_pem:
        if not (key_pem and chain_pem):
            missing = settings.name("ssl.keystore.certificate.chain" if key_pem else "ssl.keystore.key")
            raise ConfigException(f"{missing} is required with PEM key/certificate strings: give both", missing)
        if location:
            raise ConfigException(
                f"{settings.name('ssl.keystore.location')} cannot be combined with "
                f"{settings.name('ssl.keystore.key')}: give either the PEM strings or the file",
                settings.name("ssl.keystore.location"),
            )
        pem = (key_pem.strip() + "\n" + chain_pem.strip() + "\n").encode()
        _load_chain(context, pem, settings.get("ssl.key.password"), settings.name("ssl.keystore.key"))
        return True
    if not location:
        return False
    where = settings.name("ssl.keystore.location")
    data = _read(location, where)
    if _store_type(settings, "ssl.keystore.type", "ssl.keystore.location", data) == "PEM":
        password = settings.get("ssl.key.password") or settings.get("ssl.keystore.password")
        _load_chain(context, data, password, where)
        return True
    password_key = settings.name("ssl.keystore.password")
    key, cert, extra = _pkcs12(data, settings.get("ssl.keystore.password"), where, password_key)
    if key is None or cert is None:
        raise ConfigException(
            f"{where}: {location} holds no private key with its certificate: export both into the PKCS12 store", where
        )
    from cryptography.hazmat.primitives import serialization

    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ) + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [cert, *extra])
    _load_chain(context, pem, None, where)
    return True


def _load_truststore(context: ssl.SSLContext, settings: TlsSettings) -> bool:
    """Trust the truststore's certificates; False when none is set."""
    pem_certs = settings.get("ssl.truststore.certificates")
    location = settings.get("ssl.truststore.location")
    if pem_certs:
        where, cadata = settings.name("ssl.truststore.certificates"), pem_certs
    elif location:
        where = settings.name("ssl.truststore.location")
        data = _read(location, where)
        if _store_type(settings, "ssl.truststore.type", "ssl.truststore.location", data) == "PEM":
            cadata = data.decode("ascii", "replace")
        else:
            from cryptography.hazmat.primitives import serialization

            password_key = settings.name("ssl.truststore.password")
            _, cert, extra = _pkcs12(data, settings.get("ssl.truststore.password"), where, password_key)
            certs = [c for c in [cert, *extra] if c is not None]
            cadata = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)
    else:
        return False
    try:
        context.load_verify_locations(cadata=cadata)
    except (ssl.SSLError, ValueError) as e:
        raise ConfigException(f"{where}: no CA certificate could be read ({e}): give PEM certificates", where) from None
    return True


def _protocols(context: ssl.SSLContext, settings: TlsSettings) -> None:
    names = [p.strip() for p in (settings.get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    unknown = [n for n in names if n not in _VERSIONS]
    if unknown:
        key = settings.name("ssl.enabled.protocols")
        raise ConfigException(f"{key}: {', '.join(unknown)} not supported: use TLSv1.2 and/or TLSv1.3", key)
    versions = [_VERSIONS[n] for n in names]
    context.minimum_version = min(versions)
    context.maximum_version = max(versions)


def client_auth(settings: TlsSettings) -> str:
    """`required`, `requested` or `none` (Kafka's ssl.client.auth, else Confluent's ssl.client.authentication)."""
    value = (settings.get("ssl.client.auth") or settings.get("ssl.client.authentication") or "none").strip().lower()
    if value not in ("required", "requested", "none"):
        key = settings.name("ssl.client.auth")
        raise ConfigException(f"{key}={value} is not one of required, requested, none", key)
    return value


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The context of an https listener (Jetty's SslContextFactory.Server in Kafka)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(context, settings)
    if not _load_keystore(context, settings):
        key = settings.name("ssl.keystore.location")
        raise ConfigException(
            f"an https listener needs a keystore: set {key} (PKCS12, or PEM with the key and its chain) or "
            f"{settings.name('ssl.keystore.key')} with {settings.name('ssl.keystore.certificate.chain')}",
            key,
        )
    mode = client_auth(settings)
    if mode != "none":
        if not _load_truststore(context, settings):
            key = settings.name("ssl.truststore.location")
            raise ConfigException(
                f"{settings.name('ssl.client.auth')}={mode} needs the CA that signs client certificates: set {key} "
                f"(or {settings.name('ssl.truststore.certificates')})",
                key,
            )
        context.verify_mode = ssl.CERT_REQUIRED if mode == "required" else ssl.CERT_OPTIONAL
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """The context for calling other workers' https listeners (Jetty's SslContextFactory.Client in Kafka).

    Trusts the truststore if one is set, else the system's CAs; presents the keystore's certificate
    to a peer that asks for one; checks the peer's host name unless
    ssl.endpoint.identification.algorithm is empty."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(context, settings)
    if not _load_truststore(context, settings):
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    _load_keystore(context, settings)
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    context.check_hostname = (algorithm if algorithm is not None else "https").strip().lower() == "https"
    return context

"""Kafka client settings under the Java client's names, for librdkafka.

Users bring worker.properties and Debezium configs written for Java clients: `security.protocol`,
`sasl.jaas.config`, `ssl.truststore.location`, `max.request.size`, .... librdkafka shares most
names but not these, and rejects or ignores what it does not know. This module translates the
ones with a librdkafka equivalent and refuses the rest with the librdkafka setting to use.
In the SPI because plugins that open their own clients (Debezium's Kafka schema history) take
such settings too. Hand-written: no library maps Java client configs to librdkafka's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from cdc.api.errors import ConfigException

# Worker-level (unprefixed) keys that configure how every client reaches the brokers.
SECURITY_KEYS = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.kerberos.service.name",
    "sasl.oauthbearer.token.endpoint.url",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "ssl.cipher.suites",
)

# Java names librdkafka spells differently (same meaning and unit).
_RENAMED = {"max.request.size": "message.max.bytes", "sasl.mechanism": "sasl.mechanisms"}
# Java-only settings that have no effect to carry over (the JVM's TLS and class plumbing).
_NO_EFFECT = frozenset(
    {
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "ssl.truststore.password",  # PEM CA files have none
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
    }
)
_JAVA_CLASSES = ("sasl.login.callback.handler.class", "sasl.client.callback.handler.class", "ssl.engine.factory.class")
_JAAS = re.compile(r"^\s*([\w.$]+)\s+(?:required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$", re.DOTALL)
_JAAS_OPTION = re.compile(r'([\w.$]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))')


def librdkafka_config(props: Mapping[str, object], where: str = "") -> dict[str, str]:
    """`props` (Java or librdkafka names) as librdkafka settings. `where` is the prefix the keys
    had in the user's config (`producer.`, `schema.history.internal.consumer.`, ...), for errors."""
    out: dict[str, str] = {}
    values = {k: str(v) for k, v in props.items()}
    for key, value in values.items():
        if key in _NO_EFFECT or key in ("ssl.truststore.type", "ssl.keystore.type"):
            continue
        if key in _JAVA_CLASSES:
            raise ConfigException(
                f"{where}{key}: a Java class cannot run in this Python worker's Kafka client (librdkafka); "
                "remove it and configure the mechanism with librdkafka's settings (kafka.sasl.oauthbearer.*, ...)",
                where + key,
            )
        if key == "sasl.jaas.config":
            out.update(_jaas(value, values, where))
        elif key == "ssl.truststore.location":
            out["ssl.ca.location"] = _pem_only(values, "truststore", where)
        elif key == "ssl.truststore.certificates":
            out["ssl.ca.pem"] = value
        elif key == "ssl.keystore.location":
            out.update(_keystore(values, where))
        elif key == "ssl.keystore.certificate.chain":
            out["ssl.certificate.pem"] = value
        elif key == "ssl.keystore.key":
            out["ssl.key.pem"] = value
        elif key == "ssl.endpoint.identification.algorithm":
            out[key] = value.lower() or "none"  # Java's "" turns host name checking off
        elif key == "security.protocol":
            out[key] = value.lower()
        else:
            out[_RENAMED.get(key, key)] = value
    return out


def _store_type(values: Mapping[str, str], store: str, where: str) -> str:
    """The store's type: as given, else PEM when the file is PEM text, else Java's default JKS."""
    given = values.get(f"ssl.{store}.type")
    if given:
        return given.upper()
    try:
        head = Path(values[f"ssl.{store}.location"]).read_bytes()[:64]
    except OSError as e:
        key = f"{where}ssl.{store}.location"
        raise ConfigException(f"{key}: cannot read it ({e})", key) from e
    return "PEM" if head.lstrip().startswith(b"-----BEGIN") else "JKS"


def _pem_only(values: Mapping[str, str], store: str, where: str) -> str:
    kind = _store_type(values, store, where)
    if kind != "PEM":
        raise ConfigException(
            f"{where}ssl.truststore.location: librdkafka reads CA certificates as PEM only, and this "
            f"truststore is {kind}; export it (keytool -exportcert -rfc -keystore <file> -alias <ca> "
            f"-file ca.pem), point ssl.truststore.location at ca.pem and set ssl.truststore.type=PEM",
            f"{where}ssl.truststore.location",
        )
    return values["ssl.truststore.location"]


def _keystore(values: Mapping[str, str], where: str) -> dict[str, str]:
    location = values["ssl.keystore.location"]
    kind = _store_type(values, "keystore", where)
    if kind == "PKCS12":
        out = {"ssl.keystore.location": location}
        if "ssl.keystore.password" in values:
            out["ssl.keystore.password"] = values["ssl.keystore.password"]
        return out
    if kind == "PEM":  # one file with the certificate chain and the private key
        return {"ssl.certificate.location": location, "ssl.key.location": location}
    raise ConfigException(
        f"{where}ssl.keystore.location: librdkafka reads client keystores as PKCS12 or PEM, and this one is "
        f"{kind}; convert it (keytool -importkeystore -srckeystore <file> -destkeystore client.p12 "
        "-deststoretype PKCS12) and set ssl.keystore.type=PKCS12",
        f"{where}ssl.keystore.location",
    )


def _jaas(text: str, values: Mapping[str, str], where: str) -> dict[str, str]:
    key = f"{where}sasl.jaas.config"
    m = _JAAS.match(text)
    if m is None:
        raise ConfigException(f'{key}: expected `<LoginModule class> required <option>="<value>" …;`', key)
    module = m.group(1).rsplit(".", 1)[-1]
    options = {
        o.group(1): re.sub(r"\\(.)", r"\1", o.group(2)) if o.group(2) is not None else o.group(3)
        for o in _JAAS_OPTION.finditer(m.group(2))
    }
    if module in ("PlainLoginModule", "ScramLoginModule"):
        missing = [o for o in ("username", "password") if o not in options]
        if missing:
            raise ConfigException(f"{key}: {module} needs {' and '.join(missing)}", key)
        return {"sasl.username": options["username"], "sasl.password": options["password"]}
    if module == "Krb5LoginModule":
        out = {}
        if "keyTab" in options:
            out["sasl.kerberos.keytab"] = options["keyTab"]
        if "principal" in options:
            out["sasl.kerberos.principal"] = options["principal"]
        return out
    if module == "OAuthBearerLoginModule" and "clientId" in options:
        if "sasl.oauthbearer.token.endpoint.url" not in values:
            raise ConfigException(
                f"{key}: OAuthBearerLoginModule with clientId needs sasl.oauthbearer.token.endpoint.url", key
            )
        out = {"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": options["clientId"]}
        if "clientSecret" in options:
            out["sasl.oauthbearer.client.secret"] = options["clientSecret"]
        if "scope" in options:
            out["sasl.oauthbearer.scope"] = options["scope"]
        return out
    raise ConfigException(
        f"{key}: the login module {m.group(1)} has no librdkafka equivalent here; PlainLoginModule, "
        "ScramLoginModule, Krb5LoginModule and OAuthBearerLoginModule (OIDC client credentials) are "
        "translated, or set librdkafka's own sasl.* settings under kafka.",
        key,
    )

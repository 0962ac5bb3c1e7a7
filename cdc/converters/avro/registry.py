"""The seam between the AvroConverter and a Schema Registry, and Confluent's subject name strategies.

`SchemaRegistry` names the four methods of confluent-kafka's `SchemaRegistryClient` the converter
calls; the default is that client, built from the converter's keys (`schema.registry.url`, basic
auth, `schema.registry.ssl.*`). Another implementation (the embedded log's in-process registry) is
given to the converter with `AvroConverter.use_registry`. confluent-kafka's client is used rather
than a hand-written HTTP client: it speaks every Confluent-compatible registry (Confluent,
Apicurio's ccompat API, Karapace, Redpanda), retries, and caches ids and schemas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from cdc.api.errors import ConfigException

__all__ = [
    "SchemaRegistry",
    "client_config",
    "new_client",
    "subject_name_strategy",
]


@runtime_checkable
class SchemaRegistry(Protocol):
    """What the converter needs of a Schema Registry client (confluent-kafka's method names)."""

    def register_schema(self, subject_name: str, schema: Any, normalize_schemas: bool = False) -> int:
        """Register `schema` (a `confluent_kafka.schema_registry.Schema`) under the subject; its id."""
        ...

    def get_schema(self, schema_id: int) -> Any:
        """The `Schema` with that id; `SchemaRegistryError` (404) when there is none."""
        ...

    def get_latest_version(self, subject_name: str) -> Any:
        """The subject's latest `RegisteredSchema` (`schema_id`, `version`, `schema`)."""
        ...

    def lookup_schema(self, subject_name: str, schema: Any, normalize_schemas: bool = False) -> Any:
        """The `RegisteredSchema` of `schema` under the subject (its id and version)."""
        ...


_SUBJECT_PACKAGE = "io.confluent.kafka.serializers.subject."


def _topic_name(topic: str, is_key: bool, record_name: str | None) -> str:
    return f"{topic}-{'key' if is_key else 'value'}"


def _record_name(topic: str, is_key: bool, record_name: str | None) -> str:
    if not record_name:
        raise ConfigException("RecordNameStrategy needs a record schema; this value's schema is not a struct")
    return record_name


def _topic_record_name(topic: str, is_key: bool, record_name: str | None) -> str:
    return f"{topic}-{_record_name(topic, is_key, record_name)}"


SubjectNameStrategy = Callable[[str, bool, "str | None"], str]

_STRATEGIES: dict[str, SubjectNameStrategy] = {
    "TopicNameStrategy": _topic_name,
    # Confluent's default since 8.0.4/8.1.2/8.2.2: the subject associated with the topic, falling
    # back to TopicNameStrategy. No registry here keeps associations, so it is the fallback.
    "AssociatedNameStrategy": _topic_name,
    "RecordNameStrategy": _record_name,
    "TopicRecordNameStrategy": _topic_record_name,
}


def subject_name_strategy(name: str, key: str) -> SubjectNameStrategy:
    """The strategy called `name` (Confluent's class name or its simple name); `key` names the config."""
    simple = name.strip()
    if simple.startswith(_SUBJECT_PACKAGE):
        simple = simple[len(_SUBJECT_PACKAGE) :]
    strategy = _STRATEGIES.get(simple)
    if strategy is None:
        raise ConfigException(
            f"{key}: unknown subject name strategy {name!r}; use one of"
            f" {', '.join(_SUBJECT_PACKAGE + s for s in _STRATEGIES)} (or its short name)",
            key,
            name,
        )
    return strategy


# schema.registry.ssl.<X> -> confluent-kafka's client key; PEM files only (the Python client's TLS).
_SSL_KEYS = {
    "ca.location": "ssl.ca.location",
    "certificate.location": "ssl.certificate.location",
    "key.location": "ssl.key.location",
    "key.password": "ssl.key.password",
}


def client_config(
    urls: list[str],
    credentials_source: str,
    user_info: str | None,
    originals: Mapping[str, Any],
) -> dict[str, Any]:
    """confluent-kafka's SchemaRegistryClient config for the converter's keys.

    Java's `schema.registry.ssl.truststore.*`/`keystore.*` are JKS/PKCS12 files Python's `ssl`
    cannot load: a PEM truststore (`schema.registry.ssl.truststore.type=PEM`) is taken as the CA
    file, anything else is refused with the PEM keys to use instead.
    """
    conf: dict[str, Any] = {"url": ",".join(urls)}
    source = credentials_source.upper()
    if source == "USER_INFO":
        if not user_info:
            raise ConfigException(
                "basic.auth.user.info: basic.auth.credentials.source=USER_INFO needs"
                " basic.auth.user.info=user:password",
                "basic.auth.user.info",
            )
        conf["basic.auth.user.info"] = user_info
    elif source == "SASL_INHERIT":
        raise ConfigException(
            "basic.auth.credentials.source: SASL_INHERIT is not supported by this converter; use USER_INFO with"
            " basic.auth.user.info=user:password",
            "basic.auth.credentials.source",
        )
    elif source != "URL":
        raise ConfigException(
            f"basic.auth.credentials.source: unknown value {credentials_source!r}; use URL or USER_INFO",
            "basic.auth.credentials.source",
        )
    prefix = "schema.registry.ssl."
    for key, value in originals.items():
        if not key.startswith(prefix) or value in (None, ""):
            continue
        rest = key[len(prefix) :]
        text = value.value() if hasattr(value, "value") and callable(value.value) else str(value)
        if rest in _SSL_KEYS:
            conf[_SSL_KEYS[rest]] = text
        elif rest == "truststore.location":
            kind = str(originals.get(prefix + "truststore.type", "JKS")).upper()
            if kind != "PEM":
                raise ConfigException(
                    f"{key}: a {kind} truststore cannot be read here; give a PEM file with"
                    f" {prefix}truststore.type=PEM or {prefix}ca.location",
                    key,
                )
            conf["ssl.ca.location"] = text
        elif rest == "keystore.location":
            raise ConfigException(
                f"{key}: JKS/PKCS12 keystores cannot be read here; give PEM files with"
                f" {prefix}certificate.location and {prefix}key.location",
                key,
            )
        elif rest == "endpoint.identification.algorithm" and text == "":
            continue
    return conf


def new_client(conf: Mapping[str, Any]) -> SchemaRegistry:
    """confluent-kafka's SchemaRegistryClient (`mock://` URLs give its in-memory mock)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    try:
        return SchemaRegistryClient.new_client(dict(conf))  # type: ignore[no-any-return]
    except (ValueError, TypeError) as e:
        raise ConfigException(f"schema.registry.url: {e}", "schema.registry.url") from e

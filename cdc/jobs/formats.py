"""The form of a job's records on its transport: JSON (Kafka's JsonConverter, the default) or Avro.

`transport.format: avro` makes the worker's key and value converters Confluent's
`io.confluent.connect.avro.AvroConverter` and the Spark sink decode Avro
(`decode=debezium-avro`). The converters' registry is `transport.schema.registry.url` (with
`basic.auth.credentials.source` / `basic.auth.user.info`), which transport=kafka needs; on the
embedded transport it is left unset, and the worker hands the converters the embedded log's
own registry, which the sink reads from the same file. A job may instead name the converter in
its source (`value.converter: io.confluent.connect.avro.AvroConverter`, with
`value.converter.schema.registry.url`), as a Kafka Connect connector config does: the job's
format is then Avro all the same.

Kept apart from spec.py (which calls `converter_props`) so the format rules live in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

AVRO_CONVERTER = "io.confluent.connect.avro.AvroConverter"
_AVRO_NAMES = {AVRO_CONVERTER.lower(), "avro", "avroconverter"}
# The registry client settings a job's transport may give, under AvroConverter's names.
REGISTRY_KEYS = ("schema.registry.url", "basic.auth.credentials.source", "basic.auth.user.info")


def _text(value: Any) -> str:
    return ",".join(str(v) for v in value) if isinstance(value, list) else str(value)


def is_avro_converter(name: object) -> bool:
    return str(name or "").strip().lower() in _AVRO_NAMES


def record_format(transport: Mapping[str, Any], source: Mapping[str, Any]) -> str:
    """ "avro" when the transport says so or the source's value converter is AvroConverter, else "json"."""
    if str(transport.get("format", "json")).lower() == "avro":
        return "avro"
    return "avro" if is_avro_converter(source.get("value.converter")) else "json"


def registry_settings(transport: Mapping[str, Any], source: Mapping[str, Any]) -> dict[str, str]:
    """schema.registry.url and the client's settings: the transport's, else the source's value converter's."""
    out = {k: _text(transport[k]) for k in REGISTRY_KEYS if transport.get(k) not in (None, "")}
    if "schema.registry.url" not in out:
        prefix = "value.converter."
        keys = (*REGISTRY_KEYS, "schema.registry.basic.auth.user.info")
        for key, value in source.items():
            rest = key[len(prefix) :]
            if key.startswith(prefix) and (rest in keys or rest.startswith("schema.registry.ssl.")):
                out[rest] = _text(value)
    return out


def converter_props(transport: Mapping[str, Any], source: Mapping[str, Any]) -> dict[str, str]:
    """Worker properties for `format: avro` (key.converter, value.converter and their registry
    settings); none for JSON, the worker's default."""
    if str(transport.get("format", "json")).lower() != "avro":
        return {}
    props: dict[str, str] = {}
    registry = {k: _text(transport[k]) for k in REGISTRY_KEYS if transport.get(k) not in (None, "")}
    for role in ("key.converter", "value.converter"):
        props[role] = AVRO_CONVERTER
        props.update({f"{role}.{k}": v for k, v in registry.items()})
    return props


def sink_source_options(transport: Mapping[str, Any], source: Mapping[str, Any]) -> dict[str, str]:
    """The Spark source's decoding options for the job's format (decode=debezium-avro and the registry)."""
    if record_format(transport, source) != "avro":
        return {}
    return {"decode": "debezium-avro", **registry_settings(transport, source)}


def missing_registry(transport: Mapping[str, Any], source: Mapping[str, Any]) -> str | None:
    """Why an Avro job on Kafka cannot run without a registry URL (None when it can)."""
    if record_format(transport, source) != "avro" or str(transport.get("type", "embedded")) != "kafka":
        return None
    if registry_settings(transport, source).get("schema.registry.url"):
        return None
    return (
        "format avro on transport=kafka needs the Schema Registry the converters write to: set "
        "transport.schema.registry.url (e.g. http://registry:8081); only the embedded transport has its own"
    )

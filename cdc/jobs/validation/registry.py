"""Checks of an Avro job's Schema Registry: given where it must be, and answering when it is given.

The reachability check asks the registry for its subjects (Confluent's `GET /subjects`, which
every Confluent-compatible registry serves: Confluent, Apicurio's ccompat API, Karapace,
Redpanda) through confluent-kafka's `SchemaRegistryClient`, the client the converters and the
Spark sink use, with no retries and the inspection commands' time bound.
"""

from __future__ import annotations

from typing import Any

from cdc.jobs.formats import missing_registry, record_format, registry_settings
from cdc.jobs.validation.problems import Collector


def check_registry(job: dict[str, Any], out: Collector) -> None:
    """An Avro job on Kafka names its registry (the embedded transport has its own)."""
    transport, source = job.get("transport") or {}, job.get("source") or {}
    why = missing_registry(transport, source)
    if why:
        out.add(("transport", "schema.registry.url"), why)


def check_registry_reachable(job: dict[str, Any], out: Collector) -> None:
    """The configured schema.registry.url answers within the inspection bound."""
    transport, source = job.get("transport") or {}, job.get("source") or {}
    if record_format(transport, source) != "avro":
        return
    settings = registry_settings(transport, source)
    url = settings.get("schema.registry.url")
    if not url:
        return
    problem = registry_problem(settings)
    if problem:
        path = ("transport", "schema.registry.url") if transport.get("schema.registry.url") else ("source",)
        out.add(path, problem)


def registry_problem(settings: dict[str, str]) -> str | None:
    """Why the registry at settings' schema.registry.url cannot be used (one line), or None."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    from cdc.api.errors import ConfigException
    from cdc.converters.avro.registry import client_config, new_client
    from cdc.log.base import INSPECTION_REACH_TIMEOUT

    url = settings["schema.registry.url"]
    urls = [u.strip() for u in url.split(",") if u.strip()]
    try:
        conf = client_config(
            urls,
            settings.get("basic.auth.credentials.source", "URL"),
            settings.get("basic.auth.user.info") or settings.get("schema.registry.basic.auth.user.info"),
            settings,
        )
        conf.update({"timeout": max(1, int(INSPECTION_REACH_TIMEOUT)), "max.retries": 0})
        client = new_client(conf)
        client.get_subjects()
    except ConfigException as e:
        return str(e)
    except SchemaRegistryError as e:
        return (
            f"the Schema Registry at {url} refused the request (HTTP {e.http_status_code}, error code {e.error_code}:"
            f" {' '.join(str(e.error_message).split())}); check the URL and basic.auth.user.info"
        )
    except Exception as e:
        return (
            f"cannot reach the Schema Registry at {url} ({type(e).__name__}: {' '.join(str(e).split())[:200]}); "
            "check schema.registry.url and that the registry is running"
        )
    return None

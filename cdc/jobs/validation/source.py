"""The source connector's config checked by the connector itself, as Kafka Connect's
`PUT /connector-plugins/{type}/config/validate` does (AbstractHerder.validateConnectorConfig)."""

from __future__ import annotations

from typing import Any

from cdc.api.errors import ConfigException
from cdc.jobs.spec import CONNECTOR_ALIASES, JobSpec, source_family
from cdc.jobs.validation.problems import Collector, did_you_mean
from cdc.jobs.validation.unknown_keys import report_unknown_keys


def check_source_name(job: dict[str, Any], out: Collector) -> None:
    """The connector is named after the job; a different source.name would be silently replaced."""
    name = job["source"].get("name")
    if name is not None and str(name) != job["name"]:
        out.add(
            ("source", "name"),
            f"the source connector takes the job's name ({job['name']!r}), not {str(name)!r}; "
            "remove source.name, or rename the job",
        )


def check_source(job: dict[str, Any], out: Collector, registry: Any) -> None:
    """The connector class resolves, its ConfigDef accepts the config, and no key is unknown."""
    from cdc.runtime.plugins import CONNECTOR_KINDS
    from cdc.runtime.validation import ConnectorValidator

    spec = JobSpec(job["name"], job["source"], job.get("transforms") or [], job.get("transport") or {})
    config = spec.connector_config()
    cls_name = str(job["source"]["connector.class"])
    try:
        registry.resolve(config["connector.class"], CONNECTOR_KINDS, "source.connector.class")
    except ConfigException:
        known = sorted(CONNECTOR_ALIASES)
        out.add(
            ("source", "connector.class"),
            f"unknown connector {cls_name!r}{did_you_mean(cls_name.lower(), known)} "
            f"(short names: {', '.join(known)}; or a class installed as a cdc plugin)",
        )
        return
    validator = ConnectorValidator(registry)
    values = validator.validate(config)
    for v in values:
        for err in v.errors:
            key = v.name
            if key in ("transforms", "predicates") or key.startswith(("transforms.", "predicates.")):
                out.add(("transforms",), err)
            elif key == "name":
                out.add(("name",), err)
            else:
                out.add(("source", key), err)
    # Kafka Connect accepts an unknown key with a warning ("supplied but isn't a known config"); a
    # near miss of a known key is an error here (the job would run with the default), anything
    # else a warning. Pass-through keys (database.*, driver.*, …) count only as near misses.
    unknown = {u.name: u for u in validator.unknown_keys(config, values=values)}
    report_unknown_keys(job, unknown, cls_name, out)


def debezium_source(job: dict[str, Any]) -> bool:
    """A MySQL/MariaDB or PostgreSQL connector: Debezium's events and topic names."""
    cls = str(job["source"].get("connector.class", ""))
    return source_family(CONNECTOR_ALIASES.get(cls.lower(), cls)) is not None


def _live_connector(job: dict[str, Any], registry: Any) -> tuple[Any, dict[str, str]] | None:
    """The source connector (a fresh instance) and its config, when it checks the live database
    before a start (`preflight`: the login, as Debezium's connectors do in Connector.validate, and
    the task's start-up guards); else None."""
    from cdc.runtime.plugins import CONNECTOR_KINDS

    spec = JobSpec(job["name"], job["source"], job.get("transforms") or [], job.get("transport") or {})
    config = spec.connector_config()
    try:
        cls = registry.resolve(config["connector.class"], CONNECTOR_KINDS, "source.connector.class").cls
    except ConfigException:
        return None  # check_source reported it
    connector = cls()
    return (connector, config) if callable(getattr(connector, "preflight", None)) else None


def check_source_connection(job: dict[str, Any], out: Collector, registry: Any) -> bool:
    """The connector's own checks against the live database (credentials, binlog settings, grants,
    wal_level, slot, publication), one problem per key with the connector's message, then its
    warnings when there was no problem; secrets never shown. True when there was no problem."""
    from cdc.runtime.traces import redact
    from cdc.runtime.validation import ConnectorValidator

    found = _live_connector(job, registry)
    if found is None:
        return True
    connector, config = found
    secrets = ConnectorValidator(registry).secret_values(config)
    clean = True
    for value in connector.preflight(config):
        for error in value.errors:
            out.add(("source", value.name), " ".join(redact(error, secrets).split()))
            clean = False
    # A connector may also say what is worth a look without stopping the start: `preflight_warnings`,
    # ConfigValues whose messages are warnings (MySQL: a database.server.id another replica uses).
    warnings = getattr(connector, "preflight_warnings", None)
    if clean and callable(warnings):
        for value in warnings(config):
            for message in value.errors:
                out.warn(("source", value.name), " ".join(redact(message, secrets).split()))
    return clean


def captured_tables(job: dict[str, Any], registry: Any) -> list[str] | None:
    """What the source captures now (`<db>.<table>` or `<schema>.<table>`), asked of the connector
    (`matching_collections`, Debezium's getMatchingCollections); None when it cannot say."""
    found = _live_connector(job, registry)
    if found is None or not callable(getattr(found[0], "matching_collections", None)):
        return None
    try:
        return list(found[0].matching_collections(found[1]))
    except Exception:  # a refused login: check_source_connection reported it
        return None

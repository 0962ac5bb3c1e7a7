"""The job's `sink:` section as the Spark sink's own config (cdc_spark.apply.config.SinkConfig).

As Debezium Server turns its `debezium.sink.*` properties into a sink's config, the job
turns its YAML into the keys `SinkConfig.parse` reads. `cdc run` starts the sink with it,
`cdc validate` checks it, `cdc verify` finds an Iceberg catalog through it.
"""

from __future__ import annotations

import os
from typing import Any

from cdc.api import libpq_tls
from cdc.api.errors import ConfigException
from cdc.jobs.spec import JobSpec
from cdc.jobs.topics import job_topic_router, topic_prefix


def sink_config(job: JobSpec) -> dict[str, Any]:
    """The Spark sink's config for the job: target, tables, error handling, TLS."""
    s = job.sink
    conf: dict[str, Any] = {"target": s["type"], "app.id": f"cdc-{job.name}"}
    if "path" in s:
        conf["path"] = s["path"]
    if "dsn" in s:
        conf["dsn"] = s["dsn"]
    for key in libpq_tls.PARAMS:  # the PostgreSQL target's TLS (sslmode, sslrootcert, sslcert, sslkey, sslpassword)
        if s.get(key) is not None:
            conf[key] = str(s[key])
    if "schema" in s:
        conf["schema"] = s["schema"]
    if s["type"] == "iceberg":
        path = s.get("path", "lake")
        conf["catalog"] = {
            "uri": s.get("catalog") or f"sqlite:///{os.path.abspath(path)}/catalog.db",
            "warehouse": f"file://{os.path.abspath(path)}",
        }
        conf["namespace"] = s.get("schema", "cdc")
    if "errors.tolerance" in s:
        conf["errors.tolerance"] = s["errors.tolerance"]
    if "errors.deadletter.table" in s:
        conf["errors.deadletterqueue.path"] = s["errors.deadletter.table"]
    if "errors.deadletterqueue.topic.name" in s:
        conf["errors.deadletterqueue.topic.name"] = s["errors.deadletterqueue.topic.name"]
        conf["errors.deadletterqueue.context.headers.enable"] = str(
            s.get("errors.deadletterqueue.context.headers.enable", False)
        ).lower()
    conf["truncate.enabled"] = str(s.get("truncate", "apply") == "apply").lower()
    placeholder = job.source.get("unavailable.value.placeholder")
    if placeholder is not None:  # the sink keeps the value wherever the connector put its placeholder
        conf["unavailable.value.placeholder"] = str(placeholder)
    tables = job.tables
    prefix = topic_prefix(job)
    route = job_topic_router(job)
    # The sink sees each table's topic as the job's RegexRouter SMTs renamed it.
    conf["table.names"] = {route(f"{prefix}.{t.source}"): t.target for t in tables if t.target}
    conf["partition.by"] = {route(f"{prefix}.{t.source}"): list(t.partition_by) for t in tables if t.partition_by}
    for attr, key in (("mode", "mode"), ("delete_mode", "delete.mode")):
        values = {getattr(t, attr) for t in tables}
        if len(values) > 1:
            raise ConfigException(
                f"sink.tables: {key} differs between tables ({', '.join(sorted(values))}); one job applies one "
                f"{key} to all its tables, so split the job or align the setting",
                f"sink.tables.{key}",
            )
        if values:
            conf[key] = values.pop()
    return conf

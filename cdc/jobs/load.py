"""Load and validate a job file, reporting every problem with its YAML path and line.

`cdc validate` prints all problems at once (a user fixes a file in one pass); `load_job`
raises on the first one for commands that need a valid job. Each check lives in
cdc/jobs/validation/; this module runs them in order and keeps the entry points.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from cdc.jobs.spec import JobSpec
from cdc.jobs.validation.environment import (
    check_cluster,
    check_dsn,
    check_kafka_clients,
    check_kafka_reachable,
    check_reachable,
    check_state_dir,
)
from cdc.jobs.validation.keys import check_table_keys
from cdc.jobs.validation.position_loss import check_position_loss
from cdc.jobs.validation.problems import Collector, JobError, JobProblem
from cdc.jobs.validation.providers import resolve_references
from cdc.jobs.validation.registry import check_registry, check_registry_reachable
from cdc.jobs.validation.routes import check_topic_delimiter, check_topic_routes
from cdc.jobs.validation.schema import check_schema, job_schema
from cdc.jobs.validation.sink import check_sink, check_sink_tables, check_sink_writable
from cdc.jobs.validation.source import (
    captured_tables,
    check_source,
    check_source_connection,
    check_source_name,
    debezium_source,
)
from cdc.jobs.validation.text_values import check_text_values
from cdc.jobs.validation.transforms import check_transform_shapes
from cdc.jobs.validation.yaml_text import parse_job_yaml, read_job_text

__all__ = ["JobError", "JobProblem", "job_schema", "load_job", "read_job_text", "validate_job_text"]

log = logging.getLogger(__name__)


def validate_job_text(
    text: str,
    filename: str = "job.yaml",
    check_connectivity: bool = True,
    registry: Any = None,
    inspect_only: bool = False,
) -> tuple[JobSpec | None, list[JobProblem]]:
    """The job (None when invalid) and its problems, errors first; a problem marked `warning`
    does not make the job invalid. `inspect_only` is for commands that read the job's state
    (status, offsets, topics): they never touch the database, so unresolved ${…} in `source`
    and the connector's own config checks do not stop them."""
    data, lines, stop = parse_job_yaml(text)
    if data is None:
        return None, stop
    out = Collector(lines)
    check_text_values(data, out)  # a NUL would reach open() and the drivers as a traceback: stop here
    if out.problems:
        return None, out.problems
    data = resolve_references(data, out, lenient=inspect_only)
    check_schema(data, out)
    check_dsn(data, out)
    if not out.problems:
        check_cluster(data, out)
        check_kafka_clients(data, out)
    if not out.problems:
        check_sink(data, out)
        check_registry(data, out)
    if not out.problems and not inspect_only:
        check_state_dir(data, out)
        check_source_name(data, out)
        if registry is None:
            from cdc.runtime.plugins import PluginRegistry

            registry = PluginRegistry.discover()
        check_source(data, out, registry)
        if debezium_source(data):  # the sink's needs below are those of Debezium's events and topics
            check_transform_shapes(data, out)
            check_topic_delimiter(data, out)
            if not out.problems:
                check_topic_routes(data, out, registry)
    if not out.problems and check_connectivity:
        check_reachable(data, out)
        if not out.problems and not inspect_only:  # reachable: the connector's own checks on the live database
            check_source_connection(data, out, registry)
            if not out.problems and (captured := captured_tables(data, registry)) is not None:
                check_sink_tables(data, captured, out)
            if not out.problems:
                check_table_keys(data, out)  # a keyless table, keys naming no column
        check_kafka_reachable(data, out)
        if not out.problems and not inspect_only:  # the stored offset's position, while the server keeps it
            check_position_loss(data, out)
        check_registry_reachable(data, out)
        if not inspect_only:
            check_sink_writable(data, out)  # the lake directory or the warehouse user's grants
    if out.problems:
        return None, out.problems + out.warnings
    return (
        JobSpec(
            data["name"],
            data["source"],
            data.get("transforms") or [],
            data.get("transport") or {},
            data["sink"],
            data.get("spark") or {},
            data.get("log.format"),
            data.get("verify") or {},
        ),
        out.warnings,
    )


def load_job(
    path: str | Path, check_connectivity: bool = False, registry: Any = None, inspect_only: bool = False
) -> JobSpec:
    """The valid job in the file at `path`; a `JobError` naming its first problem otherwise."""
    text = read_job_text(path)
    job, problems = validate_job_text(text, str(path), check_connectivity, registry, inspect_only)
    if job is None:
        raise JobError(str(path), [p for p in problems if not p.warning])
    for p in problems:
        log.warning("%s", p.render(str(path)))
    return job

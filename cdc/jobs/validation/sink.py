"""The Spark sink's own config checks (cdc_spark.apply.config.SinkConfig) at validate time."""

from __future__ import annotations

from typing import Any

from cdc.api.errors import ConfigException
from cdc.jobs.sink_config import sink_config, sink_problem
from cdc.jobs.spec import JobSpec
from cdc.jobs.validation.problems import Collector, did_you_mean


def check_sink(job: dict[str, Any], out: Collector) -> None:
    """The Spark sink's own checks (tolerance without a dead-letter target, partitioning a
    target that cannot be partitioned, …) at validate time rather than mid-run."""
    try:
        from cdc_spark.apply.config import SinkConfig
        from cdc_spark.apply.errors import SinkConfigError
    except ImportError:
        return  # no Spark plugin here: `cdc run` reports that itself
    spec = JobSpec(job["name"], job["source"], [], job.get("transport") or {}, job["sink"], job.get("spark") or {})
    try:
        SinkConfig.parse(sink_config(spec))
    except (SinkConfigError, ConfigException) as e:  # at its YAML path, in the job's key names
        out.add(*sink_problem(e, job["sink"]))


# Transforms that rename topics: sink.tables is then keyed by the routed names, not the source's.
_ROUTERS = ("RegexRouter", "ContentBasedRouter", "ByLogicalTableRouter", "TimestampRouter", "TopicRegexRouter")
_LISTED = 12  # captured tables named in the message; the rest are counted


def check_sink_tables(job: dict[str, Any], captured: list[str], out: Collector) -> None:
    """Each sink.tables entry names a table the source captures: an entry for a table it does not
    (a typo, a table outside table.include.list) would configure nothing and never get a row."""
    tables = (job.get("sink") or {}).get("tables") or {}
    if not tables or any(str(t.get("type", "")).rsplit(".", 1)[-1] in _ROUTERS for t in job.get("transforms") or []):
        return
    known = {c.lower(): c for c in captured}
    listed = ", ".join(captured[:_LISTED]) + (f" and {len(captured) - _LISTED} more" if len(captured) > _LISTED else "")
    for name in tables:
        if str(name) in captured or str(name).lower() in known:
            continue
        out.add(
            ("sink", "tables", name),
            f"table {name!r} is not captured by the source (captured: {listed or 'none'})"
            f"{did_you_mean(str(name), captured)}; fix the name, or capture it with table.include.list "
            "(a table the source user cannot SELECT is not listed either)",
        )

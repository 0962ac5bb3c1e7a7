"""The Spark sink's own config checks (cdc_spark.apply.config.SinkConfig) at validate time."""

from __future__ import annotations

from typing import Any

from cdc.api.errors import ConfigException
from cdc.jobs.sink_config import sink_config
from cdc.jobs.spec import JobSpec
from cdc.jobs.validation.problems import Collector


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
    except (SinkConfigError, ConfigException) as e:
        out.add(("sink",), str(e))

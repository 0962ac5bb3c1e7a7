"""The tables `cdc run` names up front for `sink.table.name.format` (its own module: it asks the
connector through the validation layer, which itself reads sink_config)."""

from __future__ import annotations

from cdc.jobs.sink_config import TableNamer
from cdc.jobs.spec import JobSpec


def tables_to_name(job: JobSpec) -> list[str]:
    """The captured tables, asked of the live connector, when `sink.table.name.format` uses
    ${db}/${schema}: the sink sees only topics, so the job names each table up front."""
    if not TableNamer(job, lambda t: t).needs_tables:
        return []
    from cdc.jobs.validation.source import captured_tables
    from cdc.runtime.plugins import PluginRegistry

    raw = {"name": job.name, "source": job.source, "transforms": job.transforms, "transport": job.transport}
    return captured_tables(raw, PluginRegistry.discover()) or []

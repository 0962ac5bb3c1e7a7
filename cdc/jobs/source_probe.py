"""What the inspection commands (`cdc status`, `cdc validate`) ask about a job's source: its stored
offset, read from the job's transport without taking anything, and the source connector's answers
about the live database (`source_backlog`, `position_retention`), asked of a fresh connector
instance, with an error as one line and every secret of the config redacted from it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from cdc.jobs.spec import JobSpec
from cdc.log.base import INSPECTION_REACH_TIMEOUT, TopicLog
from cdc.runtime.transport import open_log, open_offset_store
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import describe_offsets

T = TypeVar("T")


def read_stored_offset(job_name: str, config: WorkerConfig, log_: TopicLog) -> dict[str, Any] | None:
    """The source offset the job's connector stored last in the open log, or None."""
    if config.get("offset.storage.topic") not in log_.list_topics() and config.transport != "embedded":
        return None
    store = open_offset_store(config, log_)
    store.start()
    try:
        found = None
        for row in describe_offsets(store):
            if row["connector"] == job_name:
                found = row["offset"]
        return found
    finally:
        store.stop()


def stored_offset(job: JobSpec) -> dict[str, Any] | None:
    """The job's stored source offset; None when it never ran (and then nothing is opened or created)."""
    config = WorkerConfig(job.worker_config())
    if config.transport == "embedded" and not (Path(config.get("state.dir")) / "cdc.db").exists():
        return None
    with open_log(config) as log_:
        log_.probe(INSPECTION_REACH_TIMEOUT)
        return read_stored_offset(job.name, config, log_)


def ask_source(job: JobSpec, question: Callable[[Any, dict[str, str]], T]) -> tuple[T | None, str | None]:
    """`question(connector, connector_config)` on a fresh instance of the job's source connector:
    (its answer, None), or (None, the error in one line, secrets redacted) when it raised (an
    unreachable or refusing database is said, not raised)."""
    from cdc.runtime.plugins import CONNECTOR_KINDS, PluginRegistry
    from cdc.runtime.traces import redact
    from cdc.runtime.validation import ConnectorValidator

    config = job.connector_config()
    registry = PluginRegistry.discover()
    try:
        cls = registry.resolve(config["connector.class"], CONNECTOR_KINDS, "source.connector.class").cls
        return question(cls(), config), None
    except Exception as e:
        secrets = ConnectorValidator(registry).secret_values(config)
        return None, " ".join(redact(str(e) or type(e).__name__, secrets).split())

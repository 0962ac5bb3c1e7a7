"""`cdc validate`: how long the database keeps the position the job's stored offset needs (issue 37).

A job stopped longer than the server keeps its binlog file or its slot's WAL cannot resume: the
next start fails, or takes a new snapshot under snapshot.mode=when_needed. The connector says how
long that is (`SourceConnector.position_retention`, cdc.api.retention); this check warns while
the time left is under `warn.position.loss.seconds` (a top-level job key, default one hour, 0: no
warning), and fails once the position is lost, unless the connector's snapshot.mode recovers by a
new snapshot (then it warns). A job that never ran has no stored offset, so nothing to check.
"""

from __future__ import annotations

from typing import Any

from cdc.api.retention import KEPT, LOST, PositionRetention
from cdc.jobs.source_probe import ask_source, stored_offset
from cdc.jobs.spec import JobSpec
from cdc.jobs.validation.problems import Collector

WARN_KEY = "warn.position.loss.seconds"
DEFAULT_WARN_SECONDS = 3600


def verdict(retention: PositionRetention, warn_seconds: int, now_ms: int | None = None) -> tuple[bool, str] | None:
    """(is_error, message) for a retention that needs attention, else None."""
    if retention.state == LOST:
        return (not retention.snapshot_on_loss, retention.describe(now_ms))
    left = retention.seconds_until_lost(now_ms)
    if retention.state == KEPT and left is not None and left < warn_seconds:
        return (
            False,
            f"{retention.describe(now_ms)}: under {WARN_KEY}={warn_seconds}; run the job before then, or make the "
            f"server keep its log longer ({retention.limit})",
        )
    return None


def check_position_loss(job: dict[str, Any], out: Collector) -> None:
    """Warn (or fail) on the stored offset's position, as `verdict` says; a database that cannot
    answer is a warning (the login itself was checked before)."""
    spec = JobSpec(job["name"], job["source"], job.get("transforms") or [], job.get("transport") or {})
    warn_seconds = int(job.get(WARN_KEY, DEFAULT_WARN_SECONDS))
    offset, error = _offset(spec)
    if error is None and offset is None:
        return  # never ran: no position to lose yet
    retention = None
    if error is None:
        retention, error = ask_source(spec, lambda c, config: c.position_retention(config, offset))
    if error is not None:
        out.warn(("source",), f"cannot tell how long the database keeps the job's position: {error}")
        return
    if not isinstance(retention, PositionRetention):
        return  # the connector cannot say
    found = verdict(retention, warn_seconds)
    if found is not None:
        is_error, message = found
        (out.add if is_error else out.warn)(("source",), message)


def _offset(spec: JobSpec) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return stored_offset(spec), None
    except Exception as e:  # the transport did not answer (check_kafka_reachable says so)
        return None, f"cannot read the stored offset ({' '.join(str(e).split()) or type(e).__name__})"

"""What the running job's lake has applied: the stored source offset, the log's ends, the Spark checkpoint.

A change is in the lake once (1) the source connector stored an offset at or past it (an offset is
stored only after every record before it is durable in the log: ARCHITECTURE.md, Offsets), and
(2) the Spark query committed a batch whose end offsets reach where the log ended at that moment
(Spark commits a batch in its checkpoint after the target committed it). `cdc verify --repair`
(repair_run.py) and the online verify (online.py) both wait this way; `cdc status` reads the same
checkpoint (cdc.jobs.status.committed_offsets) and offsets (cdc.jobs.source_probe).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from cdc.api.errors import ConfigException, ConnectException
from cdc.jobs.spec import JobSpec
from cdc.log.base import TopicLog, TopicPartition

POLL_S = 0.5
REPORT_EVERY_S = 5.0


class NotApplied(ConnectException):
    """The lake did not apply the changes up to the position in time (or cannot, the job being stopped)."""


def job_running(job: JobSpec) -> bool:
    """Whether `cdc run` holds the job's state.dir (as `cdc status` reads it, without taking it)."""
    from cdc.runtime.state_lock import job_role, lock_holder
    from cdc.runtime.worker_config import WorkerConfig

    holder = lock_holder(WorkerConfig(job.worker_config()).get("state.dir"), "transport.state.dir")
    return holder is not None and holder.role in (job_role(job.name), "")


def worker_config(job: JobSpec) -> Any:
    from cdc.runtime.worker_config import WorkerConfig

    return WorkerConfig(job.worker_config())


def ends(log_: TopicLog, topic: str) -> dict[TopicPartition, int]:
    """The topic's end offsets (nothing when the topic does not exist yet)."""
    desc = log_.describe_topic(topic)
    if desc is None:
        return {}
    return log_.end_offsets([TopicPartition(topic, p) for p in range(desc.partitions)])


def retry(call: Callable[[], Any], attempts: int = 20) -> Any:
    """`call()`, again after a short pause while the running job holds the embedded log's write lock."""
    for i in range(attempts):
        try:
            return call()
        except Exception:
            if i == attempts - 1:
                raise
            time.sleep(0.1)
    return None


def stored(job: JobSpec, log_: TopicLog) -> dict[str, Any] | None:
    """The job's stored source offset in the open log."""
    from cdc.jobs.source_probe import read_stored_offset

    return retry(lambda: read_stored_offset(job.name, worker_config(job), log_))


def remote_checkpoint(job: JobSpec) -> bool:
    """A checkpoint on hdfs://, s3a://…: not readable here."""
    return "://" in str((job.spark or {}).get("checkpoint", ""))


def sink_behind(job: JobSpec, until: Mapping[TopicPartition, int]) -> int:
    """Records of `until` (topic partition → end offset) the sink's committed batches do not cover yet."""
    from cdc.jobs.checkpoints import checkpoint_dir, committed_offsets

    _, applied = committed_offsets(Path(checkpoint_dir(job)))
    return sum(max(0, end - applied.get(tp, 0)) for tp, end in until.items())


def wait_applied(
    job: JobSpec,
    reached: Callable[[Mapping[str, Any]], bool],
    where: str,
    topics: Iterable[str],
    timeout_s: float,
    progress: Callable[[str], None],
    running: Callable[[], bool] | None = None,
) -> float:
    """Wait until the lake applied every change up to the source position `where` (`reached(offset)`:
    the stored offset is at or past it), for the records of `topics`; the seconds waited.

    NotApplied on timeout, or when the job is not running (`running`) and its stored offset is short
    of the position (nothing would move it). ConfigException when the checkpoint cannot be read here.
    """
    from cdc.runtime.transport import open_log

    if remote_checkpoint(job):
        raise ConfigException(
            "the sink's checkpoint (spark.checkpoint) is remote, so what the lake applied cannot be read here; "
            "verify offline: stop the job (or let `cdc run --until-caught-up` finish), then `cdc verify --offline`",
            "spark.checkpoint",
        )
    is_running = running or (lambda: job_running(job))
    started = time.monotonic()
    deadline = started + timeout_s
    last_report = started
    with open_log(worker_config(job)) as log_:
        while True:
            offset = stored(job, log_)
            if offset and reached(offset):
                break
            if not is_running():
                raise NotApplied(
                    f"the job is not running and its stored offset ({_offset_text(offset)}) is short of the "
                    f"snapshot's position {where}: start the job (`cdc run`), or verify the lake as it is "
                    "with --offline"
                )
            if time.monotonic() > deadline:
                raise NotApplied(
                    f"the source did not reach {where} within {timeout_s:.0f} s (stored offset "
                    f"{_offset_text(offset)}): the job is behind, or the captured tables had no change since "
                    "(set source.heartbeat.interval.ms so the offset moves on an idle database); --wait-timeout "
                    "waits longer"
                )
            if time.monotonic() - last_report >= REPORT_EVERY_S:
                last_report = time.monotonic()
                progress(f"waiting for the source to reach {where} (at {_offset_text(offset)})")
            time.sleep(POLL_S)
        until: dict[TopicPartition, int] = {}
        for topic in set(topics):
            until.update(retry(lambda t=topic: ends(log_, t)))
    while (behind := sink_behind(job, until)) > 0:
        if time.monotonic() > deadline:
            raise NotApplied(
                f"the sink did not apply the log up to {where} within {timeout_s:.0f} s ({behind} records to "
                "apply): --wait-timeout waits longer"
            )
        if time.monotonic() - last_report >= REPORT_EVERY_S:
            last_report = time.monotonic()
            progress(f"waiting for the sink: {behind} records up to {where} to apply")
        time.sleep(POLL_S)
    return time.monotonic() - started


def _offset_text(offset: Mapping[str, Any] | None) -> str:
    from cdc.jobs.source_positions import position_text

    return position_text("mysql" if offset and "file" in offset else "postgres", dict(offset) if offset else None)

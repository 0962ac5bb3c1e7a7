"""Send a Debezium signal to a job's source connector through the channel the job enables.

The `cdc signal` command's side of cdc.runtime.signal_delivery (which the REST action
`POST /connectors/{name}/signals` shares): the job's connector config picks the channel, the
signal table is written by the source plugin's `cdc.signal_tables` writer, and the kafka channel
goes to `signal.kafka.topic` in the job's transport keyed by `topic.prefix`. A `--channel` the
job's source does not read, or a signal that does not fit Debezium's signal table, is refused
before anything is written (cdc.runtime.signal_delivery). A relative `signal.file` is the job's
own choice, read from where the job runs: it is written from the current directory.
"""

from __future__ import annotations

from cdc.jobs.spec import JobSpec
from cdc.runtime.signal_delivery import (
    SNAPSHOT_TYPES,
    Signal,
    channel_of,
    check_channel,
    deliver,
    execute_snapshot,
    table_writer_for,
)

__all__ = ["SNAPSHOT_TYPES", "Signal", "channel_of", "execute_snapshot", "send"]


def send(job: JobSpec, signal: Signal, channel: str | None = None) -> str:
    """Writes `signal` to the job's channel (or `channel`); returns where it went, for the user."""
    from cdc.runtime.plugins import PluginKind, PluginRegistry
    from cdc.runtime.transport import open_log
    from cdc.runtime.worker_config import WorkerConfig

    config = job.connector_config()
    signal.check()
    if channel is not None:
        check_channel(config, channel)
    writer = None
    if (channel or channel_of(config)) == "source":
        cls = PluginRegistry.discover().resolve(config["connector.class"], [PluginKind.SOURCE], "connector.class").cls
        writer = table_writer_for(cls)
    return deliver(
        config,
        signal,
        channel=channel,
        table_writer=writer,
        topic_log=lambda: open_log(WorkerConfig(job.worker_config())),
        relative_file=True,
    )

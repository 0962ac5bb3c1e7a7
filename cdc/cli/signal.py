"""`cdc signal job.yaml <type> ...`: send a Debezium signal to a job's source connector.

A `cdc.commands` entry point of the job layer, like `cdc run`. The signal goes to the channel
the job's source enables (cdc/jobs/signals.py): the signal table, `signal.file`, or the
`signal.kafka.topic` of the job's transport. `--channel` picks among those the source enables
(`signal.enabled.channels`); another is refused in one line, nothing written.
"""

from __future__ import annotations

import click

from cdc.cli.extras import require_extra

require_extra("jobs")


@click.command("signal", short_help="Send a Debezium signal (execute-snapshot, stop-snapshot, ...) to a job's source.")
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.argument(
    "signal_type",
    type=click.Choice(["execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log"]),
)
@click.option("--tables", default="", help="Comma-separated data collections (db.table or schema.table, or regexes).")
@click.option(
    "--type", "snapshot_type", type=click.Choice(["incremental", "blocking"]), default="incremental",
    help="execute-snapshot/stop-snapshot: the snapshot type.",
)  # fmt: skip
@click.option("--filter", "condition", default=None, help="execute-snapshot: a WHERE condition for the rows to read.")
@click.option("--message", default=None, help="log: the message ({} becomes the connector's offset).")
@click.option("--id", "signal_id", default=None, help="The signal's id, at most 42 characters (default: a new UUID).")
@click.option("--channel", type=click.Choice(["source", "file", "kafka"]), default=None,
              help="Override the channel picked from the job's source settings (one it enables).")  # fmt: skip
def signal(
    job_file: str,
    signal_type: str,
    tables: str,
    snapshot_type: str,
    condition: str | None,
    message: str | None,
    signal_id: str | None,
    channel: str | None,
) -> None:
    """Send a Debezium signal to the job's source connector.

    Example: cdc signal job.yaml execute-snapshot --tables shop.orders,shop.customers --filter "id > 1000"
    """
    import uuid

    from cdc.cli._common import friendly_errors
    from cdc.jobs.load import load_job
    from cdc.jobs.signals import Signal, execute_snapshot, send

    names = [t.strip() for t in tables.split(",") if t.strip()]
    with friendly_errors():
        job = load_job(job_file, inspect_only=True)
        new_id = signal_id or str(uuid.uuid4())
        if signal_type == "execute-snapshot":
            sig = execute_snapshot(names, snapshot_type, condition, new_id)
        elif signal_type == "stop-snapshot":
            data: dict[str, object] = {"type": snapshot_type.upper()}
            if names:
                data["data-collections"] = names
            sig = Signal(new_id, signal_type, data)
        elif signal_type == "log":
            sig = Signal(new_id, signal_type, {"message": message or "signal from cdc signal"})
        else:
            sig = Signal(new_id, signal_type, None)
        where = send(job, sig, channel)
        click.echo(f"Sent {sig.type} signal {sig.id} to the {where}")

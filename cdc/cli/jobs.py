"""Job commands: `cdc validate`, `cdc run` and `cdc status`, each on a job .yaml.

The job layer's commands, found by `cdc` through the `cdc.commands` entry points
(cdc/cli/extras.py); the core commands never import this module.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

import click

from cdc.api.errors import ConfigException
from cdc.cli.extras import require_extra

# Without the `jobs` extra, loading these commands stops here, and `cdc run` etc. say in one
# line what to install. The job layer is imported by each command when it runs, so listing
# the commands (`cdc --help`) does not load it.
require_extra("jobs")


@click.command("validate", short_help="Check a job file and the servers it names: every problem in one line.")
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option(
    "--offline",
    is_flag=True,
    help="Only the static checks: no connection to the database, the warehouse or Kafka.",
)
def validate(job_file: str, offline: bool) -> None:
    """Check a job file and print every problem as one line: file:line, the YAML path of the key
    to change, and the fix. Exits 0 when the job is valid, 2 otherwise.

    \b
    Static checks (always):
      the structure against the job schema (cdc/jobs/job.schema.json), ${env:…}/${file:…}
      references, the source connector's config (its ConfigDef, as Kafka Connect's
      PUT /connector-plugins/{type}/config/validate) and SMTs, the sink's options and DSN,
      Kafka client settings, state.dir. A misspelled key is an error with a did-you-mean; a
      source key the connector does not define is a warning (passed on, as Kafka Connect does).
    \b
    Live checks (unless --offline), the connector's own, with its TLS settings:
      MySQL/MariaDB: the login (database.user/database.password), log_bin on,
      binlog_format=ROW, binlog_row_image=FULL, binlog_row_metadata=FULL, the REPLICATION
      SLAVE and REPLICATION CLIENT (BINLOG MONITOR) grants, RELOAD or LOCK TABLES for
      snapshot.locking.mode=minimal.
      PostgreSQL: the login, wal_level=logical, the REPLICATION attribute (or rds_replication),
      the slot (not held by another reader; a free max_replication_slots for a new one), the
      publication under publication.autocreate.mode=disabled (exists, carries every captured
      table).
      Every sink.tables entry is a table the source captures; a PostgreSQL warehouse answers;
      transport=kafka: a broker answers at bootstrap.servers within 10 s.
      A job that ran: how long the database keeps the position its stored offset needs (the
      binlog file until binlog_expire_logs_seconds purges it, the slot until
      max_slot_wal_keep_size invalidates it): a warning under warn.position.loss.seconds
      (default 3600, 0: none), an error once lost (a warning if snapshot.mode=when_needed).
    Secrets (passwords, keys) are never printed.
    """
    from cdc.jobs.load import read_job_text, validate_job_text

    try:
        text = read_job_text(job_file)
    except ConfigException as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    job, problems = validate_job_text(text, job_file, check_connectivity=not offline)
    for p in problems:
        click.echo(("warning: " if p.warning else "error: ") + " ".join(p.render(job_file).split()), err=True)
    if job is None:
        sys.exit(2)
    click.echo(f"{job_file}: OK")


@click.command("run", short_help="Run a job: its source connector and its Spark sink.")
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option(
    "--until-caught-up",
    is_flag=True,
    help="Read the source position now, run until the sink has applied everything up to it and any running "
    "incremental snapshot, then exit 0 (for cron/Airflow-style runs).",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Spark's own console output too: its INFO logs and stage progress bars, and when the sink fails, "
    "the full Python and Java traces (and Spark's logs of the failed task) before the one-line error.",
)
def run(job_file: str, until_caught_up: bool, verbose: bool) -> None:
    """Run a job: its source connector and its Spark sink, in this process.

    The source writes to the job's transport (embedded by default, or Kafka); a Spark
    streaming query applies the changes to the sink. Ctrl-C or SIGTERM stops both
    gracefully; a restart resumes from the stored source offsets and Spark's checkpoint.
    A sink that cannot apply a batch stops the run (exit status 1) with one line naming the
    table and the cause; --verbose adds the traces behind it.
    """
    import signal

    from cdc.cli._common import friendly_errors, setup_logging
    from cdc.jobs.java_check import check_java
    from cdc.jobs.load import load_job
    from cdc.jobs.run import JobRunner

    with friendly_errors():
        job = load_job(job_file)
        if job.log_format:
            setup_logging(None, job.log_format)
        check_java()  # before the source starts: no Java is one line, not Spark's JAVA_GATEWAY_EXITED
        runner = JobRunner(job, until_caught_up, progress=_progress(job.name), verbose=verbose)

        def on_signal(signum: int, frame: object) -> None:
            runner.stop_requested.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        sys.exit(runner.run())


def _progress(job: str) -> Callable[[str], None]:
    """`cdc run`'s progress lines: `[job] message` on stderr, or log records under log.format=json
    (connector = the job), so that stderr stays one JSON object per line."""
    from cdc.runtime.logging_context import current_format

    if current_format() != "json":
        return lambda m: click.echo(f"[{job}] {m}", err=True)
    logger = logging.getLogger("cdc.jobs.run")

    def log_line(message: str) -> None:
        logger.info("%s", message, extra={"connector": job})

    return log_line


@click.command("status", short_help="Show where a job stands, per table.")
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of the table.")
def status(job_file: str, as_json: bool) -> None:
    """Show where a job stands, per table: snapshot progress, events in the log, what the
    sink has applied (and up to which source position), and end-to-end lag.

    Reads only what the job persists (lock, status and offset topics, the log, the Spark
    checkpoint), so it works while `cdc run` runs in another process, and after it stopped.
    Lag is the age of the oldest change the sink has not applied yet; 0 means caught up.
    The database is asked, read-only, how much of its log lies past the stored offset and how
    long it keeps the position that offset needs (`position kept: ~3 h 12 min until …`).
    """
    import json

    from cdc.cli._common import friendly_errors
    from cdc.jobs.load import load_job
    from cdc.jobs.status import collect, render

    with friendly_errors():
        result = collect(load_job(job_file, inspect_only=True))
        if as_json:
            click.echo(json.dumps(result.to_json(), default=str))
        else:
            for line in render(result):
                click.echo(line)

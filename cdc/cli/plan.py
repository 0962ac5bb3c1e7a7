"""`cdc plan job.yaml`: what the job file would do at the next start, against the stored state.

A job-layer command, found by `cdc` through the `cdc.commands` entry points (cdc/cli/extras.py).
"""

from __future__ import annotations

import click

from cdc.cli.extras import require_extra

require_extra("jobs")  # without the `jobs` extra, `cdc plan` says in one line what to install


@click.command("plan", short_help="Dry-run a job file against its stored state: tables added/dropped, snapshots.")
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of the tables (for CI).")
@click.option(
    "--offline",
    is_flag=True,
    help="Ask no server: not the database (the job file's filters are matched against the tables the stored "
    "state and the job file name), not the sink's warehouse or catalog, not Kafka.",
)
def plan(job_file: str, as_json: bool, offline: bool) -> None:
    """Show what the job file would do at the next `cdc run`, compared with what the job's
    last runs stored, without running anything.

    \b
    Per table:
      action     add (captured now, not before), drop (captured before, not now), keep;
      snapshot   initial (an initial snapshot reads it), incremental (read while streaming:
                 snapshot.new.tables=parallel, or a running incremental snapshot), none; and why;
      topic      its topic, and whether it would be created (it is, at the table's first record);
      target     its target table (Delta path, Iceberg or PostgreSQL table), and whether it
                 would be created (checked with deltalake, pyiceberg, psycopg).
    Then what each snapshot.mode would do with the stored offset (resume streaming, snapshot
    again, take a new snapshot only when the position is lost, do nothing...).

    \b
    "Captured before" comes from what the job stored: the offset's filters
    (snapshot.new.tables=parallel), the data topics in the log, MySQL's schema change topic and
    schema history, an interrupted snapshot's progress, a PostgreSQL publication under
    publication.autocreate.mode=filtered. The job file is checked as `cdc validate --offline`
    checks it. Nothing is written and no lock is taken, so it can run beside `cdc run`.
    Exits 0 with a plan, 2 when the job file is invalid, 1 when the stored state cannot be read.
    """
    from cdc.cli._common import echo_json, friendly_errors
    from cdc.jobs.load import load_job
    from cdc.jobs.plan import make_plan, render

    with friendly_errors():
        job = load_job(job_file)  # the static checks of `cdc validate --offline`
        result = make_plan(job, offline=offline)
    if as_json:
        echo_json(result.to_json())
    else:
        import shutil

        click.echo(render(result, width=max(100, shutil.get_terminal_size((160, 24)).columns)))

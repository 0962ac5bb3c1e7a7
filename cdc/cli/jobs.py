"""Job commands: `cdc validate job.yaml` (more arrive with `cdc run`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cdc.jobs.load import validate_job_text


@click.command("validate")
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option("--offline", is_flag=True, help="Skip the connectivity checks (database and warehouse reachability).")
def validate(job_file: str, offline: bool) -> None:
    """Check a job file and print every problem with its YAML path and line.

    Checks the structure against the job schema (cdc/jobs/job.schema.json), resolves
    ${env:…}/${file:…} references, validates the source connector's config and SMTs, the
    sink DSN, and (unless --offline) that the source database and sink are reachable.
    Exits 0 when the job is valid, 2 otherwise.
    """
    try:
        text = Path(job_file).read_text()
    except OSError as e:
        click.echo(f"error: {job_file}: cannot read the job file ({e.strerror}); check the path", err=True)
        sys.exit(2)
    _, problems = validate_job_text(text, job_file, check_connectivity=not offline)
    if problems:
        for p in problems:
            click.echo("error: " + " ".join(p.render(job_file).split()), err=True)
        sys.exit(2)
    click.echo(f"{job_file}: OK")

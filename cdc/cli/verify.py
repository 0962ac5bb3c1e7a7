"""`cdc verify job.yaml`: compare the source tables with the sink's tables.

A job-layer command, found by `cdc` through the `cdc.commands` entry points (cdc/cli/extras.py).
"""

from __future__ import annotations

import sys

import click

from cdc.api.errors import ConfigException
from cdc.cli.extras import require_extra

require_extra("jobs")  # without the `jobs` extra, `cdc verify` says in one line what to install


def _describe(e: Exception) -> str:
    args = e.args
    text = str(args[1] if len(args) > 1 and isinstance(args[1], str) else e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


@click.command("verify", short_help="Compare source tables with sink tables by key and row checksum.")
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option(
    "--table",
    "tables",
    multiple=True,
    metavar="DB.TABLE",
    help="Check only this source table (db.table or schema.table); repeat for more.",
)
@click.option(
    "--max-diffs",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Sample differences shown per table.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
def verify(job_file: str, tables: tuple[str, ...], max_diffs: int, as_json: bool, quiet: bool) -> None:
    """Compare the job's source tables with its sink tables, by key and row checksum.

    Checks the tables of sink.tables, or else every captured table that has a target.
    Rows are matched by the table's keys (sink.tables.<t>.keys, else the primary key);
    each side's values are normalized (decimals, times, time zones, JSON, bytes …) so that
    equal data compares equal across engines. Rows marked deleted and old SCD2 versions
    are ignored. Prints per table the row counts and differences (missing, extra, changed
    rows with the columns that differ). Exits 0 when nothing differs, 1 when something
    does, 2 when the job or a database cannot be read, or the job has not run yet (no batch
    committed and no target table). Run it once the job has caught up
    (after `cdc run --until-caught-up`): rows that change while it reads show as differences.
    """
    from cdc.cli._common import echo_json, friendly_errors
    from cdc.jobs.load import load_job
    from cdc.jobs.verify import verify_job
    from cdc.jobs.verify.job import JobNotRunYet
    from cdc.jobs.verify.report import as_json as to_json
    from cdc.jobs.verify.report import text_lines

    def progress(message: str) -> None:
        if not quiet:
            click.echo(f"[verify] {message}", err=True)

    with friendly_errors():
        job = load_job(job_file)
        try:
            results, passed = verify_job(job, list(tables) or None, max_diffs, progress)
        except JobNotRunYet as e:
            raise ConfigException(str(e).replace("<job.yaml>", job_file)) from None
        except ConfigException:
            raise
        except Exception as e:  # a database or table that cannot be read: one line, exit 2 (1 means differences)
            raise ConfigException(f"cannot verify {job_file}: {_describe(e)}") from None
    if as_json:
        echo_json(to_json(results, passed))
    else:
        for line in text_lines(results, passed):
            click.echo(line)
    sys.exit(1 if any(r.differences for r in results) else 0)

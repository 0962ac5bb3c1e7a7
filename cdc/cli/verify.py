"""`cdc verify job.yaml`: compare the source tables with the sink's tables.

A job-layer command, found by `cdc` through the `cdc.commands` entry points (cdc/cli/extras.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from cdc.api.errors import ConfigException
from cdc.cli.extras import require_extra

require_extra("jobs")  # without the `jobs` extra, `cdc verify` says in one line what to install

if TYPE_CHECKING:
    from cdc.jobs.verify.job import Verifier
    from cdc.jobs.verify.key_range import KeyRange


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
@click.option(
    "--repair",
    is_flag=True,
    help="Heal the differing rows through the pipeline: send incremental-snapshot signals (execute-snapshot "
    "with additional-conditions on exactly those keys) through the job's signal channel; with the job running, "
    "wait until they are read and applied, then verify those keys again.",
)
@click.option(
    "--repair-timeout",
    default=300,
    show_default=True,
    type=click.IntRange(min=1),
    metavar="SECONDS",
    help="--repair: how long to wait for the snapshots to be read and applied before verifying again.",
)
@click.option(
    "--online/--offline",
    "online",
    default=None,
    help="--online: read the source in one consistent snapshot at a log position, wait until the lake applied "
    "every change up to it, and compare the lake as it was there (keys changed after it are not compared): "
    "for a running job. --offline: compare the source and the lake as they are now: for a stopped, caught-up "
    "job. Default: online while `cdc run` runs the job, else offline.",
)
@click.option(
    "--wait-timeout",
    default=600,
    show_default=True,
    type=click.IntRange(min=1),
    metavar="SECONDS",
    help="--online, and --repair while the job runs: how long to wait for the lake to apply the changes up to "
    "the snapshot's position.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    metavar="N",
    help="Compare a random sample of N keys per table (drawn by a seeded hash of the key, so keys only in the "
    "target are sampled alike); the seed is printed.",
)
@click.option("--seed", type=click.IntRange(min=0, max=2**32 - 1), help="--sample: the seed (default: a random one).")
@click.option(
    "--key-range",
    "key_range",
    metavar="COLUMN=LOW..HIGH",
    help="Compare only the keys whose first key column lies in this inclusive range, e.g. id=100..200, id=..500, "
    "id=100.. (integer, decimal, date and timestamp keys). Source and target read that range alone. Tables whose "
    "first key column is another are not compared, and listed; with --table, that is an error.",
)
def verify(
    job_file: str,
    tables: tuple[str, ...],
    max_diffs: int,
    as_json: bool,
    quiet: bool,
    repair: bool,
    repair_timeout: int,
    online: bool | None,
    wait_timeout: int,
    sample: int | None,
    seed: int | None,
    key_range: str | None,
) -> None:
    """Compare the job's source tables with its sink tables, by key and row checksum.

    Checks the tables of sink.tables, or else every captured table that has a target.
    Rows are matched by the table's keys (sink.tables.<t>.keys, else the primary key);
    each side's values are normalized (decimals, times, time zones, JSON, bytes …) so that
    equal data compares equal across engines. Rows marked deleted and old SCD2 versions
    are ignored. Prints per table the row counts and differences (missing, extra, changed
    rows with the columns that differ). Exits 0 when nothing differs, 1 when something
    does, 2 when the job or a database cannot be read, or the job has not run yet (no batch
    committed and no target table).

    While `cdc run` runs the job (or with --online) the verify is online: the source is read in one
    snapshot exactly at a log position X (MySQL/MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT and
    its binlog position; PostgreSQL: a temporary slot's exported snapshot and its consistent point),
    it waits (at most --wait-timeout) until the lake has applied every change up to X, and compares the
    lake's rows as they were at X: a key whose stored row or delete is newer than X changed since and
    is not compared (counted as "changed since"). With the job stopped (or --offline) the source and
    the lake are compared as they are: run it once the job has caught up (`cdc run --until-caught-up`).

    --repair turns each table's missing, changed and duplicate keys into Debezium `execute-snapshot`
    signals (incremental, `additional-conditions` selecting exactly those keys, as many signals as
    the signal table's 2048-character data column takes), sent one per table at a time through the
    job's signal channel, as `cdc signal` sends them. With the job running it waits (at most
    --repair-timeout) until the snapshots are read and the sink applied them, verifies those keys
    again and prints before/after counts: exit 0 when none differs any more, else 1. With the job
    stopped it sends the first signal of each table, which the job reads when it runs next, and
    exits 1 (the rows still differ until then): run --repair again afterwards to send the rest and
    check. Keys only in the target (extra) are reported, never signalled: a snapshot reads only rows
    that exist. Nothing is written to the target.

    --key-range id=100..200 compares the keys whose first key column lies in that range (either bound
    may be left out): the source reads it with a WHERE on the key, the target with a filter on its scan,
    so the work follows the range, not the table. It applies to every table whose first key column has
    that name; the others are listed as not compared (an error for a table named with --table). With
    --repair only the differences in the range are repaired. --sample N draws its keys inside the range;
    where the source can rank keys itself (integer and text keys) it reads the sample's rows alone.
    """
    from cdc.cli._common import echo_json, friendly_errors
    from cdc.jobs.load import load_job
    from cdc.jobs.verify.catchup import NotApplied, job_running
    from cdc.jobs.verify.job import JobNotRunYet, Verifier, verify_online, verify_tables
    from cdc.jobs.verify.report import as_json as to_json
    from cdc.jobs.verify.report import online_line, sample_line, text_lines
    from cdc.jobs.verify.sample import new_seed

    def progress(message: str) -> None:
        if not quiet:
            click.echo(f"[verify] {message}", err=True)

    if repair and (sample is not None or online is not None):
        raise click.UsageError(
            "--repair verifies every key, online while the job runs and offline when it is stopped; "
            "--sample, --online and --offline do not apply"
        )
    with friendly_errors():
        given = _key_range(key_range)
    if repair:
        _repair(job_file, list(tables) or None, max_diffs, as_json, repair_timeout, wait_timeout, progress, given)
        return
    picked = (sample, new_seed() if seed is None else seed) if sample is not None else None
    with friendly_errors():
        job = load_job(job_file)
        run = None
        try:
            with Verifier(job, progress, key_range=given) as v:
                if online if online is not None else job_running(job):
                    results, passed, run = verify_online(v, list(tables) or None, max_diffs, wait_timeout, picked)
                else:
                    results, passed = verify_tables(v, list(tables) or None, max_diffs, sample=picked)
        except JobNotRunYet as e:
            raise ConfigException(str(e).replace("<job.yaml>", job_file)) from None
        except NotApplied as e:
            raise ConfigException(f"cannot verify {job_file} online: {e}") from None
        except ConfigException:
            raise
        except Exception as e:  # a database or table that cannot be read: one line, exit 2 (1 means differences)
            raise ConfigException(f"cannot verify {job_file}: {_describe(e)}") from None
    if as_json:
        doc = to_json(results, passed)
        doc["online"] = run.to_json() if run is not None else None
        if picked is not None:
            doc["sample"] = {"keys": picked[0], "seed": picked[1]}
        doc["key_range"] = _range_json(v)
        echo_json(doc)
    else:
        if run is not None:
            click.echo(online_line(run.position, run.waited_s))
        if picked is not None:
            click.echo(sample_line(*picked))
        for line in _range_lines(v):
            click.echo(line)
        for line in text_lines(results, passed):
            click.echo(line)
    sys.exit(1 if any(r.differences for r in results) else 0)


def _key_range(text: str | None) -> KeyRange | None:
    from cdc.jobs.verify.key_range import parse_key_range

    return parse_key_range(text) if text is not None else None


def _range_lines(v: Verifier) -> list[str]:
    from cdc.jobs.verify.report import key_range_lines

    return key_range_lines(v.key_range, list(v.ranges), v.range_skipped) if v.key_range is not None else []


def _range_json(v: Verifier) -> dict[str, object] | None:
    from cdc.jobs.verify.report import key_range_json

    return key_range_json(v.key_range, list(v.ranges), v.range_skipped) if v.key_range is not None else None


def _repair(
    job_file: str,
    tables: list[str] | None,
    max_diffs: int,
    as_json: bool,
    timeout_s: int,
    wait_timeout_s: int,
    progress: Callable[[str], None],
    key_range: KeyRange | None = None,
) -> None:
    """`cdc verify --repair` (cdc/jobs/verify/repair.py builds the signals, repair_run.py sends and waits).

    With the job running, both comparisons (which keys to read again, and the check afterwards) are
    online, as a plain verify of a running job is: a key the job changes meanwhile is not a difference,
    so it is neither signalled nor reported as unhealed."""
    from cdc.cli._common import echo_json, friendly_errors
    from cdc.jobs.load import load_job
    from cdc.jobs.verify.catchup import NotApplied, job_running
    from cdc.jobs.verify.job import JobNotRunYet, Verifier, verify_online, verify_tables
    from cdc.jobs.verify.repair_run import Repair, check_channel, plan, verify_again
    from cdc.jobs.verify.report import as_json as to_json
    from cdc.jobs.verify.report import outcome_lines, plan_lines, repair_json, text_lines
    from cdc.jobs.verify.source import SourceTable

    def say(message: str) -> None:
        progress(f"repair: {message}")

    with friendly_errors():
        job = load_job(job_file)
        try:
            with Verifier(job, progress, key_range=key_range) as v:
                running = job_running(job)
                if running:
                    results, passed, _run = verify_online(v, tables, max_diffs, wait_timeout_s, keep_keys=True)
                else:
                    results, passed = verify_tables(v, tables, max_diffs, keep_keys=True)
                if not as_json:
                    for line in [*_range_lines(v), *text_lines(results, passed)]:
                        click.echo(line)
                if not any(r.differences for r in results):
                    if as_json:
                        echo_json(to_json(results, passed) | {"key_range": _range_json(v), "repair": None})
                    sys.exit(0)
                check_channel(job)
                plans = plan(v, results, say)
                names = {p.table: v.keys_for(SourceTable(*p.table.split(".", 1))) for p in plans}
                if not as_json:
                    for line in plan_lines(plans, names, max_diffs):
                        click.echo(line)
                repair = Repair(v, plans, say)
                outcome = repair.run_live(timeout_s) if running else repair.start_stopped()
                if outcome.running:
                    outcome.after = verify_again(v, plans, max_diffs, online_timeout_s=wait_timeout_s)
        except JobNotRunYet as e:
            raise ConfigException(str(e).replace("<job.yaml>", job_file)) from None
        except NotApplied as e:
            raise ConfigException(f"cannot repair {job_file} online: {e}") from None
        except (ConfigException, SystemExit):
            raise
        except Exception as e:  # a database, table or channel that cannot be used: one line, exit 2
            raise ConfigException(f"cannot repair {job_file}: {_describe(e)}") from None
    if as_json:
        echo_json(
            to_json(results, passed) | {"key_range": _range_json(v), "repair": repair_json(plans, outcome, max_diffs)}
        )
    else:
        for line in outcome_lines(plans, outcome, job_file):
            click.echo(line)
    healed = outcome.running and outcome.completed and not any(r.differences for r in outcome.after.values())
    untouched = [r for r in results if r.differences and r.source not in outcome.after]
    sys.exit(0 if healed and not untouched else 1)

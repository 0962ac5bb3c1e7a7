"""A broken `sink:` section is one line at the YAML path the user wrote, in the job file's key
names (issue 24): the Spark sink's own checks name its keys (errors.deadletterqueue.path,
target=, the tables by their topic-derived names), which the job maps back."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc.jobs.load import validate_job_text
from tests.support.proc import run_cdc

_SOURCE = "source: {connector.class: mysql, database.hostname: h, database.user: u, database.server.id: 1, "
_SOURCE += "topic.prefix: p}\n"
# Keys and names only the sink knows; a user never wrote them in a job file.
_NEVER_WRITTEN = ("errors.deadletterqueue.path", "truncate.enabled", "target=", "table.names", "p_a_b", "p.a.b")


@pytest.mark.parametrize(
    "sink,path,says",
    [
        (
            "{type: delta, path: /l, errors.tolerance: all}",
            "sink['errors.tolerance']",
            "errors.tolerance=all needs errors.deadletter.table (a Parquet dead-letter table) or "
            "errors.deadletterqueue.topic.name",
        ),
        (
            "{type: iceberg, path: /l, tables: {a.b: {partition.by: [x]}}}",
            "sink.tables['a.b']['partition.by']",
            "partitioned tables are created for type delta; for iceberg, partition the table yourself",
        ),
        (
            "{type: delta, path: /l, sslmode: require}",
            "sink.sslmode",
            "TLS settings of the PostgreSQL target; type delta does not connect to a database",
        ),
        (
            "{type: iceberg, path: /l, mode: scd1, tables: {a.b: {mode: scd2}}}",
            "sink.tables['a.b'].mode",
            "mode=scd2 keeps history in Delta only; use mode=scd1 with type iceberg, or type delta",
        ),
    ],
)
def test_a_sink_problem_is_one_line_at_its_yaml_path(sink: str, path: str, says: str) -> None:
    text = f"name: j\n{_SOURCE}sink: {sink}\n"
    job, problems = validate_job_text(text, "job.yaml", check_connectivity=False)
    assert job is None
    line = problems[0].render("job.yaml")
    assert line.startswith(f"job.yaml:3: {path}: ") and says in line, line
    assert "\n" not in line and len(line) < 240
    assert not [k for k in _NEVER_WRITTEN if k in line], line


@pytest.mark.e2e
def test_cdc_validate_prints_it_so(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(f"name: j\n{_SOURCE}sink: {{type: delta, path: /l, errors.tolerance: all}}\n")
    res = run_cdc("validate", "--offline", str(job))
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert res.stderr.startswith(f"error: {job}:3: sink['errors.tolerance']: errors.tolerance=all needs errors.")

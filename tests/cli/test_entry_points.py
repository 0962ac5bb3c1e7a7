"""The job layer's commands come from the `cdc.commands` entry points and need the `jobs` extra:
the core commands never import it, and without the extra each job command (and a job file given
to `cdc topics`/`cdc offsets`) says in one line what to install."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.cli.extras import missing_requirements
from cdc.cli.main import cli
from tests.support.examples import examples

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
JOB_COMMANDS = ("plan", "run", "signal", "status", "validate", "verify")
JOB_SIDE_MODULES = ("cdc.cli.jobs", "cdc.cli.verify", "cdc.cli.signal", "cdc.cli.plan", "cdc.cli.job_files")


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", requirement).group(0)  # type: ignore[union-attr]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


JOBS_EXTRA = [_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["jobs"]]


@contextmanager
def _without(mp: pytest.MonkeyPatch, names: list[str]) -> Iterator[None]:
    """As if the distributions `names` were not installed, with the job-side CLI modules not
    imported yet (so loading them checks the extra again)."""
    real = importlib.metadata.distribution
    hidden = {_norm(n) for n in names}

    def distribution(name: str) -> importlib.metadata.Distribution:
        if _norm(name) in hidden:
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    mp.setattr(importlib.metadata, "distribution", distribution)
    for module in JOB_SIDE_MODULES:
        mp.delitem(sys.modules, module, raising=False)
    yield


def _cdc(*args: str) -> tuple[int, list[str]]:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return res.exit_code, [line for line in res.output.splitlines() if line.strip()]


def test_the_jobs_extra_declares_the_job_layers_distributions() -> None:
    declared = {_norm(n) for n in JOBS_EXTRA}
    assert {"cdc-spark-sink", "cdc-connector-mysql", "cdc-connector-postgres", "cdc-debezium-core"} <= declared
    assert {"pyspark", "pyarrow", "pymysql", "psycopg", "deltalake", "pyiceberg"} <= declared
    entry_points = PYPROJECT["project"]["entry-points"]
    assert set(entry_points["cdc.commands"]) == set(JOB_COMMANDS)
    assert missing_requirements("jobs") == []  # the suite runs with the extra installed


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.sampled_from(JOBS_EXTRA), unique=True))
def test_missing_requirements_names_exactly_the_missing_ones(hidden: list[str]) -> None:
    with pytest.MonkeyPatch.context() as mp, _without(mp, hidden):
        assert sorted(map(_norm, missing_requirements("jobs"))) == sorted(map(_norm, hidden))
        arrow = {_norm(_name(r)) for r in PYPROJECT["project"]["optional-dependencies"]["arrow"]}
        assert set(map(_norm, missing_requirements("arrow"))) == arrow & set(map(_norm, hidden))


@settings(max_examples=examples(12), deadline=None)
@given(
    command=st.sampled_from(JOB_COMMANDS),
    args=st.sampled_from([["--help"], ["job.yaml"], ["job.yaml", "--offline"], []]),
    hidden=st.lists(st.sampled_from(JOBS_EXTRA), min_size=1, max_size=3, unique=True),
)
def test_a_job_command_without_the_extra_says_what_to_install(command: str, args: list[str], hidden: list[str]) -> None:
    with pytest.MonkeyPatch.context() as mp, _without(mp, hidden):
        code, lines = _cdc(command, *args)
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: cdc {command} needs the jobs extra (")
    assert lines[0].endswith("not installed): pip install 'cdc[jobs]'")
    assert all(n in lines[0] for n in hidden)


def test_help_lists_the_job_commands_with_or_without_the_extra() -> None:
    code, lines = _cdc("--help")
    assert code == 0
    listed = {line.split()[0]: line for line in lines if line.startswith("  ")}
    for name in (*JOB_COMMANDS, "standalone", "worker", "plugins", "topics", "offsets"):
        assert name in listed
    assert "Not available" not in "\n".join(lines)
    with pytest.MonkeyPatch.context() as mp, _without(mp, ["cdc-spark-sink"]):
        code, lines = _cdc("--help")
    assert code == 0
    for name in JOB_COMMANDS:
        line = next(line for line in lines if line.split()[:1] == [name])
        assert "Not available" in line, line
    assert "Not available" not in next(line for line in lines if line.split()[:1] == ["standalone"])


def test_a_job_file_for_the_core_commands_needs_the_extra(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(f"name: shop\nsource:\n  connector.class: mysql\ntransport:\n  state.dir: {tmp_path}\n")
    worker = tmp_path / "worker.properties"
    worker.write_text(f"transport=embedded\nstate.dir={tmp_path / 'state'}\n")
    with pytest.MonkeyPatch.context() as mp, _without(mp, ["cdc-connector-mysql"]):
        for args in (["topics", "list", str(job)], ["offsets", "show", str(job)], ["offsets", "reset", str(job)]):
            code, lines = _cdc(*args)
            assert code == 2 and len(lines) == 1, lines
            assert "pip install 'cdc[jobs]'" in lines[0] and "--worker" in lines[0], lines
        code, lines = _cdc("topics", "list", "--worker", str(worker))  # the core command itself works
    assert code == 0, lines


@pytest.mark.e2e
def test_core_commands_do_not_import_the_job_layer(tmp_path: Path) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text(f"transport=embedded\nstate.dir={tmp_path / 'state'}\n")
    script = f"""
import sys
from cdc.cli.main import cli
for args in (["--help"], ["plugins", "list"], ["topics", "list", "--worker", {str(worker)!r}],
             ["offsets", "show", "--worker", {str(worker)!r}]):
    try:
        cli(args, standalone_mode=False)
    except SystemExit:
        pass
print(*sorted(m for m in sys.modules if m.startswith(("cdc.jobs", "cdc_spark", "pyspark", "deltalake"))
              or m in {JOB_SIDE_MODULES!r}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    # `--help` loads the job commands' click definitions to list them; the job layer stays unloaded
    loaded = out.stdout.splitlines()[-1].split()
    assert set(loaded) <= {"cdc.cli.jobs", "cdc.cli.verify", "cdc.cli.signal", "cdc.cli.plan"}, loaded

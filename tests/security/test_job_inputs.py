"""Issue 33, items 7 and 10: job files that hung `cdc validate` or passed it and failed at run time.

- A "billion laughs" file (nine lines of nested YAML aliases, 10^9 values) hung `cdc validate
  --offline` until it was killed; now the aliases' expansion is counted before anything walks it
  and the file is refused in one line naming the limit (yaml_text.MAX_ALIAS_EXPANSION).
- A `state.dir` holding a NUL passed validate and `cdc run` printed a 33-line traceback; a
  state.dir under /proc passed too. Both are refused offline, naming transport.state.dir.
- A keyless table in `sink.tables` stopped the run ~30 s in with "no record key", and
  `keys: [nosuchcol]` at the connector's start; `cdc validate` now asks the database (online).
- A fuzz of job YAML (aliases, control characters, NUL, huge scalars, nesting): validation
  answers within a bound, with problems or a job, never an exception.
"""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.cli.jobs import validate
from cdc.jobs.load import validate_job_text
from cdc.jobs.validation.yaml_text import MAX_ALIAS_EXPANSION
from cdc.runtime.plugins import PluginRegistry
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props as mysql_props
from tests.postgres.harness import connector_props as pg_props
from tests.rig import MariaDbServer, PostgresServer
from tests.support.examples import examples
from tests.support.proc import run_cdc

JOB = """\
name: shop
source:
  connector.class: mysql
  database.hostname: 127.0.0.1
  database.user: cdc
  database.server.id: 5401
  topic.prefix: shop
transport:
  state.dir: {state}
sink:
  type: delta
  path: {lake}
"""


def _laughs(levels: int = 9, width: int = 9) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def _job_text(tmp_path: Path, state: str | None = None) -> str:
    return JOB.format(state=state or str(tmp_path / "state"), lake=tmp_path / "lake")


def _validate(tmp_path: Path, text: str, *args: str) -> tuple[int, list[str], float]:
    f = tmp_path / "job.yaml"
    f.write_text(text)
    start = time.monotonic()
    res = CliRunner().invoke(validate, [str(f), *args], catch_exceptions=False)
    return res.exit_code, [line for line in res.output.splitlines() if line.strip()], time.monotonic() - start


def _one_error(tmp_path: Path, text: str, *args: str) -> str:
    code, lines, _ = _validate(tmp_path, text, *args)
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


# -- item 7: aliases ---------------------------------------------------------------------------
def test_billion_laughs_is_refused_at_once_naming_the_limit(tmp_path: Path) -> None:
    code, lines, took = _validate(tmp_path, _job_text(tmp_path) + _laughs(), "--offline")
    assert took < 5, f"validate took {took:.1f} s"
    assert code == 2 and len(lines) == 1, lines
    assert "aliases" in lines[0] and f"more than {MAX_ALIAS_EXPANSION} values" in lines[0], lines


@pytest.mark.e2e
def test_billion_laughs_cdc_validate_process_returns_quickly(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(_job_text(tmp_path) + _laughs())
    start = time.monotonic()
    res = run_cdc("validate", "--offline", str(job), timeout=60)
    assert time.monotonic() - start < 30
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("error: ") and str(MAX_ALIAS_EXPANSION) in line and "Traceback" not in res.stderr


def test_a_few_aliases_still_work(tmp_path: Path) -> None:
    text = _job_text(tmp_path) + "  tables:\n    shop.a: &d {mode: scd1}\n    shop.b: *d\n    shop.c: {<<: *d}\n"
    code, lines, _ = _validate(tmp_path, text, "--offline")
    assert code == 0, lines


def test_a_recursive_anchor_is_refused(tmp_path: Path) -> None:
    line = _one_error(tmp_path, _job_text(tmp_path) + "loop: &x [1, *x]\n", "--offline")
    assert "refers to the value it is part of" in line


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    for depth in (80, 5000):
        line = _one_error(tmp_path, _job_text(tmp_path) + "deep: " + "[" * depth + "]" * depth + "\n", "--offline")
        assert "nested more than 64 levels" in line


# -- item 7: NUL and control characters ------------------------------------------------------
def test_nul_in_state_dir_is_refused_naming_the_field(tmp_path: Path) -> None:
    line = _one_error(tmp_path, _job_text(tmp_path, '"/tmp/st\\0ate"'), "--offline")
    assert "transport['state.dir']" in line and "NUL" in line


@pytest.mark.parametrize(("where", "escape"), [("state", "\\x07"), ("state", "\\e"), ("lake", "\\x1b")])
def test_a_control_character_in_a_path_is_refused(tmp_path: Path, where: str, escape: str) -> None:
    text = JOB.format(
        state=f'"{tmp_path}/st{escape}ate"' if where == "state" else tmp_path / "state",
        lake=f'"{tmp_path}/la{escape}ke"' if where == "lake" else tmp_path / "lake",
    )
    line = _one_error(tmp_path, text, "--offline")
    assert ("transport['state.dir']" if where == "state" else "sink.path") in line and "control character" in line


@pytest.mark.e2e
def test_cdc_run_with_a_nul_in_state_dir_is_one_line(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(_job_text(tmp_path, '"/tmp/st\\0ate"'))
    res = run_cdc("run", str(job), timeout=120)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert line.startswith("error: ") and "transport['state.dir']" in line and "NUL" in line


# -- item 10: state.dir under a kernel file system -------------------------------------------
@pytest.mark.parametrize("state", ["/proc/cdc-state", "/proc/self/x", "/sys/kernel/cdc", "/dev/cdc"])
def test_state_dir_under_a_kernel_file_system_is_refused_offline(tmp_path: Path, state: str) -> None:
    line = _one_error(tmp_path, _job_text(tmp_path, state), "--offline")
    assert "transport['state.dir']" in line and "kernel file system" in line and "choose a directory" in line


def test_state_dir_linked_into_proc_is_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/proc/self")
    line = _one_error(tmp_path, _job_text(tmp_path, str(tmp_path / "link" / "state")), "--offline")
    assert "under /proc" in line


# -- item 10: keys, against the session servers ----------------------------------------------
@pytest.fixture
def shop(mariadb_db: MariaDbServer) -> MariaDbServer:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE orders (id INT PRIMARY KEY, customer INT)")
        cur.execute("CREATE TABLE events (at DATETIME, what VARCHAR(40))")  # no primary key
    return mariadb_db


def _mysql_job(tmp_path: Path, server: MariaDbServer, tables: dict[str, str]) -> Path:
    return mysql_delta_job(
        tmp_path, "shop", mysql_props(server), {f"{server.database}.{t}": s for t, s in tables.items()}
    )


def test_mysql_keyless_table_is_refused_online_naming_the_fix(tmp_path: Path, shop: MariaDbServer) -> None:
    job = _mysql_job(tmp_path, shop, {"orders": "mode: scd1", "events": "mode: scd1"})
    line = _one_error(tmp_path, job.read_text())
    table = f"{shop.database}.events"
    assert f"sink.tables['{table}']" in line and "has no primary key" in line
    assert f"sink.tables['{table}'].keys" in line and "at, what" in line
    # --offline does not ask the database; with keys it passes online too.
    assert _validate(tmp_path, job.read_text(), "--offline")[0] == 0
    ok = _mysql_job(tmp_path, shop, {"orders": "mode: scd1", "events": "keys: [at, what]"})
    code, lines, _ = _validate(tmp_path, ok.read_text())
    assert code == 0, lines


def test_mysql_keys_naming_a_missing_column_are_refused(tmp_path: Path, shop: MariaDbServer) -> None:
    job = _mysql_job(tmp_path, shop, {"orders": "keys: [id, nosuchcol]"})
    line = _one_error(tmp_path, job.read_text())
    assert f"sink.tables['{shop.database}.orders'].keys[1]" in line
    assert "no column 'nosuchcol'" in line and "id, customer" in line


@pytest.fixture
def bank(postgres_db: PostgresServer) -> PostgresServer:
    with postgres_db.connect() as conn:
        conn.execute("CREATE TABLE accounts (id int PRIMARY KEY, balance numeric)")
        conn.execute("CREATE TABLE audit (at timestamptz, note text)")  # no key at all
        conn.execute("CREATE TABLE tags (name text NOT NULL UNIQUE)")  # Debezium keys it by the unique index
    return postgres_db


def _pg_job(tmp_path: Path, props: dict[str, Any], tables: dict[str, str]) -> Path:
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items() if k != "slot.drop.on.stop")
    listed = "\n".join(f"    {t}: {{{s}}}" for t, s in tables.items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"name: bank\nsource:\n{source}\ntransport:\n  state.dir: {tmp_path / 'state'}\n"
        f"sink:\n  type: delta\n  path: {tmp_path / 'lake'}\n  tables:\n{listed}\n"
    )
    return job


def test_postgres_keyless_table_and_missing_key_column(tmp_path: Path, bank: PostgresServer) -> None:
    props = pg_props(bank)
    job = _pg_job(tmp_path, props, {"public.accounts": "mode: scd1", "public.audit": "mode: scd1", "public.tags": ""})
    line = _one_error(tmp_path, job.read_text())
    assert "sink.tables['public.audit']" in line and "no primary key or unique index" in line
    job = _pg_job(tmp_path, props, {"public.accounts": "keys: [ID]"})  # PostgreSQL names are case-sensitive
    line = _one_error(tmp_path, job.read_text())
    assert "sink.tables['public.accounts'].keys[0]" in line and "no column 'ID'" in line
    job = _pg_job(tmp_path, props, {"public.accounts": "keys: [id]", "public.audit": "keys: [at, note]"})
    code, lines, _ = _validate(tmp_path, job.read_text())
    assert code == 0, lines


# -- the fuzz ---------------------------------------------------------------------------------
@cache
def _registry() -> PluginRegistry:
    return PluginRegistry.discover()


_SLOTS = ("name", "source.topic.prefix", "transport.state.dir", "sink.path", "extra")
_CONTROL = st.sampled_from(["\\0", "\\x01", "\\x07", "\\e", "\\x1f", "\\x7f", "\\x85", "\\u2028", "\\t", "\\n"])


@st.composite
def _mutation(draw: st.DrawFn) -> tuple[str, str]:
    """(slot, a YAML value text) to put at one place of a good job."""
    slot = draw(st.sampled_from(_SLOTS))
    kind = draw(st.sampled_from(["escape", "raw", "huge", "aliases", "text", "nested"]))
    if kind == "escape":
        value = '"' + draw(st.text(max_size=8)).replace("\\", "").replace('"', "") + draw(_CONTROL) + 'x"'
    elif kind == "raw":  # a raw control character: YAML's reader refuses it
        value = "a" + chr(draw(st.integers(0, 31))) + "b"
    elif kind == "huge":
        value = draw(st.sampled_from(["x", "/a", "é", "\\0"])) * draw(st.integers(1, 200_000))
    elif kind == "aliases":
        levels, width = draw(st.integers(1, 12)), draw(st.integers(1, 12))
        chain = ["[lol]"] + ["[" + ", ".join([f"*c{i - 1}"] * width) + "]" for i in range(1, levels)]
        value = "{" + ", ".join(f"k{i}: &c{i} {v}" for i, v in enumerate(chain)) + "}"
    elif kind == "nested":
        depth = draw(st.integers(1, 400))
        value = "[" * depth + "]" * depth
    else:
        value = draw(st.text(max_size=60))
    return slot, value


def _put(tmp_path: Path, slot: str, value: str) -> str:
    text = _job_text(tmp_path)
    if slot == "name":
        return text.replace("name: shop", f"name: {value}", 1)
    if slot == "source.topic.prefix":
        return text.replace("topic.prefix: shop", f"topic.prefix: {value}", 1)
    if slot == "transport.state.dir":
        return text.replace(f"state.dir: {tmp_path / 'state'}", f"state.dir: {value}", 1)
    if slot == "sink.path":
        return text.replace(f"path: {tmp_path / 'lake'}", f"path: {value}", 1)
    return text + f"x-extra: {value}\n"


@settings(
    max_examples=examples(300), derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
@given(mutation=_mutation())
def test_fuzzed_job_yaml_is_answered_in_bounded_time_never_raising(mutation: tuple[str, str]) -> None:
    tmp = Path("/nonexistent-cdc-fuzz")  # offline checks only read: nothing is created there
    text = _put(tmp, *mutation)
    start = time.monotonic()
    job, problems = validate_job_text(text, "job.yaml", check_connectivity=False, registry=_registry())
    took = time.monotonic() - start
    assert took < 10, f"{took:.1f} s for {mutation[0]} = {mutation[1][:80]!r}"
    errors = [p for p in problems if not p.warning]
    assert (job is None) == bool(errors)
    for p in problems:
        line = " ".join(p.render("job.yaml").split())
        assert line and "Traceback" not in line

"""Inspection commands on a job or worker that never ran (issue 24): one line saying there is
nothing yet, on stderr (stdout stays one record per line), and no state dir created."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc.log.base import TopicSpec
from cdc.log.embedded import EmbeddedLog
from tests.support.proc import run_cdc

_JOB = """name: shop
source:
  connector.class: mysql
  database.hostname: 127.0.0.1
  database.port: 1
  database.user: u
  database.password: p
  database.server.id: 5
  topic.prefix: shop
transport:
  state.dir: {state}
sink:
  type: delta
  path: {lake}
"""


@pytest.fixture(params=["job", "worker"])
def target(request, tmp_path: Path) -> tuple[list[str], Path]:
    """The arguments naming a job file, or a worker file (`--worker`), whose state.dir is absent."""
    state = tmp_path / "state"
    if request.param == "job":
        job = tmp_path / "job.yaml"
        job.write_text(_JOB.format(state=state, lake=tmp_path / "lake"))
        return [str(job)], state
    worker = tmp_path / "worker.properties"
    worker.write_text(f"transport=embedded\nstate.dir={state}\n")
    return ["--worker", str(worker)], state


@pytest.mark.e2e
@pytest.mark.parametrize(
    "command,said",
    [
        (["offsets", "show"], "no stored offsets: the embedded log in {state} holds no records yet\n"),
        (["topics", "list"], "no topics: the embedded log in {state} holds no records yet\n"),
    ],
)
def test_inspecting_an_empty_state_says_so_and_creates_nothing(target, command, said) -> None:
    args, state = target
    res = run_cdc(*command, *args)
    assert (res.returncode, res.stdout) == (0, "")
    assert res.stderr == said.format(state=state)
    assert not state.exists()


@pytest.mark.e2e
def test_reading_a_topic_of_an_empty_state_is_one_line(target) -> None:
    args, state = target
    res = run_cdc("topics", "read", *args, "shop.shop.orders", "--from-beginning")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith(
        f"error: topic 'shop.shop.orders' does not exist: the embedded log in {state} holds no records yet; see `cdc "
    )
    assert res.stderr.count("\n") == 1 and not state.exists()


@pytest.mark.e2e
def test_status_and_offsets_reset_of_a_job_that_never_ran(tmp_path: Path) -> None:
    state = tmp_path / "state"
    job = tmp_path / "job.yaml"
    job.write_text(_JOB.format(state=state, lake=tmp_path / "lake"))
    res = run_cdc("offsets", "reset", str(job), "--yes")
    assert (res.returncode, res.stdout) == (0, "shop: no stored offsets; nothing to reset\n")
    res = run_cdc("status", str(job))
    assert res.returncode == 0 and "source offset: none stored yet" in res.stdout
    assert not state.exists()


@pytest.mark.e2e
def test_a_state_with_other_records_but_no_offsets_names_the_connector(tmp_path: Path) -> None:
    """The log exists (another connector wrote to it): `offsets show --connector` of one that
    stored nothing says so rather than printing nothing."""
    state = tmp_path / "state"
    worker = tmp_path / "worker.properties"
    worker.write_text(f"transport=embedded\nstate.dir={state}\n")
    with EmbeddedLog(str(state)) as log_:
        log_.create_topics([TopicSpec("t", 1)])
    res = run_cdc("offsets", "show", "--worker", str(worker), "--connector", "nobody")
    assert (res.returncode, res.stdout) == (0, "")
    assert res.stderr == f"no stored offsets for connector 'nobody': the embedded log in {state} holds no records yet\n"
    res = run_cdc("topics", "list", "--worker", str(worker))
    assert res.stdout.startswith("t\tpartitions=1\trecords=0") and res.stderr == ""

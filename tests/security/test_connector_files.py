"""Issue 33, item 2: the files a REST-created connector may touch are its own.

Before the fix the REST file sandbox was state.dir, which holds the worker's own files: a
connector created over REST with `signal.file` set to another connector's schema-history file
emptied it (8,874 → 0 bytes) and logged its contents line by line, and
`schema.history.internal.file.filename` set to the worker's `cdc.db` appended JSON to the
embedded log's SQLite file. Now a REST config's paths live in `state.dir/connectors/<name>/`
(cdc.runtime.submitted_config), links are refused, and the file signal channel empties only a
signal file (cdc_debezium.signals.channels.FileSignalChannel).
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from cdc.runtime.submitted_config import CONNECTORS_DIR, SubmittedConfigPolicy, connector_dir
from cdc_debezium.signals.channels import FileSignalChannel
from tests.rest.conftest import wait_until
from tests.security.provider_rig import quoting, secure_rest

HISTORY_LINE = json.dumps({"source": {"server": "shop"}, "position": {"pos": 4}, "ddl": "CREATE TABLE t (a INT)"})


@pytest.mark.integration
def test_another_connectors_file_or_the_workers_own_are_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with secure_rest(tmp_path) as rest:
        mine = state / CONNECTORS_DIR / "a" / "history.jsonl"
        assert rest.http.post("/connectors", json=quoting("a", **{"history.file": str(mine)})).status_code == 201
        # The task opens the file before it writes its line: wait for the line, not the file.
        wait_until(lambda: mine.exists() and mine.stat().st_size > 0, what="connector a wrote its history")
        size = mine.stat().st_size
        own_b = state / CONNECTORS_DIR / "b"
        for key, target in (
            ("signal.file", mine),  # another connector's file: the signal channel would empty it
            ("schema.history.internal.file.filename", state / "cdc.db"),  # the embedded log
            ("history.file", state / "b.jsonl"),  # state.dir itself, outside any connector's directory
        ):
            r = rest.http.post("/connectors", json=quoting("b", **{key: str(target)}))
            assert r.status_code == 400, r.text
            message = r.json()["message"]
            assert message.startswith(f"{key}: {target} is outside the directories"), message
            assert f"the connector's own directory: {own_b}" in message and "\n" not in message
        assert mine.stat().st_size == size
        assert [c for c in rest.http.get("/connectors").json()] == ["a"]


@pytest.mark.integration
def test_a_rest_connector_gets_its_own_private_directory(tmp_path: Path) -> None:
    with secure_rest(tmp_path) as rest:
        own = tmp_path / "state" / CONNECTORS_DIR / "c1"
        assert rest.http.post("/connectors", json=quoting("c1", **{"history.file": str(own / "h")})).status_code == 201
        assert own.is_dir() and stat.S_IMODE(own.stat().st_mode) == 0o700
        # A config naming no file creates nothing (a Kafka worker may have no state.dir at all).
        assert rest.http.post("/connectors", json=quoting("c2")).status_code == 201
        assert not (tmp_path / "state" / CONNECTORS_DIR / "c2").exists()


@pytest.mark.integration
def test_links_inside_the_own_directory_are_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with secure_rest(tmp_path) as rest:
        own = state / CONNECTORS_DIR / "l"
        own.mkdir(parents=True)
        victim = state / "victim.db"
        victim.write_text("the worker's data\n")
        os.symlink(victim, own / "soft.jsonl")
        os.link(victim, own / "hard.jsonl")
        os.symlink(own / "plain.jsonl", own / "inner-link.jsonl")  # even one pointing inside
        cases = {"soft.jsonl": "outside the directories", "hard.jsonl": "2 hard links", "inner-link.jsonl": "symbolic"}
        for name, fragment in cases.items():
            r = rest.http.post("/connectors", json=quoting("l", **{"history.file": str(own / name)}))
            assert r.status_code == 400, (name, r.text)
            assert fragment in r.json()["message"], r.json()["message"]
        assert victim.read_text() == "the worker's data\n"


@pytest.mark.parametrize("name", ["../x", "..", ".", "a/b", "a\nb", "%2e%2e", "con:nect", "ä"])
def test_no_connector_name_leads_out_of_the_connectors_directory(tmp_path: Path, name: str) -> None:
    base = (tmp_path / CONNECTORS_DIR).resolve()
    got = connector_dir(tmp_path, name)
    assert got.parent == base and got.name not in (".", "..") and "/" not in got.name and "\n" not in got.name
    assert connector_dir(tmp_path, name) != connector_dir(tmp_path, "x")


def test_an_operators_allowed_paths_still_exclude_state_dir_files(tmp_path: Path) -> None:
    policy = SubmittedConfigPolicy.from_worker_config({"state.dir": str(tmp_path / "s"), "rest.allowed.paths": "/"})
    policy.check_paths({"name": "n", "x.file": str(tmp_path / "elsewhere" / "f")})  # the operator allowed /
    policy.check_paths({"name": "n", "x.file": str(tmp_path / "s" / CONNECTORS_DIR / "n" / "f")})
    for path in (tmp_path / "s" / "cdc.db", tmp_path / "s" / CONNECTORS_DIR / "other" / "f"):
        with pytest.raises(Exception, match=r"never state\.dir.s own files"):
            policy.check_paths({"name": "n", "x.file": str(path)})


# -- the file signal channel ---------------------------------------------------------------------


def test_the_signal_channel_leaves_a_file_that_is_not_a_signal_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text("\n".join([HISTORY_LINE] * 50) + "\n")
    before = history.read_bytes()
    channel = FileSignalChannel(str(history))
    with caplog.at_level(logging.DEBUG):
        assert channel.read() == [] and channel.read() == []
    assert history.read_bytes() == before
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "is not a signal file" in warnings[0]
    assert "CREATE TABLE" not in caplog.text  # its content is never logged
    # Once it holds a signal, it is a signal file again: read and emptied.
    history.write_text(json.dumps({"id": "s1", "type": "log", "data": '{"message": "m"}'}) + "\n")
    assert [s.id for s in channel.read()] == ["s1"] and history.read_text() == ""


def test_the_signal_channel_reads_signals_and_reports_other_lines_by_number_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "signals.txt"
    lines = [json.dumps({"id": "a", "type": "log", "data": "{}"}), "password=hunter2", "", "{broken"]
    lines.append(json.dumps({"id": "b", "type": "log", "data": "{}"}))
    path.write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING):
        assert [s.id for s in FileSignalChannel(str(path)).read()] == ["a", "b"]
    assert path.read_text() == ""
    assert "line(s) 2, 4 are not signal JSON documents" in caplog.text and "hunter2" not in caplog.text


def test_the_signal_channel_does_not_follow_or_share_links(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    victim = tmp_path / "victim.txt"
    signal = json.dumps({"id": "x", "type": "log", "data": "{}"}) + "\n"
    victim.write_text(signal)
    os.symlink(victim, tmp_path / "soft")
    os.link(victim, tmp_path / "hard")
    with caplog.at_level(logging.WARNING):
        assert FileSignalChannel(str(tmp_path / "soft")).read() == []
        assert FileSignalChannel(str(tmp_path / "hard")).read() == []
    assert victim.read_text() == signal
    assert "it is a symbolic link" in caplog.text and "2 hard links" in caplog.text

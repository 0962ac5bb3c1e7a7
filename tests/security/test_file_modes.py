"""Issue 17, deliverable 7: state.dir is 0700 and the worker's files in it 0600, whatever the umask.

On the main before the fix `cdc.db` and its -wal/-shm were 0644 and state.dir 0755 under the
usual umask 022 (every local user could read the captured rows), and under umask 000 they
were world-writable.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc.jobs.load import load_job
from cdc.jobs.run import checkpoint_dir, make_private_checkpoint_dir
from cdc.log.base import TopicSpec
from cdc.log.embedded import EmbeddedLog
from cdc.runtime.state_lock import LOCK_FILE, StateDirLock
from cdc.storage.offsets import FileOffsetBackingStore
from tests.rest.conftest import wait_until
from tests.security.provider_rig import quoting, secure_rest

UMASKS = [0o000, 0o002, 0o022, 0o077]


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(params=UMASKS, ids=lambda u: f"umask{u:03o}")
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _write(log_: EmbeddedLog) -> None:
    log_.ensure_topic(TopicSpec("t", 1))
    producer = log_.producer()
    producer.send("t", b"v", key=b"k")
    producer.flush(10)


def test_embedded_log_state_dir_and_files(tmp_path: Path, umask: int) -> None:
    state = tmp_path / "a" / "b" / "state"  # missing parents are created private too
    log_ = EmbeddedLog(state)
    try:
        _write(log_)
        files = sorted(p.name for p in state.iterdir())
        assert {"cdc.db", "cdc.db-wal", "cdc.db-shm"} <= set(files), files
        for directory in (tmp_path / "a", tmp_path / "a" / "b", state):
            assert mode(directory) == 0o700, directory
        for name in files:
            assert mode(state / name) == 0o600, name
    finally:
        log_.close()


def test_an_older_log_is_tightened_on_open_and_its_directory_left_alone(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)
    log_ = EmbeddedLog(state)
    _write(log_)
    log_.close()
    for p in state.iterdir():
        os.chmod(p, 0o644)
    log_ = EmbeddedLog(state)
    try:
        _write(log_)
        assert all(mode(p) == 0o600 for p in state.iterdir()), {p.name: oct(mode(p)) for p in state.iterdir()}
        assert mode(state) == 0o755  # the operator's own directory keeps the mode they gave it
    finally:
        log_.close()


def test_job_lock_and_its_state_dir(tmp_path: Path, umask: int) -> None:
    state = tmp_path / "state"
    with StateDirLock.for_job(state, "orders").acquire():
        assert mode(state) == 0o700
        assert mode(state / LOCK_FILE) == 0o600
    os.chmod(state / LOCK_FILE, 0o666)
    with StateDirLock.for_job(state, "orders").acquire():
        assert mode(state / LOCK_FILE) == 0o600


def test_offsets_file_and_its_directory(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "offsets" / "connect.offsets"
    store = FileOffsetBackingStore(path)
    store.start()
    store.set({b'["c",{"p":1}]': b'{"o":1}'})
    assert mode(path.parent) == 0o700 and mode(path) == 0o600


def test_spark_checkpoint_in_state_dir(tmp_path: Path, umask: int) -> None:
    job_file = tmp_path / "job.yaml"
    job_file.write_text(
        f"""name: modes
source:
  connector.class: mysql
  database.hostname: localhost
  database.user: cdc
  database.server.id: 99
  topic.prefix: srv
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
"""
    )
    job = load_job(job_file, inspect_only=True)
    make_private_checkpoint_dir(job)
    checkpoint = Path(checkpoint_dir(job))
    assert checkpoint.is_relative_to(tmp_path / "state")
    for directory in (tmp_path / "state", checkpoint.parent, checkpoint):
        assert mode(directory) == 0o700, directory


@pytest.mark.integration
def test_a_worker_behind_the_rest_api(tmp_path: Path, umask: int) -> None:
    with secure_rest(tmp_path) as rest:
        state = tmp_path / "state"
        history = str(state / "connectors" / "m" / "h.jsonl")
        assert rest.http.post("/connectors", json=quoting("m", **{"history.file": history})).status_code == 201
        wait_until(lambda: rest.state("m")["tasks"], what="the task")
        assert mode(state) == 0o700
        names = {p.name for p in state.iterdir() if p.is_file()}
        assert "cdc.db" in names
        assert {p.name: oct(mode(p)) for p in state.iterdir() if p.is_file()} == {n: "0o600" for n in names}
        # The REST connector's own directory (issue 33): owner-only, whatever the umask.
        for directory in (state / "connectors", state / "connectors" / "m"):
            assert mode(directory) == 0o700, directory

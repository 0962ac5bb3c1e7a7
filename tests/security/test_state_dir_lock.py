"""Issue 33, items 8 and 9: one writer per state.dir, and readers that write nothing.

Two `cdc standalone` on one state.dir both started, ran the same connectors from the same
offsets, and the first's MySQL task then failed with error 4052 (two replicas with one server
id). Now every process that writes a state.dir holds `<state.dir>/cdc.lock`
(cdc/runtime/state_lock.py) and a second one is refused in one line naming the first's pid.
`cdc status` used to take the job's lock to see whether the job ran, writing its own pid
into it when it did not; now it reads the lock and leaves its bytes and mtime alone.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from cdc.api.errors import ConnectException
from cdc.runtime.state_lock import (
    LOCK_FILE,
    StateDirInUse,
    StateDirLock,
    hold_state_dir,
    lock_holder,
    writes_state_dir,
)
from cdc.runtime.worker_config import WorkerConfig
from tests.cli.test_job_commands import _job
from tests.support.proc import CdcProcess, run_cdc, wait_for, write_props

GENERATOR = "tests.runtime.connectors.GeneratorSource"


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _standalone_files(tmp_path: Path, n: int, state: Path) -> tuple[Path, Path]:
    worker = write_props(
        tmp_path / f"worker{n}.properties",
        {"transport": "embedded", "state.dir": state, "listeners": "http://127.0.0.1:0"},
    )
    connector = write_props(
        tmp_path / f"gen{n}.properties", {"name": "gen", "connector.class": GENERATOR, "topic": "t"}
    )
    return worker, connector


@pytest.mark.e2e
def test_second_standalone_on_one_state_dir_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    state = tmp_path / "state"
    worker, connector = _standalone_files(tmp_path, 1, state)
    first = CdcProcess("standalone", str(worker), str(connector), log_path=tmp_path / "first.log")
    try:
        wait_for(lambda: "REST API listening" in first.output(), 60, "the first standalone's REST API", first)
        worker2, connector2 = _standalone_files(tmp_path, 2, state)
        res = run_cdc("standalone", str(worker2), str(connector2), timeout=60)
        assert res.returncode == 1, res.stderr
        (line,) = _error_lines(res.stderr)
        assert f"pid {first.proc.pid}" in line and "cdc standalone" in line and str(state) in line, line
        assert "state.dir" in line and "Traceback" not in res.stderr
        assert "REST API listening" not in res.stdout + res.stderr  # refused before anything started
        assert first.alive()
    finally:
        code = first.terminate()
    assert code == 0, first.output()[-3000:]
    # The first one gone, the directory is free again (the kernel dropped its flock).
    with StateDirLock(state, "test"):
        pass


@pytest.mark.e2e
def test_standalone_is_refused_while_a_job_holds_the_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    worker, connector = _standalone_files(tmp_path, 1, state)
    with StateDirLock.for_job(state, "shop"):  # as `cdc run shop` holds it
        res = run_cdc("standalone", str(worker), str(connector), timeout=60)
    assert res.returncode == 1, res.stderr
    (line,) = _error_lines(res.stderr)
    assert f"in use by job shop (pid {os.getpid()})" in line and "Traceback" not in res.stderr


def test_which_workers_write_their_state_dir(tmp_path: Path) -> None:
    """`cdc worker` and `cdc standalone` take the lock through one rule (hold_state_dir): a second
    worker on an embedded state.dir is refused with the first one's pid."""
    embedded = WorkerConfig({"transport": "embedded", "state.dir": str(tmp_path / "e")})
    kafka = WorkerConfig({"transport": "kafka", "bootstrap.servers": "127.0.0.1:1", "state.dir": str(tmp_path / "k")})
    assert writes_state_dir(embedded) and not writes_state_dir(kafka)
    # On Kafka the worker's offsets, configs and status live in topics: state.dir is neither
    # created nor locked, so the workers of one cluster may share a machine and a directory.
    with hold_state_dir(kafka, "cdc worker"), hold_state_dir(kafka, "cdc worker"):
        assert not (tmp_path / "k").exists()
    with hold_state_dir(embedded, "cdc worker"):
        with pytest.raises(StateDirInUse, match=rf"in use by cdc worker \(pid {os.getpid()}\)") as e:
            hold_state_dir(embedded, "cdc worker")
        assert isinstance(e.value, ConnectException) and "\n" not in str(e.value)
        assert e.value.holder.pid == os.getpid()


def _fingerprint(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


@pytest.mark.e2e
@pytest.mark.parametrize("running", [True, False])
def test_status_leaves_the_lock_untouched(tmp_path: Path, running: bool) -> None:
    state = tmp_path / "state"
    job = _job(tmp_path, state)
    lock = StateDirLock.for_job(state, "shop").acquire()  # a run that is still going, or one that ended
    try:
        if not running:
            lock.release()
        before = _fingerprint(state / LOCK_FILE)
        time.sleep(0.05)  # a write now would show in the mtime
        res = run_cdc("status", str(job), "--json")
        assert res.returncode == 0, res.stderr
        assert f'"running": {"true" if running else "false"}' in res.stdout, res.stdout
        if running:
            assert re.search(rf'"pid": {os.getpid()}\b', res.stdout), res.stdout
        assert _fingerprint(state / LOCK_FILE) == before
        assert sorted(p.name for p in state.iterdir()) == [LOCK_FILE]  # nothing else created either
    finally:
        lock.release()


def test_lock_holder_reads_without_writing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert lock_holder(state) is None and not state.exists()  # never ran: nothing created
    with StateDirLock(state, "cdc standalone"):
        before = _fingerprint(state / LOCK_FILE)
        holder = lock_holder(state)
        assert holder is not None and (holder.pid, holder.role) == (os.getpid(), "cdc standalone")
        assert _fingerprint(state / LOCK_FILE) == before
    assert lock_holder(state) is None

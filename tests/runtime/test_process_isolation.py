"""`task.isolation=process`: each task in its own process, supervised by the worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rest.conftest import Rest, wait_until

CLASS = "tests.rest.connectors.ControlledSource"  # child processes import plugins by name


def pids(witness: Path, event: str = "start") -> list[int]:
    if not witness.exists():
        return []
    return [int(line.split()[2]) for line in witness.read_text().splitlines() if line.startswith(event)]


def task_state(rest: Rest, name: str) -> dict:
    tasks = rest.state(name).get("tasks") or [{}]
    return tasks[0]


@pytest.mark.e2e
def test_tasks_run_in_supervised_processes(tmp_path: Path) -> None:
    # witness.file is a file-valued key: a REST-submitted one must lie under rest.allowed.paths (issue 17).
    rest = Rest(tmp_path, **{"task.isolation": "process", "rest.allowed.paths": str(tmp_path)})
    witness = tmp_path / "witness.log"
    try:
        config = {"connector.class": CLASS, "topic": "iso.out", "witness.file": str(witness)}
        assert rest.http.post("/connectors", json={"name": "iso", "config": config}).status_code == 201
        wait_until(lambda: pids(witness), 30, "the task process started")
        (child,) = pids(witness)
        assert child != os.getpid()
        # Records and offsets go from the child straight to the shared log.
        expected = {"offsets": [{"partition": {"task": "iso-0"}, "offset": {"n": 5}}]}
        wait_until(lambda: rest.http.get("/connectors/iso/offsets").json() == expected, 30, "offset n=5")
        rest.http.put("/connectors/iso/pause")
        wait_until(lambda: task_state(rest, "iso").get("state") == "PAUSED", 10, "PAUSED")
        rest.http.put("/connectors/iso/resume")
        wait_until(lambda: task_state(rest, "iso").get("state") == "RUNNING", 10, "RUNNING")

        # The worker notices a task process that dies, and says how in the trace.
        os.kill(child, signal.SIGKILL)
        wait_until(lambda: task_state(rest, "iso").get("state") == "FAILED", 30, "FAILED after kill -9")
        assert f"(pid {child}) was killed by signal 9" in task_state(rest, "iso")["trace"]
        assert rest.state("iso")["connector"]["state"] == "RUNNING"
        assert rest.http.post("/connectors/iso/tasks/0/restart").status_code == 204
        wait_until(lambda: len(pids(witness)) == 2, 30, "a new task process")
        assert pids(witness)[1] != child
        wait_until(lambda: task_state(rest, "iso").get("state") == "RUNNING", 10, "RUNNING again")

        # A task that fails inside its process: FAILED with the task's own trace.
        failing = {**config, "task.failures": "1", "topic": "iso.bad"}
        rest.http.post("/connectors", json={"name": "bad", "config": failing})
        wait_until(lambda: task_state(rest, "bad").get("state") == "FAILED", 30, "bad FAILED")
        assert "lost its source connection" in task_state(rest, "bad")["trace"]

        # Stopping the connector stops its process.
        rest.http.put("/connectors/iso/stop")
        wait_until(lambda: len(pids(witness, "stop")) >= 1, 10, "the task process stopped")
        assert not any(id.connector == "iso" for id in rest.worker.tasks)
    finally:
        rest.close()


@pytest.mark.e2e
def test_task_process_never_outlives_its_worker(tmp_path: Path) -> None:
    """kill -9 of the worker: its task processes stop too, so no orphan keeps running the task."""
    witness = tmp_path / "witness.log"
    worker = tmp_path / "worker.properties"
    worker.write_text(
        f"transport=embedded\nstate.dir={tmp_path}/state\nlisteners=http://127.0.0.1:0\ntask.isolation=process\n"
    )
    connector = tmp_path / "orphan.json"
    config = {"connector.class": CLASS, "topic": "orphan", "witness.file": str(witness)}
    connector.write_text(json.dumps({"name": "orphan", "config": config}))
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdc.cli.main", "standalone", str(worker), str(connector)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: pids(witness), 30, "the task process started")
    finally:
        proc.kill()
        proc.wait()
    (child,) = pids(witness)

    def gone() -> bool:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(gone, 30, "the orphaned task process to exit")

"""Three `cdc worker` processes on Tansu, six connectors, `kill -9` of one worker.

Its tasks resume on the others within scheduled.rebalance.max.delay.ms + 10 s, and no task
ever runs on two workers at once: checked from the status topic and from a witness file each
task appends to when it starts and stops.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import httpx

from cdc.log.kafka import KafkaLog
from cdc.storage.offsets import read_topic
from tests.distributed.cluster import cluster_props
from tests.rest.conftest import wait_until
from tests.rig._common import free_port
from tests.rig.kafka import KafkaBroker

ROOT = Path(__file__).resolve().parents[2]
DELAY_MS = 3000
CONNECTORS = [f"c{i}" for i in range(6)]


def start_worker(tmp_path: Path, props: dict[str, str], n: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    path = tmp_path / f"worker{n}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in {**props, "listeners": f"http://127.0.0.1:{port}"}.items()))
    with open(tmp_path / f"worker{n}.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc.cli.main", "worker", str(path)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    return proc, f"http://127.0.0.1:{port}"


def get(url: str, path: str) -> httpx.Response | None:
    try:
        return httpx.get(url + path, timeout=10)
    except httpx.HTTPError:
        return None


def tasks_by_worker(url: str) -> dict[str, str]:
    """connector -> worker_id of its RUNNING task (only connectors whose task is RUNNING)."""
    out = {}
    for name in CONNECTORS:
        r = get(url, f"/connectors/{name}/status")
        if r is not None and r.status_code == 200:
            for t in r.json()["tasks"]:
                if t["state"] == "RUNNING":
                    out[name] = t["worker_id"]
    return out


def test_kill_9_moves_tasks_and_never_runs_one_twice(tansu: KafkaBroker, tmp_path: Path) -> None:
    witness = tmp_path / "witness.log"
    # witness.file is a file-valued key: over REST it must lie under rest.allowed.paths (issue 17).
    props = cluster_props(
        tansu.bootstrap, **{"scheduled.rebalance.max.delay.ms": str(DELAY_MS), "rest.allowed.paths": str(tmp_path)}
    )
    workers = [start_worker(tmp_path, props, n) for n in range(3)]
    urls = [u for _, u in workers]
    try:
        wait_until(lambda: all(get(u, "/") is not None for u in urls), 60, "three REST APIs")
        for name in CONNECTORS:
            body = {
                "name": name,
                "config": {
                    "connector.class": "tests.rest.connectors.ControlledSource",
                    "topic": f"{props['group.id']}-{name}",
                    "witness.file": str(witness),
                },
            }
            # Any worker takes the request; non-leaders forward it (409 while no leader is known).
            wait_until(
                lambda body=body: (
                    (r := httpx.post(urls[1] + "/connectors", json=body, timeout=60)).status_code in (201, 409)
                    and (r.status_code == 201 or "already exists" in r.text)
                ),
                60,
                f"create {name}",
            )

        def spread() -> dict[str, str] | None:
            p = tasks_by_worker(urls[0])
            return p if len(p) == 6 and len(set(p.values())) >= 2 else None

        placement = wait_until(spread, 90, "six tasks RUNNING over the workers")
        victim_id = max(set(placement.values()), key=lambda w: list(placement.values()).count(w))
        victim = next(i for i, (_, u) in enumerate(workers) if u.endswith(victim_id.rsplit(":", 1)[1]))
        moved = sorted(n for n, w in placement.items() if w == victim_id)
        survivors = [u for i, u in enumerate(urls) if i != victim]
        killed_at = time.time()
        workers[victim][0].send_signal(signal.SIGKILL)
        workers[victim][0].wait(10)

        def resumed() -> bool:
            p = tasks_by_worker(survivors[0])
            return len(p) == 6 and victim_id not in p.values()

        wait_until(resumed, DELAY_MS / 1000 + 10, f"{moved} resumed on the survivors")
    finally:
        for proc, _ in workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, _ in workers:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()

    # The witness: per task, run intervals never overlap (the victim's open ones end at the kill).
    victim_pid = workers[victim][0].pid
    intervals: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    open_runs: dict[tuple[str, int], float] = {}
    for line in witness.read_text().splitlines():
        event, key, pid, at = line.split()
        if event == "start":
            open_runs[(key, int(pid))] = float(at)
        else:
            start = open_runs.pop((key, int(pid)))
            intervals[key].append((start, float(at), int(pid)))
    for (key, pid), start in open_runs.items():
        assert pid == victim_pid, f"task {key} in pid {pid} never stopped"
        intervals[key].append((start, killed_at, pid))
    for key, runs in intervals.items():
        runs.sort()
        for (_, end, pid), (start, _, next_pid) in itertools.pairwise(runs):
            assert start >= end, f"task {key} ran in pid {pid} and pid {next_pid} at once"
    assert {k.rsplit("-", 1)[0] for k in intervals} == set(CONNECTORS)

    # The status topic: a task is RUNNING on a new worker only after its previous worker
    # said UNASSIGNED (or was the one killed).
    log_ = KafkaLog(tansu.bootstrap)
    owner: dict[str, str | None] = {}
    ran_on: dict[str, set[str]] = defaultdict(set)
    for rec in sorted(read_topic(log_, props["status.storage.topic"]), key=lambda r: r.timestamp or 0):
        key = rec.key.decode() if rec.key else ""
        if not key.startswith("status-task-") or rec.value is None:
            continue
        v = json.loads(rec.value)
        current = owner.get(key)
        if v["state"] in ("RUNNING", "PAUSED"):
            assert current in (None, v["worker_id"], victim_id), (
                f"{key}: {v['worker_id']} took over from live {current}"
            )
            owner[key] = v["worker_id"]
            ran_on[key].add(v["worker_id"])
        elif v["state"] in ("UNASSIGNED", "FAILED") and current == v["worker_id"]:
            owner[key] = None
    for name in moved:
        assert ran_on[f"status-task-{name}-0"] - {victim_id}, f"{name} never ran on a survivor"

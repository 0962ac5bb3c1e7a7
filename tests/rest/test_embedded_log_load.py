"""Acceptance (issue 19): many connectors and a sink on one worker's embedded log, under CPU load.

Once, seven connectors added over REST to one standalone worker left five tasks FAILED with
`sqlite3.OperationalError: database is locked`. Here nine source connectors (twelve tasks)
and a sink reading all their topics are added over REST at once, while a busy loop runs on
every core, the LogCleaner runs every 200 ms, and another process keeps opening the log and
reading its topics (`cdc status`, the Spark source's Arrow reads). No task may fail, nothing
may say `database is locked`, and every record produced must reach the sink. Once with tasks
as threads, once with each task in a process of its own (`task.isolation=process`).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cdc.log.base import TopicPartition
from cdc.log.embedded import EmbeddedLog
from tests.rest.conftest import Rest
from tests.rest.load_connectors import load_value

SOURCE = "tests.rest.load_connectors.LoadSource"  # task processes import plugins by name
SINK = "tests.rest.load_connectors.LineFileSink"
CONNECTORS = 9
COUNT = 600  # records per task
LOCKED = "database is locked"


def _tasks(i: int) -> int:
    return 2 if i % 4 == 0 else 1  # some connectors run two tasks


def _burn(stop: Any) -> None:
    """CPU load: one busy loop per core while the worker runs."""
    while not stop.is_set():
        for _ in range(100_000):
            pass


def _inspect(state_dir: str, stop: Any, errors: Any) -> None:
    """Another process on the same log, again and again: open it, list topics and offsets, close it,
    and read every load topic through the Arrow reader (ADBC, as the Spark source's executors do)."""
    from cdc.log.embedded_arrow import read_arrow

    while not stop.is_set():
        try:
            log = EmbeddedLog(state_dir)
            try:
                ranges = []
                for name, desc in log.list_topics().items():
                    if name.startswith("load."):
                        for p in range(desc.partitions):
                            tp = TopicPartition(name, p)
                            ranges.append((tp, log.beginning_offsets([tp])[tp], log.end_offsets([tp])[tp]))
            finally:
                log.close()
            for tp, start, end in ranges:
                rows = sum(b.num_rows for b in read_arrow(log.path, 60_000, tp.topic, tp.partition, start, end))
                assert rows == end - start, f"{tp}: {rows} rows in [{start}, {end})"
        except Exception:
            errors.put(traceback.format_exc())
        time.sleep(0.05)


def _statuses(rest: Rest, names: list[str]) -> list[dict[str, Any]]:
    out = []
    for name in names:
        response = rest.http.get(f"/connectors/{name}/status")
        if response.status_code == 200:
            out.append(response.json())
    return out


@pytest.mark.integration
@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_many_connectors_and_a_sink_on_one_log_under_load(
    tmp_path: Path, isolation: str, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.WARNING)
    sink_file = tmp_path / "sink.lines"
    rest = Rest(
        tmp_path,
        **{
            "task.isolation": isolation,
            "rest.allowed.paths": str(tmp_path),
            "log.retention.check.interval.ms": "200",
        },
    )
    ctx = multiprocessing.get_context("spawn")
    stop, inspect_errors = ctx.Event(), ctx.Queue()
    helpers = [ctx.Process(target=_burn, args=(stop,)) for _ in range(os.cpu_count() or 2)]
    helpers.append(ctx.Process(target=_inspect, args=(str(rest.worker.log.path.parent), stop, inspect_errors)))
    failures: list[str] = []
    names = [f"load{i}" for i in range(CONNECTORS)] + ["sink"]
    try:
        for p in helpers:
            p.start()
        configs = [
            {
                "name": f"load{i}",
                "config": {
                    "connector.class": SOURCE,
                    "topic": f"load.t{i}",
                    "count": str(COUNT),
                    "task.count": str(_tasks(i)),
                    "tasks.max": str(_tasks(i)),
                },
            }
            for i in range(CONNECTORS)
        ]
        configs.append(
            {"name": "sink", "config": {"connector.class": SINK, "topics.regex": r"load\.t\d+", "file": str(sink_file)}}
        )
        with ThreadPoolExecutor(len(configs)) as pool:  # all at once
            codes = list(pool.map(lambda c: rest.http.post("/connectors", json=c).status_code, configs))
        assert codes == [201] * len(configs)

        expected = Counter(
            load_value(f"load{i}", t, n)
            for i in range(CONNECTORS)
            for t in range(_tasks(i))
            for n in range(1, COUNT + 1)
        )
        deadline = time.monotonic() + 300
        received: Counter[str] = Counter()
        while time.monotonic() < deadline:
            for status in _statuses(rest, names):
                for task in [status["connector"], *status.get("tasks", [])]:
                    if task.get("state") == "FAILED":
                        failures.append(f"{status['name']}: {task.get('trace', '')}")
            if failures:
                break
            if sink_file.exists():
                received = Counter(sink_file.read_text().splitlines())
                if not expected - received:
                    break
            time.sleep(0.5)
    finally:
        stop.set()
        for p in helpers:
            p.join(30)
        rest.close()

    assert failures == [], failures[0]
    missing = expected - received
    assert not missing, f"{sum(missing.values())} of {sum(expected.values())} records never reached the sink"
    assert set(received) == set(expected)  # nothing else arrived (duplicates are at-least-once's right)
    inspect_failures = []
    while not inspect_errors.empty():
        inspect_failures.append(inspect_errors.get())
    assert inspect_failures == [], inspect_failures[0]
    out, err = capfd.readouterr()
    assert LOCKED not in out + err
    assert not [r for r in caplog.records if LOCKED in r.getMessage()]

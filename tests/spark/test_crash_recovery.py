"""kill -9 of the Spark driver in the middle of a micro-batch, then a restart from the
checkpoint: the Delta table equals the source history, nothing duplicated or missing."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdc.log.embedded import EmbeddedLog
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # a minute or more: `pytest -m 'not slow'` for a quick local run


def _driver(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.spark.crash_driver", *args],
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_kill_9_mid_batch_then_restart(tmp_path: Path) -> None:
    rng = random.Random(7)
    t = Table("shop.inv.items")
    history: list[tuple[int, int, str, int]] = []  # (seq, key, op, qty)
    for seq in range(1, 401):
        history.append((seq, rng.randrange(60), rng.choice("ccuuud"), rng.randrange(1000)))
    state = tmp_path / "state"
    with EmbeddedLog(state) as log:
        produce(
            log,
            t.topic,
            [t.event(op, k, {"name": f"s{seq}", "qty": q}, seq) for seq, k, op, q in history],
            partitions=2,
        )
    lake, ckpt, marks = tmp_path / "lake", tmp_path / "ckpt", tmp_path / "marks"
    marks.mkdir()
    args = [str(state), str(lake), str(ckpt), str(marks)]

    proc = _driver([*args, "stream"], tmp_path / "stream.log")
    try:
        deadline = time.monotonic() + 120
        while not (marks / "started-3").exists():
            assert proc.poll() is None, (tmp_path / "stream.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the driver never reached batch 3"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM, mid-batch
        proc.wait()
    assert not (marks / "started-9").exists(), "the stream finished before the kill; make batches smaller"

    proc = _driver([*args, "catchup"], tmp_path / "catchup.log")
    assert proc.wait(180) == 0, (tmp_path / "catchup.log").read_text()[-3000:]

    expected: dict[int, tuple[str, int]] = {}
    for seq, k, op, q in history:  # source order = sequence order
        if op == "d":
            expected.pop(k, None)
        else:
            expected[k] = (f"s{seq}", q)
    rows = delta_rows(str(lake / "shop_inv_items"))
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate keys in the Delta table"
    assert {r["id"]: (r["name"], r["qty"]) for r in rows} == expected

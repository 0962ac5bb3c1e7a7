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


def _driver(args: list[str], log: Path, target: str = "delta") -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "CRASH_TARGET": target}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.spark.crash_driver", *args],
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


History = list[tuple[int, int, str, int]]  # (seq, key, op, qty)


def _history_in_log(tmp_path: Path, rng: random.Random, keys: int) -> tuple[History, list[str]]:
    """400 seeded changes to `keys` keys in a 2-partition topic of the embedded log; the
    driver's arguments (state, lake, checkpoint, marks directories)."""
    t = Table("shop.inv.items")
    history = [(seq, rng.randrange(keys), rng.choice("ccuuud"), rng.randrange(1000)) for seq in range(1, 401)]
    state = tmp_path / "state"
    with EmbeddedLog(state) as log:
        produce(
            log,
            t.topic,
            [t.event(op, k, {"name": f"s{seq}", "qty": q}, seq) for seq, k, op, q in history],
            partitions=2,
        )
    (tmp_path / "marks").mkdir()
    return history, [str(state), str(tmp_path / "lake"), str(tmp_path / "ckpt"), str(tmp_path / "marks")]


def _expected(history: History) -> dict[int, tuple[str, int]]:
    expected: dict[int, tuple[str, int]] = {}
    for seq, k, op, q in history:  # source order = sequence order
        if op == "d":
            expected.pop(k, None)
        else:
            expected[k] = (f"s{seq}", q)
    return expected


def test_kill_9_mid_batch_then_restart(tmp_path: Path) -> None:
    history, args = _history_in_log(tmp_path, random.Random(7), keys=60)
    lake, marks = tmp_path / "lake", tmp_path / "marks"

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

    rows = delta_rows(str(lake / "shop_inv_items"))
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate keys in the Delta table"
    assert {r["id"]: (r["name"], r["qty"]) for r in rows} == _expected(history)


def _log_actions(table: Path) -> list[list[dict]]:
    import json

    return [
        [json.loads(line) for line in f.read_text().splitlines() if line]
        for f in sorted((table / "_delta_log").glob("*.json"))
    ]


def _kill_at_the_seams(tmp_path: Path, rng: random.Random, target: str) -> History:
    """Seeded kills at the parallel apply's seams: after the tasks wrote their files and before
    the commit, between the table's commit and its tombstones' commit, and at a random moment
    of a later batch; then a catch-up. The source history."""
    history, args = _history_in_log(tmp_path, rng, keys=50)
    marks = tmp_path / "marks"
    first = rng.randrange(1, 4)
    for n, crash in enumerate([f"before-commit:{first}", f"after-commit:{first + rng.randrange(0, 3)}"]):
        proc = _driver([*args, "stream", crash], tmp_path / f"crash{n}.log", target)
        try:
            code = proc.wait(180)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the JVM the driver left behind
        assert code == 137, (tmp_path / f"crash{n}.log").read_text()[-3000:]
    proc = _driver([*args, "stream"], tmp_path / "stream.log", target)
    try:
        deadline = time.monotonic() + 120
        started = f"started-{first + 4}"
        while not (marks / started).exists():
            assert proc.poll() is None, (tmp_path / "stream.log").read_text()[-3000:]
            assert time.monotonic() < deadline, f"the driver never reached {started}"
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 1.5))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    proc = _driver([*args, "catchup"], tmp_path / "catchup.log", target)
    assert proc.wait(180) == 0, (tmp_path / "catchup.log").read_text()[-3000:]
    return history


@pytest.mark.parametrize("seed", [3])
def test_kills_inside_the_parallel_delta_commit_protocol(tmp_path: Path, seed: int) -> None:
    """Read with deltalake after the seeded kills: every file the log references exists, no
    batch is committed twice to a table, no key twice, and the table equals the source history."""
    from deltalake import DeltaTable

    history = _kill_at_the_seams(tmp_path, random.Random(seed), "delta")
    lake = tmp_path / "lake"
    table = lake / "shop_inv_items"
    rows = delta_rows(str(table))
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate keys in the Delta table"
    assert {r["id"]: (r["name"], r["qty"]) for r in rows} == _expected(history)
    for path in (table, lake / "shop_inv_items__tombstones"):
        dt = DeltaTable(str(path))
        for uri in dt.file_uris():
            assert os.path.exists(uri.removeprefix("file://")), f"the log references a missing file {uri}"
        txns = [a["txn"]["version"] for commit in _log_actions(path) for a in commit if "txn" in a]
        assert len(txns) == len(set(txns)), f"{path.name}: a batch committed twice: {txns}"
        assert txns == sorted(txns)


@pytest.mark.parametrize("seed", [5])
def test_kills_inside_the_parallel_iceberg_commit_protocol(tmp_path: Path, seed: int) -> None:
    """The same kills with the Iceberg target, read with pyiceberg's own catalog: every data file
    the current snapshot names exists, each batch is in at most one snapshot of a table (in
    order), no key twice, and the table equals the source history."""
    from pyiceberg.catalog import load_catalog

    history = _kill_at_the_seams(tmp_path, random.Random(seed), "iceberg")
    lake = tmp_path / "lake"
    catalog = load_catalog("cdc", uri=f"sqlite:///{lake}/catalog.db", warehouse=f"file://{lake}/wh")
    rows = catalog.load_table(("lake", "shop_inv_items")).scan().to_arrow().to_pylist()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate keys in the Iceberg table"
    assert {r["id"]: (r["name"], r["qty"]) for r in rows} == _expected(history)
    for name in ("shop_inv_items", "shop_inv_items__tombstones"):
        tbl = catalog.load_table(("lake", name))
        for task in tbl.scan().plan_files():
            path = task.file.file_path.removeprefix("file://")
            assert os.path.exists(path), f"{name}: the current snapshot names a missing file {path}"
        batches = [int(s.summary["cdc.batch.id"]) for s in tbl.snapshots() if s.summary["cdc.batch.id"] is not None]
        assert len(batches) == len(set(batches)), f"{name}: a batch committed twice: {batches}"
        assert batches == sorted(batches)

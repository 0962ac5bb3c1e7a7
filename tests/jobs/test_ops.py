"""Ops commands on a job file, without Spark: `cdc offsets show|reset`, `cdc topics list|read`,
`cdc status`, and the job lock that keeps a reset away from a running job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc.jobs.load import load_job
from cdc.jobs.status import collect, committed_offsets, render
from cdc.log.base import TopicSpec
from cdc.runtime.state_lock import StateDirLock
from cdc.runtime.transport import open_log, open_offset_store
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import offset_key, offset_value
from tests.support.proc import run_cdc

OFFSET = {"file": "mysql-bin.000003", "pos": 1547, "gtids": "0-1-9", "ts_sec": 1700000000}


def _event(file: str, pos: int, ts_ms: int, op: str = "c") -> bytes:
    """A change event as JsonConverter writes it (schemas.enable=true; the schema is elided here)."""
    source = {"file": file, "pos": pos, "ts_ms": ts_ms, "db": "shop", "table": "items"}
    return json.dumps({"schema": {"type": "struct"}, "payload": {"op": op, "source": source, "after": {}}}).encode()


def _job(tmp_path: Path) -> Path:
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: ops
source:
  connector.class: mysql
  database.hostname: ${{env:OPS_UNSET_HOST}}
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
    return job


def _state(job_file: Path) -> None:
    """What a run leaves behind: a stored offset, a table topic with 3 changes, a checkpoint
    whose last committed batch covers the first 2 of them."""
    job = load_job(job_file, inspect_only=True)
    config = WorkerConfig(job.worker_config())
    with open_log(config) as log_:
        store = open_offset_store(config, log_)
        store.start()
        store.set({offset_key("ops", {"server": "srv"}): offset_value(OFFSET)})
        store.stop()
        log_.ensure_topic(TopicSpec("srv.shop.items", 1))
        producer = log_.producer()
        for i, ts in enumerate((1_000, 2_000, 3_000)):
            producer.send("srv.shop.items", _event("mysql-bin.000003", 100 + i, ts), key=b"k")
        producer.flush(10)
    checkpoint = Path(config.get("state.dir")) / "spark-checkpoints" / "ops"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    for batch, end in ((0, 1), (1, 2), (2, 3)):
        lines = ["v1", '{"batchWatermarkMs":0}', json.dumps({"srv.shop.items": {"0": end}})]
        (checkpoint / "offsets" / str(batch)).write_text("\n".join(lines))
    for batch in (0, 1):  # batch 2 planned, never committed (a crash mid-batch)
        (checkpoint / "commits" / str(batch)).write_text("v1\n{}")


@pytest.mark.e2e
def test_offsets_show_and_reset(tmp_path: Path) -> None:
    job = _job(tmp_path)
    _state(job)
    # Unresolved ${env:…} in source does not stop commands that never touch the database.
    res = run_cdc("offsets", "show", str(job))
    assert res.returncode == 0, res.stderr
    (row,) = [json.loads(line) for line in res.stdout.splitlines()]
    assert row["connector"] == "ops" and row["partition"] == {"server": "srv"} and row["offset"] == OFFSET

    # While the job runs (it holds the lock), a reset refuses and names the pid.
    with StateDirLock.for_job(tmp_path / "state", "ops").acquire():
        res = run_cdc("offsets", "reset", str(job), "--yes")
        assert res.returncode == 1
        assert "job 'ops' is running (pid" in res.stderr and "Traceback" not in res.stderr
    assert json.loads(run_cdc("offsets", "show", str(job)).stdout)["offset"] == OFFSET

    # Stopped: the offset is tombstoned; show prints nothing, a second reset has nothing to do.
    res = run_cdc("offsets", "reset", str(job), "--yes")
    assert res.returncode == 0, res.stderr
    assert "1 offset(s) reset" in res.stdout
    assert run_cdc("offsets", "show", str(job)).stdout == ""
    assert "nothing to reset" in run_cdc("offsets", "reset", str(job), "--yes").stdout


@pytest.mark.e2e
def test_topics_list_and_read_for_a_job(tmp_path: Path) -> None:
    job = _job(tmp_path)
    _state(job)
    res = run_cdc("topics", "list", str(job))
    assert res.returncode == 0, res.stderr
    assert "srv.shop.items\tpartitions=1\trecords=3\tend_offsets=3" in res.stdout.splitlines()
    res = run_cdc("topics", "read", str(job), "srv.shop.items", "--from-beginning", "--max", "2")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["value"]["payload"]["source"]["pos"] for r in rows] == [100, 101]
    res = run_cdc("topics", "read", str(job))
    assert res.returncode == 2 and "usage: cdc topics read JOB_FILE TOPIC" in res.stderr
    res = run_cdc("topics", "list", str(job), "--worker", str(tmp_path / "w.properties"))
    assert res.returncode == 2 and "exactly one of them" in res.stderr


@pytest.mark.e2e
def test_status_reads_log_offsets_and_checkpoint(tmp_path: Path) -> None:
    job_file = _job(tmp_path)
    _state(job_file)
    job = load_job(job_file, inspect_only=True)
    assert committed_offsets(tmp_path / "state" / "spark-checkpoints" / "ops")[0] == 1

    status = collect(job, now_ms=10_000)
    assert not status.running and status.source_offset == OFFSET and status.checkpoint_batch == 1
    (table,) = status.tables
    assert (table.table, table.log_events, table.applied_events, table.pending_events) == ("shop.items", 3, 2, 1)
    # Applied up to the 2nd change; the 3rd (source time 3000 ms) has waited 7 s at now=10 s.
    assert table.applied_position == "mysql-bin.000003:101" and table.lag_ms == 7_000
    text = "\n".join(render(status))
    assert "job ops: stopped" in text and "last committed batch 1" in text and "7.0 s" in text

    with StateDirLock.for_job(tmp_path / "state", "ops").acquire():
        res = run_cdc("status", str(job_file), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["running"] is True and data["tables"][0]["pending_events"] == 1


@pytest.mark.e2e
def test_status_of_a_job_that_never_ran(tmp_path: Path) -> None:
    res = run_cdc("status", str(_job(tmp_path)))
    assert res.returncode == 0, res.stderr
    assert "job ops: stopped" in res.stdout and "none stored yet" in res.stdout
    assert not (tmp_path / "state" / "cdc.db").exists()

"""`cdc status`'s incremental snapshot progress (cdc/jobs/incremental_status.py) over a real log and MariaDB.

Seeded: a topic holding a random mix of streamed changes and incremental `r` events (with their
chunk times), an offset naming the running and queued tables, and the database's row estimate
after ANALYZE TABLE. Rows, chunks, estimate and ETA must follow from those numbers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cdc.jobs.incremental_status import progress
from cdc.jobs.load import load_job
from cdc.log.base import TopicSpec
from cdc.log.embedded import EmbeddedLog
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props, execute
from tests.rig import MariaDbServer


def _event(op: str, snapshot: str, ts_ms: int, i: int) -> bytes:
    payload = {"op": op, "after": {"id": i}, "source": {"snapshot": snapshot, "ts_ms": ts_ms}}
    return json.dumps({"schema": {}, "payload": payload}).encode()


@pytest.mark.parametrize("seed", [2231, 2232, 2233])
def test_rows_chunks_estimate_and_eta_follow_from_the_log_and_the_database(
    tmp_path: Path, mariadb_db: MariaDbServer, seed: int
) -> None:
    rnd = random.Random(seed)
    db, chunk = mariadb_db.database, rnd.randint(5, 50)
    total = rnd.randint(300, 900)
    execute(
        mariadb_db,
        "CREATE TABLE c (id INT PRIMARY KEY)",
        "CREATE TABLE d (id INT PRIMARY KEY)",
        "INSERT INTO c VALUES " + ",".join(f"({i})" for i in range(1, total + 1)),
        "ANALYZE TABLE c",
        "ANALYZE TABLE d",
    )
    props = connector_props(mariadb_db, incremental__snapshot__chunk__size=str(chunk))
    job = load_job(str(mysql_delta_job(tmp_path, "st", props, {f"{db}.c": ""})), inspect_only=True)
    reads = rnd.randint(1, total - 1)
    start = 1_700_000_000_000
    times = sorted(start + rnd.randint(0, 60_000) for _ in range(reads))
    topic = f"dbserver1.{db}.c"
    with EmbeddedLog(tmp_path / "log", synchronous="NORMAL") as log_:
        log_.ensure_topic(TopicSpec(topic, 1, -1))
        producer = log_.producer()
        for i, ts in enumerate(times):
            producer.send(topic, _event("r", "incremental", ts, i), partition=0)
            if rnd.random() < 0.3:  # streamed changes and an initial snapshot's reads are not counted
                producer.send(topic, _event(rnd.choice(["c", "u", "d"]), "false", ts, i), partition=0)
            if rnd.random() < 0.05:
                producer.send(topic, _event("r", "true", ts, i), partition=0)
        producer.send(topic, None, key=b"tombstone", partition=0)
        assert producer.flush(30) == 0
        producer.close()
        collections = [{"incremental_snapshot_collections_id": t} for t in (f"{db}.c", f"{db}.d")]
        offset = {"file": "x", "incremental_snapshot_collections": json.dumps(collections)}
        got = progress(job, log_, offset, {f"{db}.c": topic})
    running, queued = got[f"{db}.c"], got[f"{db}.d"]
    assert (running.state, running.rows, running.chunks) == ("running", reads, reads // chunk)
    assert running.estimate is not None and running.estimate >= reads
    assert abs(running.estimate - total) <= total // 2  # the database's statistics, not the rows read
    assert running.chunks_estimate == -(-running.estimate // chunk)
    if times[-1] > times[0]:
        rate = reads / (times[-1] - times[0])
        assert running.eta_ms == int((running.estimate - reads) / rate)
    assert "incremental running" in running.cell() and f"{reads}/{running.estimate} rows" in running.cell()
    assert (queued.state, queued.rows, queued.estimate) == ("queued", 0, 0)
    assert progress(job, log_, {"file": "x"}, {}) == {}

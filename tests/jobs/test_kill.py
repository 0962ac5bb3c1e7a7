"""`cdc run` SIGKILLed 10 times at random points while the demo's load generator writes, and
restarted each time; then one `--until-caught-up` run, and `cdc verify` must find nothing.

A kill can land anywhere: while the source snapshots or streams, while Spark starts, plans a
batch, writes Delta files or commits its checkpoint. Each restart resumes from the stored
source offsets and the Spark checkpoint; nothing may be lost, duplicated or resurrected.
The seed is printed on failure (set CDC_KILL_SEED to replay a sequence of kill points).
The same runs with `format: avro` (issue 20: records in Avro, schemas in the embedded log's
registry), with fewer kills to keep CI's time down.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pymysql
import pytest

from examples.demo import loadgen
from tests.mysql.harness import connector_props
from tests.support.proc import REPO, cdc_argv, run_cdc

KILLS = {"json": 10, "avro": 4}

pytestmark = pytest.mark.slow  # a minute or more: `pytest -m 'not slow'` for a quick local run


def _job(tmp_path: Path, server, db: str, fmt: str = "json") -> Path:
    props = connector_props(server, topic__prefix="kill")
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items())
    tables = "\n".join(
        f"    {db}.{t}: {{keys: [{k}]}}"
        for t, k in (("customers", "id"), ("products", "sku"), ("orders", "id"), ("order_lines", "order_id, line_no"))
    )
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: killed
source:
{source}
transport:
  state.dir: {tmp_path / "state"}
  format: {fmt}
sink:
  type: delta
  path: {tmp_path / "lake"}
  tables:
{tables}
spark:
  master: local[2]
  trigger: {{processingTime: 1 second}}
"""
    )
    return job


def _wait_for(log: Path, start: int, marker: str, proc: subprocess.Popen[bytes], timeout: float = 90) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        with log.open("rb") as f:
            f.seek(start)
            if marker.encode() in f.read():
                return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_sigkill_ten_times_during_the_demo_workload(tmp_path: Path, mariadb_db, fmt: str) -> None:
    seed = int(os.environ.get("CDC_KILL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    db = mariadb_db.database
    loadgen.create_shop(mariadb_db.host, mariadb_db.port, mariadb_db.user, mariadb_db.password, db)
    job = _job(tmp_path, mariadb_db, db, fmt)
    kills = KILLS[fmt]

    # The demo's load at 3 rounds/s for as long as the kills go on, so every restart has
    # changes to apply; the primary-key changes and the ALTER TABLE come 10 s and 15 s in.
    stop = threading.Event()
    failures: list[BaseException] = []

    def generate() -> None:
        conn = pymysql.connect(
            host=mariadb_db.host,
            port=mariadb_db.port,
            user=mariadb_db.user,
            password=mariadb_db.password,
            database=db,
            autocommit=True,
        )
        load = loadgen.ShopLoad(conn, random.Random(seed))
        try:
            for i in itertools.count():
                if stop.wait(1 / 3):
                    return
                load.round(i, 90)
        except BaseException as e:
            failures.append(e)
        finally:
            conn.close()

    load = threading.Thread(target=generate, daemon=True)
    load.start()

    log = tmp_path / "runs.log"
    batch_kills = 0
    for i in range(kills):
        with log.open("ab") as out:
            out.write(f"\n--- run {i + 1} (seed {seed})\n".encode())
            out.flush()
            start = log.stat().st_size
            proc = subprocess.Popen(
                cdc_argv("run", str(job)), stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
            )
        if i % 2 == 0:
            # Early: during start-up, the snapshot or streaming, before or while Spark starts.
            time.sleep(rng.uniform(1.0, 6.0))
        elif _wait_for(log, start, "sink query started", proc):
            # Inside the sink: its first micro-batch (reading the backlog, decoding, MERGE, the
            # checkpoint commit) or the one after it is under way.
            time.sleep(rng.uniform(0.5, 5.0))  # batches run every second: several are in reach
            batch_kills += 1
        assert proc.poll() is None, f"run {i + 1} exited ({proc.returncode}), seed {seed}:\n{log.read_text()[-3000:]}"
        os.killpg(proc.pid, signal.SIGKILL)  # the whole job: the Python process and Spark's JVM
        proc.wait(30)
    assert batch_kills >= kills // 2 - 1, f"only {batch_kills} kills landed in the sink's batches; see {log}"

    stop.set()
    load.join(60)
    assert not failures, f"the load generator failed: {failures[0]!r}"
    res = run_cdc("run", str(job), "--until-caught-up", timeout=420)
    assert res.returncode == 0, f"seed {seed}: {res.stderr[-3000:]}"
    res = run_cdc("verify", str(job), timeout=120)
    assert res.returncode == 0, f"seed {seed}: {res.stdout[-3000:]}{res.stderr[-2000:]}"
    assert "4 tables verified: 0 differences" in res.stdout

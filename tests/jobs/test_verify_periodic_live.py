"""`cdc run` verifying itself on a schedule (the job key `verify`, issue 37): the outcome of each run in
`cdc status`, on `metrics.port` and in a private file; drift planted in the lake with deltalake is found
by the next run, with the job still running and nothing else asked of it."""

from __future__ import annotations

import random
import re
import stat
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from deltalake import DeltaTable

from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props, execute
from tests.runtime.prometheus_scrape import scrape_until, value
from tests.support.proc import CdcProcess, run_cdc, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = random.randrange(2**32)


def _status(job: Path) -> str:
    res = run_cdc("status", str(job), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_scheduled_verify_reports_no_drift_then_finds_the_planted_one(tmp_path: Path, mariadb_db: Any) -> None:
    rng = random.Random(SEED)
    rows = rng.randint(20, 60)
    execute(
        mariadb_db,
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40))",
        "INSERT INTO items VALUES " + ", ".join(f"({i}, 'item{i}')" for i in range(1, rows + 1)),
    )
    table = f"{mariadb_db.database}.items"
    props = connector_props(mariadb_db, heartbeat__interval__ms=500)
    job = mysql_delta_job(tmp_path, "checked", props, {table: "target: items"})
    text = job.read_text().replace("  type: embedded\n", "  type: embedded\n  metrics.port: 0\n", 1)
    job.write_text(text + "verify:\n  interval.seconds: 2\n")
    lake = str(tmp_path / "lake" / "items")
    proc = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
    try:
        url: list[str] = []

        def announced() -> bool:
            url[:] = re.findall(r"Prometheus metrics on (http://\S+/metrics)", proc.output())
            return bool(url)

        wait_for(announced, 120, "the metrics port in the log", proc)
        with httpx.Client(timeout=10) as http:
            text, s = scrape_until(
                http,
                lambda s: value(s, "cdc_verify_differences", table=table) is not None,
                f"a completed verify run (seed {SEED})",
                timeout=240,
                path=url[0],
            )
            assert value(s, "cdc_verify_differences", table=table) == 0, text
            assert value(s, "cdc_verify_failures_total") == 0, text
            assert (value(s, "cdc_verify_last_run_timestamp") or 0) > time.time() - 120, text
            status = _status(job)
            assert re.search(
                r"verify: last run at .* \(source read at mysql-bin\.\d+:\d+ .*\): no differences in 1 tables", status
            ), status
            outcome = tmp_path / "state" / "verify-checked.json"
            assert stat.S_IMODE(outcome.stat().st_mode) == 0o600

            # Drift: a row deleted from the lake behind the job's back (the sink has nothing to apply: the
            # database is idle, so deltalake's commit meets no other writer).
            version = -1
            while DeltaTable(lake).version() != version:
                version = DeltaTable(lake).version()
                time.sleep(3)
            lost = rng.randint(1, rows)
            DeltaTable(lake).delete(f"id = {lost}")
            text, s = scrape_until(
                http,
                lambda s: value(s, "cdc_verify_differences", table=table) == 1,
                f"the next run finding id {lost} missing (seed {SEED})",
                timeout=120,
                path=url[0],
            )
            assert value(s, "cdc_verify_failures_total") == 0, text
            status = _status(job)
            assert f"1 differences ({table}: 1 missing); cdc verify shows them" in status, status
        assert proc.terminate(60) == 0, proc.output()[-3000:]
    finally:
        if proc.alive():
            proc.kill9()
    assert "verify: last run at" in (tmp_path / "run.log").read_text(errors="replace")

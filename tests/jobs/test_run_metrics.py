"""`cdc run` with `transport.metrics.port` (issue 24): one Prometheus exposition holding the
worker's Debezium and Kafka Connect metrics and the Spark sink's per-table `cdc_sink_*`,
scraped while the job runs and parsed with prometheus_client's own text parser. The figures
must follow the rows: a seeded snapshot, then seeded inserts and updates streamed.

With its output on a pipe (not a terminal) the run prints plain lines and never the live view.
"""

from __future__ import annotations

import random
import re
import socket
from pathlib import Path

import httpx
import pytest

from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props, execute
from tests.runtime.prometheus_scrape import names, scrape_until, value
from tests.support.proc import CdcProcess, run_cdc, wait_for

SEED = random.randrange(2**32)


def _with_metrics_port(job: Path) -> None:
    """The job's transport with `metrics.port: 0` (a free port, named in the run's log)."""
    text = job.read_text()
    assert "  type: embedded\n" in text
    job.write_text(text.replace("  type: embedded\n", "  type: embedded\n  metrics.port: 0\n", 1))


@pytest.mark.slow
def test_cdc_run_serves_source_connect_and_sink_metrics(tmp_path: Path, mariadb_db) -> None:
    rng = random.Random(SEED)
    first, more = rng.randint(5, 60), rng.randint(5, 40)
    execute(
        mariadb_db,
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40))",
        "INSERT INTO items VALUES " + ", ".join(f"({i}, 'item{i}')" for i in range(1, first + 1)),
    )
    source_table = f"{mariadb_db.database}.items"
    job = mysql_delta_job(tmp_path, "shop", connector_props(mariadb_db), {source_table: "keys: [id], target: items"})
    _with_metrics_port(job)
    prefix = connector_props(mariadb_db)["topic.prefix"]
    dbz = {"plugin": "mysql", "name": prefix}
    proc = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
    try:
        url: list[str] = []

        def announced() -> bool:
            url[:] = re.findall(r"Prometheus metrics on (http://\S+/metrics)", proc.output())
            return bool(url)

        wait_for(announced, 120, "the metrics port in the log", proc)
        sink = {"target": "delta", "table": "items"}
        with httpx.Client(timeout=10) as http:
            text, s = scrape_until(
                http,
                # A batch's rows are counted as each table is applied, the batch and its lag once the
                # whole micro-batch is done: wait for both, or a scrape between them sees batches 0.
                lambda s: (
                    value(s, "cdc_sink_rows_applied_total", **sink) == first
                    and (value(s, "cdc_sink_batches_total", **sink) or 0) >= 1
                ),
                f"the snapshot's {first} rows applied (seed {SEED})",
                timeout=240,
                path=url[0],
            )
            assert value(s, "debezium_metrics_RowsScanned", **dbz, context="snapshot", table=source_table) == first
            assert value(s, "debezium_metrics_SnapshotCompleted", **dbz, context="snapshot") == 1
            assert value(s, "kafka_connect_connector_task_status", connector="shop", task="0", status="running") == 1
            written = value(s, "kafka_connect_source_task_source_record_write_total", connector="shop", task="0")
            assert written is not None and written >= first, text
            batches = value(s, "cdc_sink_batches_total", **sink)
            assert batches is not None and batches >= 1, text
            assert value(s, "cdc_sink_rows_rejected_total", **sink) == 0, text
            lag = value(s, "cdc_sink_lag_ms", **sink)
            assert lag is not None and lag >= 0, text
            seen = value(s, "debezium_metrics_TotalNumberOfEventsSeen", **dbz, context="streaming") or 0
            assert {
                "cdc_sink_batches_total",
                "cdc_sink_rows_applied_total",
                "cdc_sink_rows_rejected_total",
                "cdc_sink_lag_ms",
                "kafka_connect_worker_task_count",
                "debezium_metrics_QueueRemainingCapacity",
            } <= names(s), text

            # Streaming: new keys add rows applied; updates of existing keys apply as rows too.
            updated = rng.sample(range(1, first + 1), rng.randint(1, first))
            execute(
                mariadb_db,
                "INSERT INTO items VALUES " + ", ".join(f"({i}, 'new{i}')" for i in range(first + 1, first + more + 1)),
                f"UPDATE items SET name = 'changed' WHERE id IN ({', '.join(map(str, updated))})",
            )
            events = more + len(updated)
            text, s = scrape_until(
                http,
                lambda s: (
                    (value(s, "cdc_sink_rows_applied_total", **sink) or 0) >= first + more + len(updated)
                    and (value(s, "cdc_sink_batches_total", **sink) or 0) > batches
                    and (value(s, "debezium_metrics_TotalNumberOfEventsSeen", **dbz, context="streaming") or 0)
                    >= seen + events
                ),
                f"{more} inserts and {len(updated)} updates streamed and applied (seed {SEED})",
                timeout=120,
                path=url[0],
            )
            assert value(s, "cdc_sink_rows_applied_total", **sink) == first + more + len(updated), (SEED, text)
            assert (value(s, "cdc_sink_batches_total", **sink) or 0) > batches, text
            behind = value(s, "debezium_metrics_MilliSecondsBehindSource", **dbz, context="streaming")
            assert behind is not None and behind >= 0, text
            assert (value(s, "cdc_sink_lag_ms", **sink) or -1) >= 0, text
        assert proc.terminate(60) == 0, proc.output()[-3000:]
    finally:
        if proc.alive():
            proc.kill9()
    out = (tmp_path / "run.log").read_text(errors="replace")
    assert "┏" not in out and " rows/s │" not in out, "the live view is for terminals only"


@pytest.mark.e2e
def test_a_metrics_port_out_of_range_is_one_line_at_its_key(tmp_path: Path) -> None:
    port = random.Random(SEED).choice([-1, 65536, 10**6])
    job = tmp_path / "job.yaml"
    job.write_text(
        f"name: shop\nsource: {{connector.class: mysql, database.hostname: h, topic.prefix: p}}\n"
        f"transport: {{type: embedded, state.dir: {tmp_path / 'state'}, metrics.port: {port}}}\n"
        f"sink: {{type: delta, path: {tmp_path / 'lake'}}}\n"
    )
    res = run_cdc("validate", "--offline", str(job))
    assert res.returncode == 2, res.stdout + res.stderr
    problems = [line for line in (res.stdout + res.stderr).splitlines() if "metrics.port" in line]
    assert len(problems) == 1, res.stdout + res.stderr
    assert "transport['metrics.port']" in problems[0] and "use a port from 1 to 65535" in problems[0], problems


def test_a_metrics_port_in_use_stops_the_run_in_one_line(tmp_path: Path, mariadb_db) -> None:
    """Before the source starts: one line naming metrics.port and the fix, exit 2, nothing written."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        job = mysql_delta_job(tmp_path, "shop", connector_props(mariadb_db), {f"{mariadb_db.database}.t": "keys: [id]"})
        job.write_text(job.read_text().replace("  type: embedded\n", f"  type: embedded\n  metrics.port: {port}\n", 1))
        res = run_cdc("run", str(job), timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert f"metrics.port: cannot listen on 127.0.0.1:{port}" in last and "free port" in last, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "lake").exists()

"""What `cdc run` shows people (issue 24): positions as `file:pos` / LSNs, not raw tuples or dicts,
and none of Spark's log4j banner, start-up warnings or stage bars unless --verbose."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from cdc.jobs.run import _quiet_spark_conf, position_text
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.support.proc import run_cdc

SEED = random.randrange(2**32)


def test_positions_read_as_people_write_them() -> None:
    rng = random.Random(SEED)
    for _ in range(200):
        n, pos = rng.randrange(1, 10**6), rng.randrange(4, 2**32)
        offset = {"file": f"mysql-bin.{n:06d}", "pos": pos, "row": 1, "event": 2}
        assert position_text("mysql", offset) == f"mysql-bin.{n:06d}:{pos}", SEED
        lsn = rng.randrange(0, 2**64)
        expected = f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"
        assert position_text("postgres", lsn) == expected, SEED
        assert position_text("postgres", {"lsn": lsn, "txId": 5}) == expected, SEED
    assert position_text("mysql", {"file": "mysql-bin.000001", "pos": 4, "snapshot": True}).endswith("(snapshot)")
    assert position_text("mysql", {}) == position_text("postgres", None) == "none yet"


def test_a_job_own_spark_logging_settings_win() -> None:
    assert "spark.driver.extraJavaOptions" in _quiet_spark_conf({})
    assert "spark.driver.extraJavaOptions" not in _quiet_spark_conf({"spark.driver.extraJavaOptions": "-Dx=1"})


@pytest.mark.slow
def test_run_output_has_readable_positions_and_no_spark_chatter(tmp_path: Path, mariadb_db) -> None:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40))")
        cur.execute("INSERT INTO items VALUES " + ", ".join(f"({i}, 'item{i}')" for i in range(1, 301)))
    tables = {f"{mariadb_db.database}.items": "keys: [id], target: items"}
    job = mysql_delta_job(tmp_path, "shop", connector_props(mariadb_db), tables)
    res = run_cdc("run", str(job), "--until-caught-up", timeout=400, own_jvm=True)  # asserts on the JVM's output
    assert res.returncode == 0, res.stderr[-3000:]
    err = res.stderr
    assert re.search(r"\[shop\] source position at start: mysql-bin\.\d{6}:\d+ on ", err), err
    assert "caught up" in err
    for chatter in ("Setting default log level", "log4j2-defaults", "NativeCodeLoader", "[Stage ", "INFO SparkContext"):
        assert chatter not in err, (chatter, err[-3000:])
    assert not re.search(r"\(\d+, \d+\)|\{'file'", err), err


def test_snapshot_progress_lines_show_rate_and_eta(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from cdc_debezium.progress import SnapshotProgress

    rng = random.Random(SEED)
    estimate = rng.randrange(10_000, 1_000_000)
    progress = SnapshotProgress(logging.getLogger("test.snapshot"), interval_s=0.0)
    with caplog.at_level(logging.INFO, "test.snapshot"):
        progress.start_table("shop.big", estimate)
        progress.tables["shop.big"].started -= 10.0  # as if it had run for 10 s
        for _ in range(2048):
            progress.row("shop.big")
        progress.finish_table("shop.big")
    during = [r.getMessage() for r in caplog.records if " of about " in r.getMessage()]
    assert during, caplog.text
    rate = re.search(r"(\d[\d,]*) rows/s, about (\d+)m(\d\d)s left$", during[-1])
    assert rate is not None, during[-1]
    per_s = int(rate.group(1).replace(",", ""))
    assert 150 <= per_s <= 205, (SEED, during[-1])  # 2048 rows in a little over 10 s
    left = int(rate.group(2)) * 60 + int(rate.group(3))
    assert abs(left - (estimate - 2048) / per_s) <= max(2, 0.05 * left), (SEED, during[-1])
    assert re.search(r"done: 2048 rows in 1\d\.\d s \(", caplog.records[-1].getMessage())

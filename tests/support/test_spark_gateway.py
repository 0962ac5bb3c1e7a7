"""The warm Spark JVM the `cdc run`s of a test process share (tests/support/spark_gateway.py).

A run that leaves a session or a streaming query behind in the shared JVM would break every
later run on that worker, so the clean-up between runs is tested here against a real JVM."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.spark_gateway import SharedSparkJvm, eligible

REPO = Path(__file__).resolve().parents[2]


def _job(tmp_path: Path, spark: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(f"name: j\nsource: {{}}\n{spark}\n")
    return str(path)


def test_only_runs_whose_jvm_is_not_under_test_attach(tmp_path: Path) -> None:
    plain = _job(tmp_path, "spark:\n  master: local[2]")
    assert eligible(("run", plain, "--until-caught-up"))
    assert not eligible(("run", plain, "--verbose"))  # another log4j setup
    assert not eligible(("validate", plain))
    assert not eligible(("run", _job(tmp_path, "spark:\n  conf: {spark.driver.memory: 2g}")))  # JVM settings
    assert not eligible(("run", _job(tmp_path, "spark:\n  master: spark://h:7077")))
    assert not eligible(("run", str(tmp_path / "missing.yaml")))
    assert eligible(("run", _job(tmp_path, "")))  # no spark section: local[2]


# A driver that starts a streaming query in the shared JVM and dies without stopping anything,
# as a `cdc run` killed at its test's timeout would.
_ABANDON = textwrap.dedent(
    """
    import os
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    q = spark.readStream.format("rate").load().writeStream.format("noop").start()
    q.processAllAvailable()
    print("started", spark.sparkContext.applicationId, flush=True)
    os._exit(0)
    """
)

_ATTACH = textwrap.dedent(
    """
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    print("rows", spark.range(5).count(), len(spark.streams.active), spark.sparkContext.applicationId, flush=True)
    spark.stop()
    """
)


@pytest.mark.e2e
def test_what_a_dead_run_left_running_is_stopped_before_the_next_run(tmp_path: Path) -> None:
    jvm = SharedSparkJvm(tmp_path / "jvm.log")
    try:
        attach = jvm.acquire()
        assert attach is not None, (tmp_path / "jvm.log").read_text()
        assert jvm.acquire() is None  # one run at a time: a second one gets a JVM of its own
        env = {**_env(), **attach}
        first = subprocess.run([sys.executable, "-c", _ABANDON], env=env, capture_output=True, text=True, timeout=180)
        assert first.stdout.startswith("started"), first.stderr[-3000:]
        pid = jvm._gateway.proc.pid
        jvm.release()

        attach = jvm.acquire()
        assert attach is not None
        second = subprocess.run(
            [sys.executable, "-c", _ATTACH], env={**_env(), **attach}, capture_output=True, text=True, timeout=180
        )
        jvm.release()
        assert second.returncode == 0, second.stderr[-3000:]
        rows, count, active, app = second.stdout.split()
        assert (rows, count, active) == ("rows", "5", "0")  # no query of the dead run still active
        assert app != first.stdout.split()[1]  # a context of its own
        assert jvm._gateway.proc.pid == pid  # in the same JVM
    finally:
        jvm.close()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env["PYSPARK_PYTHON"] = sys.executable
    return env

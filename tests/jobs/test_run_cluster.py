"""The same job on Kafka and a Spark standalone cluster: only `transport` and `spark.master` change.

MariaDB → MySQL connector → Kafka-protocol broker (Tansu) → Spark executors in their own
JVM and Python workers → Delta. The product's promise is that a job outgrows one machine
by changing these two sections and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.jobs.test_run import _lake_rows, _source_rows
from tests.mysql.harness import connector_props
from tests.rig import spark_cluster
from tests.support.proc import run_cdc

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[spark_cluster.SparkCluster]:
    with spark_cluster.provide() as c:
        yield c


def _job(tmp_path: Path, mariadb_db, bootstrap: str, master: str) -> Path:
    props = connector_props(mariadb_db)
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items())
    unique = tmp_path.name
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: shop-{unique}
source:
{source}
transport:
  type: kafka
  bootstrap.servers: {bootstrap}
  state.dir: {tmp_path / "state"}
  topic.partitions: 2
sink:
  type: delta
  path: {tmp_path / "lake"}
  tables:
    {mariadb_db.database}.items: {{keys: [id], target: items, partition.by: [kind]}}
    {mariadb_db.database}.parts: {{keys: [id], target: parts}}
spark:
  master: {master}
"""
    )
    return job


def test_the_job_runs_on_kafka_and_a_spark_cluster(tmp_path: Path, mariadb_db, tansu, cluster) -> None:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2), kind CHAR(1))"
        )
        cur.execute(
            "INSERT INTO items VALUES " + ", ".join(f"({i}, 'item{i}', {i}.25, '{'abc'[i % 3]}')" for i in range(1, 51))
        )
        cur.execute("CREATE TABLE parts (id INT PRIMARY KEY, label VARCHAR(40))")
        cur.execute("INSERT INTO parts VALUES " + ", ".join(f"({i}, 'part{i}')" for i in range(1, 201)))
        cur.execute("DELETE FROM parts WHERE id % 7 = 0")
        cur.execute("UPDATE parts SET label = CONCAT(label, '-v2') WHERE id % 3 = 0")
    job = _job(tmp_path, mariadb_db, tansu.bootstrap, cluster.master)
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _lake_rows(tmp_path, mariadb_db.database) == _source_rows(mariadb_db)
    # Both are applied by the executors' tasks: the bucketed layout (items: partition.by first), read
    # with deltalake.
    parts = DeltaTable(str(tmp_path / "lake" / "parts"))
    assert parts.metadata().partition_columns == ["__bucket"]
    items = DeltaTable(str(tmp_path / "lake" / "items"))
    assert items.metadata().partition_columns == ["kind", "__bucket"]
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, label FROM parts")
        expected = dict(cur.fetchall())
    assert {r["id"]: r["label"] for r in parts.to_pyarrow_table().to_pylist()} == expected
    # The sink ran on the cluster (the master lists the application), not in a local fallback.
    assert f"cdc-shop-{tmp_path.name}" in cluster.application_names()
    # Resuming from stored offsets and the checkpoint is the same code as on one machine
    # (tests/jobs/test_run.py); one run here keeps the suite's time down.

"""A Spark driver process for the crash test: `python -m tests.spark.crash_driver STATE LAKE CKPT MARKS MODE [CRASH]`.

MODE=stream runs small micro-batches until killed, touching MARKS/started-<batch> as each
batch begins; MODE=catchup restarts from the checkpoint with Trigger.AvailableNow.
CRASH=<point>:<batch> makes the driver die (os._exit, as a kill would) inside the parallel
Delta apply's commit protocol (lake_parallel.py) of that batch: `before-commit` after the
tasks wrote their files and before any commit, `after-commit` right after the first table's
commit (its tombstones not yet committed).

CRASH_TARGET=iceberg in the environment applies to Iceberg (a SQLite SQL catalog in LAKE,
namespace `lake`) instead of Delta at LAKE.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from cdc_spark.apply import ChangeApplier
from cdc_spark.source import register
from tests.spark.conftest import spark_builder


def crash_at(spec: str) -> None:
    """Patch the commit of the parallel Delta apply to exit at `spec` (<point>:<batch>)."""
    from cdc_spark.apply import lake_parallel

    point, batch = spec.split(":")
    original = lake_parallel.ParallelLake._commit_one

    def commit_one(self: Any, lay: Any, rows: Any, batch_id: int) -> int:
        if batch_id == int(batch) and point == "before-commit":
            os._exit(137)
        done = original(self, lay, rows, batch_id)
        if batch_id == int(batch) and point == "after-commit":
            os._exit(137)
        return done

    lake_parallel.ParallelLake._commit_one = commit_one  # type: ignore[method-assign]


def sink_config(lake: str) -> dict[str, Any]:
    """The sink's settings for CRASH_TARGET (delta by default) with the lake at `lake`."""
    if os.environ.get("CRASH_TARGET") == "iceberg":
        Path(lake, "wh").mkdir(parents=True, exist_ok=True)
        catalog = {"uri": f"sqlite:///{lake}/catalog.db", "warehouse": f"file://{lake}/wh"}
        return {"target": "iceberg", "catalog": catalog, "namespace": "lake"}
    return {"target": "delta", "path": lake}


def main(state: str, lake: str, ckpt: str, marks: str, mode: str, crash: str = "") -> None:
    if crash:
        crash_at(crash)
    spark = spark_builder().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    applier = ChangeApplier(sink_config(lake))

    def apply(df: Any, batch_id: int) -> None:
        Path(marks, f"started-{batch_id}").touch()
        applier(df, batch_id)

    options = {"state.dir": state, "topics": "shop.inv.items"}
    if mode == "stream":
        options["maxEventsPerTrigger"] = "40"  # many small batches, so the kill lands mid-stream
    raw = spark.readStream.format("cdc").options(**options).load()
    writer = raw.writeStream.foreachBatch(apply).option("checkpointLocation", ckpt)
    if mode == "catchup":
        writer.trigger(availableNow=True).start().awaitTermination()
    else:
        writer.trigger(processingTime="0 seconds").start().awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:7])

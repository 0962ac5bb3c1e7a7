"""A Spark driver process for the crash test: `python -m tests.spark.crash_driver STATE LAKE CKPT MARKS MODE`.

MODE=stream runs small micro-batches until killed, touching MARKS/started-<batch> as each
batch begins; MODE=catchup restarts from the checkpoint with Trigger.AvailableNow.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cdc_spark.apply import ChangeApplier
from cdc_spark.source import register
from tests.spark.conftest import spark_builder


def main(state: str, lake: str, ckpt: str, marks: str, mode: str) -> None:
    spark = spark_builder().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    applier = ChangeApplier({"target": "delta", "path": lake})

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
    main(*sys.argv[1:6])

"""A micro-batch whose winners exceed what the driver collects stops with advice, not a JVM
stack trace; admission control (maxEventsPerTrigger) keeps the batches under the limit.

The session fixture sets spark.driver.maxResultSize=16m, so ~25 MB of winners trip it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException

from cdc.jobs.run import sink_failure
from cdc.log.embedded import EmbeddedLog
from cdc_spark.pipeline import start_query
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows

ROWS = 12_000


def _wide_rows(tmp_path: Path) -> dict[str, str]:
    """ROWS creates of 2 KB rows (24 MB) in the embedded log; the stream's source options."""
    t = Table("shop.inv.wide")
    state = tmp_path / "state"
    with EmbeddedLog(state) as log:
        events = [t.event("c", k, {"name": f"{k:05d}" + "x" * 2000, "qty": k}, k + 1) for k in range(ROWS)]
        produce(log, t.topic, events, partitions=2)
    return {"state.dir": str(state), "topics": t.topic}


def test_too_large_batch_stops_with_advice_and_bounded_batches_apply(spark, tmp_path: Path) -> None:
    source = _wide_rows(tmp_path)
    # The driver's MERGE (apply.on=driver) collects each batch's winners to the driver.
    sink = {"target": "delta", "path": str(tmp_path / "lake"), "apply.on": "driver"}

    q = start_query(spark, source, sink, str(tmp_path / "ck1"), available_now=True)
    with pytest.raises(StreamingQueryException):
        q.awaitTermination()
    message = sink_failure(q.exception())
    assert message.startswith("micro-batch 0 is too large to apply"), message
    assert "spark.driver.maxResultSize (16.0 MiB)" in message  # Spark's own words, kept
    assert "maxEventsPerTrigger" in message and "Traceback" not in message and "\n" not in message

    q = start_query(spark, {**source, "maxEventsPerTrigger": "3000"}, sink, str(tmp_path / "ck2"), available_now=True)
    q.awaitTermination()
    assert [p["numInputRows"] for p in q.recentProgress] == [3000] * 4
    rows = delta_rows(str(tmp_path / "lake" / "shop_inv_wide"))
    assert sorted(r["qty"] for r in rows) == list(range(ROWS))


def test_the_same_batch_applies_in_one_go_on_the_executors(spark, tmp_path: Path) -> None:
    """What stopped the driver's MERGE above (the batch's rows exceed spark.driver.maxResultSize)
    applies in one micro-batch when Spark's tasks apply it: only file actions reach the driver."""
    source = _wide_rows(tmp_path)
    sink = {"target": "delta", "path": str(tmp_path / "lake")}
    q = start_query(spark, source, sink, str(tmp_path / "ck"), available_now=True)
    q.awaitTermination()
    assert q.exception() is None
    assert [p["numInputRows"] for p in q.recentProgress] == [ROWS]
    rows = delta_rows(str(tmp_path / "lake" / "shop_inv_wide"))
    assert sorted(r["qty"] for r in rows) == list(range(ROWS))

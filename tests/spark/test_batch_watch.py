"""`cdc run`'s watch over the sink query (cdc/jobs/batch_watch.py), on real streaming queries:
a micro-batch that does not finish stops the run with advice; a stream of quick batches never
trips it, however long it runs."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cdc.api.errors import ConnectException
from cdc.jobs.batch_watch import BatchWatch
from cdc.log.embedded import EmbeddedLog
from tests.spark.events import Table, produce

TOPIC = "shop.inv.items"


def _query(spark: Any, tmp_path: Path, apply: Any, events: int) -> Any:
    from cdc_spark.source import register

    register(spark)
    t = Table(TOPIC)
    state = tmp_path / "state"
    with EmbeddedLog(state) as log:
        produce(log, TOPIC, [t.event("c", k, {"name": "a"}, k + 1) for k in range(events)])
    raw = (
        spark.readStream.format("cdc")
        .options(**{"state.dir": str(state), "topics": TOPIC, "maxEventsPerTrigger": "1"})
        .load()
    )
    return raw.writeStream.foreachBatch(apply).option("checkpointLocation", str(tmp_path / "ck")).start()


def test_a_batch_that_never_finishes_stops_the_run_with_advice(spark: Any, tmp_path: Path) -> None:
    release = threading.Event()
    query = _query(spark, tmp_path, lambda df, batch_id: release.wait(60), events=1)
    watch = BatchWatch(timeout_ms=1500)
    try:
        deadline = time.monotonic() + 60
        with pytest.raises(ConnectException, match=r"micro-batch 0 has run for \d+ s without finishing") as info:
            while time.monotonic() < deadline:
                watch.check(query)
                time.sleep(0.1)
        assert "spark.batchTimeoutMs=1500" in str(info.value) and "Fix:" in str(info.value)
    finally:
        release.set()
        query.stop()


def test_quick_batches_never_trip_it(spark: Any, tmp_path: Path) -> None:
    """Each batch takes 0.4 s and the limit is 1.5 s; the stream runs for longer than that."""
    query = _query(spark, tmp_path, lambda df, batch_id: time.sleep(0.4), events=40)
    watch = BatchWatch(timeout_ms=1500)
    try:
        deadline = time.monotonic() + 60
        while query.lastProgress is None:  # the first batch starts Python workers: not what is timed here
            assert time.monotonic() < deadline
            time.sleep(0.1)
        first = query.lastProgress["batchId"]
        started = time.monotonic()
        while time.monotonic() - started < 5:
            watch.check(query)
            time.sleep(0.1)
        assert query.lastProgress["batchId"] >= first + 3  # several batches ran meanwhile
    finally:
        query.stop()


def test_zero_turns_it_off() -> None:
    class Never:  # never consulted: a zero timeout returns before reading the query
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(name)

    BatchWatch(timeout_ms=0).check(Never())

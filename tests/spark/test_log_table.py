"""The `table` field of JSON log lines (issue 24): the Spark sink's per-table apply lines and the
connectors' snapshot progress lines name their table, through the real formatter
(cdc.runtime.logging_context, log.format=json)."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdc.runtime import logging_context
from cdc_debezium.progress import SnapshotProgress
from cdc_spark.apply import ChangeApplier
from tests.spark.events import Table
from tests.spark.helpers import raw_frame


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The root handler in log.format=json writing to a buffer; the previous handlers and levels after."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    loggers = {name: logging.getLogger(name).level for name in ("cdc_spark", "cdc_debezium")}
    buf = io.StringIO()
    logging_context.configure(None, "json", stream=buf)
    for name in loggers:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield buf
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in handlers:
            root.addHandler(h)
        root.setLevel(level)
        for name, old in loggers.items():
            logging.getLogger(name).setLevel(old)


def _lines(buf: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buf.getvalue().splitlines() if line.startswith("{")]


def test_the_sinks_per_table_lines_name_their_table(spark: Any, tmp_path: Path, json_log: io.StringIO) -> None:
    orders, history = Table("shop.inv.orders"), Table("shop.inv.history")
    applier = ChangeApplier({"target": "delta", "path": str(tmp_path), "table.modes": {"shop.inv.history": "scd2"}})
    frame = raw_frame(spark, orders.topic, [orders.event("c", 1, {"name": "a"}, 1)]).union(
        raw_frame(spark, history.topic, [history.event("c", 1, {"name": "b"}, 2)], first_offset=1)
    )
    applier(frame, 0)
    lines = [r for r in _lines(json_log) if r["logger"] == "cdc_spark.apply.engine"]
    tables = {r.get("table") for r in lines}
    assert {"shop_inv_orders", "shop_inv_history"} <= tables, lines
    for r in lines:
        if r.get("table"):
            assert r["table"] in r["message"]  # the field is the table the line is about
    batch = [r["message"] for r in lines if "applied to delta" in r["message"] and "table" not in r]
    assert batch, lines  # a batch line: no table
    # ... saying where the batch's time went: the history table's collect to the driver, the
    # orders table's Spark tasks and commit (apply.on=executors)
    assert re.search(r"\(events 1, collect [\d.]+s, .*tasks [\d.]+s, commit [\d.]+s, files 1\)", batch[0]), batch


def test_the_driver_merge_says_where_its_time_went(spark: Any, tmp_path: Path, json_log: io.StringIO) -> None:
    orders = Table("shop.inv.orders")
    applier = ChangeApplier({"target": "delta", "path": str(tmp_path), "apply.on": "driver"})
    frame = raw_frame(spark, orders.topic, [orders.event("c", 1, {"name": "a"}, 1), orders.event("c", 2, {}, 2)])
    applier(frame, 0)
    lines = [r for r in _lines(json_log) if r["logger"] == "cdc_spark.apply.engine"]
    batch = [r["message"] for r in lines if "applied to delta" in r["message"] and "table" not in r]
    assert re.search(r"\(events 2, collect [\d.]+s, latest [\d.]+s, flatten [\d.]+s, write [\d.]+s\)", batch[0]), batch


def test_snapshot_progress_lines_name_their_table(json_log: io.StringIO) -> None:
    progress = SnapshotProgress(logging.getLogger("cdc_debezium.snapshot"), interval_s=0)
    progress.begin(2)
    for table, rows in (("shop.customers", 2048), ("shop.orders", 3)):
        progress.start_table(table, rows)
        for _ in range(rows):
            progress.row(table)
        progress.finish_table(table)
    lines = [r for r in _lines(json_log) if r["logger"] == "cdc_debezium.snapshot"]
    assert [(r["table"], r["message"].split(":")[0].split(" done")[0]) for r in lines] == [
        ("shop.customers", "Snapshot of shop.customers started"),
        ("shop.customers", "Snapshot of shop.customers"),
        ("shop.customers", "Snapshot of shop.customers"),
        ("shop.customers", "Snapshot of shop.customers"),
        ("shop.orders", "Snapshot of shop.orders started"),
        ("shop.orders", "Snapshot of shop.orders"),
    ]

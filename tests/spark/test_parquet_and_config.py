"""The Parquet audit changelog (every event, native Spark) and the sink's config errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc.log.embedded import EmbeddedLog
from cdc_spark.apply import SinkConfig, SinkConfigError
from cdc_spark.decode import sequence
from tests.spark.events import Table, produce
from tests.spark.helpers import run_available_now


def test_changelog_keeps_every_event_once_even_when_a_batch_is_replayed(spark: Any, tmp_path: Path) -> None:
    t = Table("shop.inv.items")
    state = str(tmp_path / "state")
    with EmbeddedLog(state) as log:
        produce(
            log,
            t.topic,
            [t.event("c", 1, {"name": "a"}, 1), t.event("u", 1, {"name": "b"}, 2), t.event("d", 1, None, 3)],
        )
    path = str(tmp_path / "changelog")
    run_available_now(
        spark, {"state.dir": state, "topics": t.topic}, {"target": "parquet", "path": path}, str(tmp_path / "ckpt")
    )
    rows = sorted(spark.read.parquet(path).collect(), key=lambda r: bytes(r["__seq"]))
    assert [r["__op"] for r in rows] == ["c", "u", "d"]
    assert [sequence.unpack(bytes(r["__seq"]))[1] for r in rows] == [1, 2, 3]
    assert {r["topic"] for r in rows} == {t.topic} and {r["batch_id"] for r in rows} == {0}


@pytest.mark.parametrize(
    ("conf", "needle"),
    [
        ({"target": "hive"}, "choose one of delta, postgres, iceberg, parquet"),
        ({"target": "delta"}, "needs path"),
        ({"target": "postgres"}, "needs dsn"),
        ({"target": "iceberg"}, "needs catalog"),
        ({"target": "delta", "path": "/x", "delete.mode": "gone"}, "use hard or soft"),
        ({"target": "delta", "path": "/x", "errors.tolerance": "all"}, "errors.deadletterqueue.path"),
        ({"target": "postgres", "dsn": "x", "mode": "scd2"}, r"scd2 \(history\) with delta"),
    ],
)
def test_config_errors_say_what_to_set(conf: dict[str, str], needle: str) -> None:
    with pytest.raises(SinkConfigError, match=needle):
        SinkConfig.parse(conf)


def test_table_names_follow_the_format() -> None:
    assert SinkConfig.parse({"target": "delta", "path": "/x"}).table_for("srv.db.orders") == "srv_db_orders"
    conf = SinkConfig.parse({"target": "delta", "path": "/x", "table.name.format": "raw_${table}"})
    assert conf.table_for("srv.db.orders") == "raw_orders"

"""The `cdc` streaming source: partition parallelism, topic discovery, admission control,
and both transports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc.log.embedded import EmbeddedLog
from cdc.log.kafka import KafkaLog
from cdc_spark.source import SourceOptionError, SourceOptions
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows, run_available_now, visible


def _tasks_per_stage(spark: Any, run_id: str) -> list[int]:
    tracker = spark.sparkContext.statusTracker()
    counts = []
    for job in sorted(tracker.getJobIdsForGroup(run_id)):
        info = tracker.getJobInfo(job)
        for stage in sorted(info.stageIds if info else []):
            s = tracker.getStageInfo(stage)
            if s is not None:
                counts.append(s.numTasks)
    return counts


def test_n_topic_partitions_run_n_tasks_per_micro_batch(spark: Any, tmp_path: Path) -> None:
    t = Table("shop.inv.items")
    state = str(tmp_path / "state")
    with EmbeddedLog(state) as log:
        for p in range(4):
            produce(
                log,
                t.topic,
                [t.event("c", p * 100 + i, {"name": "x"}, p * 100 + i) for i in range(5)],
                partitions=4,
                partition=p,
            )
    q = run_available_now(
        spark,
        {"state.dir": state, "topics": t.topic},
        {"target": "delta", "path": str(tmp_path / "l")},
        str(tmp_path / "ckpt"),
    )
    counts = _tasks_per_stage(spark, str(q.runId))
    # The first stage of the batch reads (and decodes) the source: one task per topic partition.
    assert counts and counts[0] == 4, counts
    assert len(visible(delta_rows(str(tmp_path / "l" / "shop_inv_items")))) == 20


def test_regex_picks_up_new_topics_and_max_events_bounds_each_batch(spark: Any, tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    a, b = Table("srv.db.a"), Table("srv.db.b")
    with EmbeddedLog(state) as log:
        produce(log, a.topic, [a.event("c", i, {"name": "a"}, i) for i in range(1, 8)], partitions=2)
        produce(log, "other.topic", [(b"1", b"not a change, and not matched")])
    source = {"state.dir": state, "topic.pattern": r"srv\.db\..*", "maxEventsPerTrigger": "3"}
    sink = {"target": "delta", "path": str(tmp_path / "lake")}
    q = run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sizes and max(sizes) <= 3 and sum(sizes) == 7
    with EmbeddedLog(state) as log:  # a new table's topic appears
        produce(log, b.topic, [b.event("c", 1, {"name": "b"}, 100)])
    run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    assert len(visible(delta_rows(str(tmp_path / "lake" / "srv_db_a")))) == 7
    assert visible(delta_rows(str(tmp_path / "lake" / "srv_db_b"))) == {1: (1, "b", None)}


def test_reads_a_kafka_protocol_broker(spark: Any, tansu: Any, tmp_path: Path) -> None:
    t = Table(f"k.db.items{tmp_path.name[-6:].replace('_', '')}".lower())
    tansu.create_topic(t.topic, partitions=2)
    log = KafkaLog(tansu.bootstrap)
    try:
        produce(
            log,
            t.topic,
            [t.event("c", i, {"name": "k", "qty": i}, i) for i in range(1, 11)] + [t.event("d", 3, None, 20)],
            partitions=2,
        )
    finally:
        log.close()
    # Tansu's high watermark is the last batch's base offset + 1: have the source read past it.
    source = {"transport": "kafka", "bootstrap.servers": tansu.bootstrap, "topics": t.topic, "probeEndOffsets": "true"}
    run_available_now(spark, source, {"target": "delta", "path": str(tmp_path / "lake")}, str(tmp_path / "ckpt"))
    rows = visible(delta_rows(str(tmp_path / "lake" / t.topic.replace(".", "_"))))
    assert sorted(rows) == [i for i in range(1, 11) if i != 3]


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"state.dir": "/x"}, "exactly one of"),
        ({"state.dir": "/x", "topics": "a", "topic.pattern": "b"}, "exactly one of"),
        ({"topics": "a"}, "state.dir"),
        ({"transport": "kafka", "topics": "a"}, "bootstrap.servers"),
        ({"state.dir": "/x", "topic.pattern": "("}, "not a valid regex"),
        ({"state.dir": "/x", "topics": "a", "maxEventsPerTrigger": "0"}, "positive"),
    ],
)
def test_option_errors_say_what_to_set(options: dict[str, str], needle: str) -> None:
    with pytest.raises(SourceOptionError, match=needle):
        SourceOptions.parse(options)

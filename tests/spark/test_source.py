"""The `cdc` streaming source: partition parallelism, topic discovery, admission control,
and both transports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc.log.embedded import EmbeddedLog
from cdc.log.kafka import KafkaLog
from cdc_spark.decode import DECODED_SCHEMA, decode_batches
from cdc_spark.source import CdcDataSource, SourceOptionError, SourceOptions
from cdc_spark.source.reader import TopicPartitionRange, read_range
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


def test_records_deleted_before_they_were_read_stop_the_query_unless_told_otherwise(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import StreamingQueryException

    from cdc.jobs.run import sink_failure
    from cdc.log import TopicPartition

    t = Table("shop.inv.items")
    state = str(tmp_path / "state")
    with EmbeddedLog(state) as log:
        produce(log, t.topic, [t.event("c", i, {"name": "a"}, i) for i in range(1, 6)])  # offsets 0-4
    source = {"state.dir": state, "topics": t.topic}
    sink = {"target": "delta", "path": str(tmp_path / "lake")}
    run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    with EmbeddedLog(state) as log:
        produce(log, t.topic, [t.event("c", i, {"name": "b"}, i) for i in range(6, 11)])  # offsets 5-9
        log.delete_records({TopicPartition(t.topic, 0): 7})  # retention took 5 and 6 before the sink ran
    with pytest.raises(StreamingQueryException) as failed:
        run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    message = sink_failure(failed.value)
    assert message.startswith(f"{t.topic}-0: offsets 5 to 6 were deleted from the log"), message
    assert "failOnDataLoss=false" in message
    assert sorted(visible(delta_rows(str(tmp_path / "lake" / "shop_inv_items")))) == [1, 2, 3, 4, 5]
    # As Spark's Kafka source: failOnDataLoss=false skips what is gone and goes on.
    run_available_now(spark, {**source, "failOnDataLoss": "false"}, sink, str(tmp_path / "ckpt"))
    assert sorted(visible(delta_rows(str(tmp_path / "lake" / "shop_inv_items")))) == [1, 2, 3, 4, 5, 8, 9, 10]


def test_a_checkpoint_ahead_of_the_log_stops_the_query_unless_told_otherwise(spark: Any, tmp_path: Path) -> None:
    """A checkpoint reused against another log (a new state.dir, a re-created topic) is ahead of
    its end: skipping silently would lose the new log's first records (Spark's Kafka source
    reports "offset was changed")."""
    import shutil

    from pyspark.errors import StreamingQueryException

    from cdc.jobs.run import sink_failure

    t = Table("shop.inv.items")
    state = str(tmp_path / "state")
    with EmbeddedLog(state) as log:
        produce(log, t.topic, [t.event("c", i, {"name": "a"}, i) for i in range(1, 7)])  # offsets 0-5
    source = {"state.dir": state, "topics": t.topic}
    sink = {"target": "delta", "path": str(tmp_path / "lake")}
    run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    shutil.rmtree(state)  # the log starts over; the checkpoint stays at offset 6
    with EmbeddedLog(state) as log:
        produce(log, t.topic, [t.event("u", i, {"name": "new"}, 100 + i) for i in range(1, 4)])  # offsets 0-2
    with pytest.raises(StreamingQueryException) as failed:
        run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    message = sink_failure(failed.value)
    assert message.startswith(f"{t.topic}-0: the log ends at offset 3, but this query's checkpoint is already at 6")
    assert "failOnDataLoss=false" in message
    # failOnDataLoss=false: reported, then read on from the log's end, as Spark's Kafka source.
    run_available_now(spark, {**source, "failOnDataLoss": "false"}, sink, str(tmp_path / "ckpt"))
    with EmbeddedLog(state) as log:
        produce(log, t.topic, [t.event("u", 1, {"name": "later"}, 200)])  # offset 3
    run_available_now(spark, {**source, "failOnDataLoss": "false"}, sink, str(tmp_path / "ckpt"))
    rows = visible(delta_rows(str(tmp_path / "lake" / "shop_inv_items")))
    assert rows[1] == (1, "later", None) and rows[2] == (2, "a", None)


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
            headers=[("h", b"\x00v")],
        )
    finally:
        log.close()
    # Tansu's high watermark is the last batch's base offset + 1: have the source read past it.
    source = {
        "transport": "kafka",
        "bootstrap.servers": tansu.bootstrap,
        "topics": t.topic,
        "probeEndOffsets": "true",
        "includeHeaders": "true",
    }
    run_available_now(spark, source, {"target": "delta", "path": str(tmp_path / "lake")}, str(tmp_path / "ckpt"))
    rows = visible(delta_rows(str(tmp_path / "lake" / t.topic.replace(".", "_"))))
    assert sorted(rows) == [i for i in range(1, 11) if i != 3]
    # The same range read the way a Spark task reads it, with the headers column.
    options = SourceOptions.parse(source)
    batches = [b for p in (0, 1) for b in read_range(TopicPartitionRange(t.topic, p, 0, 11, options))]
    headers = [h for b in batches for h in b.column("headers").to_pylist()]
    assert len(headers) == 11 and all(h == [{"key": "h", "value": b"\x00v"}] for h in headers)


def test_headers_column_like_kafka_include_headers(tmp_path: Path) -> None:
    """`includeHeaders=true` adds `headers array<struct<key,value>>` (raw and decoded), as Spark's Kafka source."""
    t = Table("shop.inv.items")
    state = str(tmp_path / "state")
    with EmbeddedLog(state) as log:
        produce(log, t.topic, [t.event("c", 1, {"name": "a"}, 1)], headers=[("a", b"1"), ("b", None)])
        produce(log, t.topic, [t.event("c", 2, {"name": "b"}, 2)])
    options = {"state.dir": state, "topics": t.topic, "includeHeaders": "true"}
    assert CdcDataSource(options).schema().endswith("headers array<struct<key:string,value:binary>>")
    decoded = CdcDataSource({**options, "decode": "debezium-json"}).schema()
    assert decoded.startswith(DECODED_SCHEMA) and decoded.endswith("headers array<struct<key:string,value:binary>>")
    opts = SourceOptions.parse(options)
    (batch,) = read_range(TopicPartitionRange(t.topic, 0, 0, 2, opts))
    assert batch.column("headers").to_pylist() == [[{"key": "a", "value": b"1"}, {"key": "b", "value": None}], []]
    (decoded_batch,) = decode_batches(iter([batch]))
    assert decoded_batch.column("headers").to_pylist() == batch.column("headers").to_pylist()
    plain = SourceOptions.parse({**options, "includeHeaders": "false"})
    assert "headers" not in next(read_range(TopicPartitionRange(t.topic, 0, 0, 2, plain))).schema.names


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"state.dir": "/x"}, "exactly one of"),
        ({"state.dir": "/x", "topics": "a", "failOnDataLoss": "maybe"}, "failOnDataLoss"),
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


def test_null_and_empty_keys_and_values_survive_the_arrow_read(tmp_path: Path) -> None:
    """Nulls stay nulls and b"" stays b"", also when a whole first read batch is null (type inference)."""
    from cdc_spark.source.reader import _BATCH

    state = str(tmp_path / "state")
    sent = [(None, None)] * (_BATCH + 5) + [(b"k", b""), (b"", b"v"), (None, b"x"), (b"k2", None)]
    with EmbeddedLog(state) as log:
        producer = log.producer()
        for key, value in sent:
            producer.send("t.null", value, key=key, headers=[("h", None)] if value == b"x" else ())
        producer.flush()
    opts = SourceOptions.parse({"state.dir": state, "topics": "t.null", "includeHeaders": "true"})
    batches = list(read_range(TopicPartitionRange("t.null", 0, 0, len(sent), opts)))
    keys = [k for b in batches for k in b.column("key").to_pylist()]
    got = list(zip(keys, [v for b in batches for v in b.column("value").to_pylist()], strict=True))
    assert got == sent
    headers = [h for b in batches for h in b.column("headers").to_pylist()]
    assert headers[-2] == [{"key": "h", "value": None}] and headers[0] == []
    assert [o for b in batches for o in b.column("offset").to_pylist()] == list(range(len(sent)))


def test_retention_during_a_read_is_data_loss_not_a_silent_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Spark task's range read batch by batch: retention reaching it mid-read stops the task
    (failOnDataLoss=true) or skips to what is left with a warning (false), as before the read."""
    from functools import partial

    from cdc.log import TopicPartition, embedded_arrow
    from cdc_spark.source import offsets as off

    # Batches of 10 records, so that retention can land between two of them.
    monkeypatch.setattr(embedded_arrow, "read_arrow", partial(embedded_arrow.read_arrow, batch_rows=10))
    t = Table("shop.inv.items")
    for fail in ("true", "false"):
        state = str(tmp_path / f"state-{fail}")
        with EmbeddedLog(state) as log:
            produce(log, t.topic, [t.event("c", i, {"name": "a"}, i) for i in range(1, 31)])
        options = SourceOptions.parse({"state.dir": state, "topics": t.topic, "failOnDataLoss": fail})
        batches = read_range(TopicPartitionRange(t.topic, 0, 0, 30, options))
        assert next(batches).column("offset").to_pylist() == list(range(10))
        with EmbeddedLog(state) as log:
            log.delete_records({TopicPartition(t.topic, 0): 20})
        if fail == "true":
            with pytest.raises(off.DataLossError, match="offsets 10 to 19"):
                list(batches)
        else:
            assert [o for b in batches for o in b.column("offset").to_pylist()] == list(range(20, 30))

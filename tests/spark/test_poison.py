"""Poison events: dead-lettered with their error under errors.tolerance=all, a clear stop under none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdc.log import TopicPartition
from cdc.log.embedded import EmbeddedLog
from cdc_spark.pipeline import start_query
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows, run_available_now, visible

TOPIC = "shop.inv.items"
SOURCE_BLOCK = {"file": "mysql-bin.000001", "pos": 4, "row": 0}


def _poisoned_topic(tmp_path: Path) -> dict[str, str]:
    t = Table(TOPIC)
    state = str(tmp_path / "state")
    records = [
        t.event("c", 1, {"name": "good"}, 1),
        (b'{"id":2}', b'{"op":"c","after":{"id":2'),  # malformed JSON
        (None, json.dumps({"op": "c", "after": {"id": 3}, "source": SOURCE_BLOCK}).encode()),  # no key
        (b'{"id":4}', json.dumps({"op": "z", "after": {"id": 4}, "source": SOURCE_BLOCK}).encode()),  # unknown op
        t.event("c", 5, {"name": "after the poison"}, 9),
    ]
    with EmbeddedLog(state) as log:
        produce(log, TOPIC, records, partition=0, headers=[("trace", b"t-1"), ("empty", None)])
    return {"state.dir": state, "topics": TOPIC}


def test_tolerance_all_dead_letters_and_goes_on(spark: Any, tmp_path: Path) -> None:
    source = _poisoned_topic(tmp_path)
    dlq = str(tmp_path / "dlq")
    sink = {
        "target": "delta",
        "path": str(tmp_path / "lake"),
        "errors.tolerance": "all",
        "errors.deadletterqueue.path": dlq,
        "errors.deadletterqueue.topic.name": "dlq.items",
        "errors.deadletterqueue.context.headers.enable": "true",
        "app.id": "items-sink",
    }
    run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    assert visible(delta_rows(str(tmp_path / "lake" / "shop_inv_items"))) == {
        1: (1, "good", None),
        5: (5, "after the poison", None),
    }
    dead = sorted(spark.read.parquet(dlq).collect(), key=lambda r: r["offset"])
    assert [r["offset"] for r in dead] == [1, 2, 3]
    assert "malformed JSON" in dead[0]["error"] and dead[0]["key"] == '{"id":2}'
    assert "without a record key" in dead[1]["error"]
    assert "unknown op 'z'" in dead[2]["error"]
    assert all(r["topic"] == TOPIC and r["batch_id"] == 0 for r in dead)
    # The same three in the dead-letter topic: original bytes and headers, plus Kafka Connect's context.
    with EmbeddedLog(source["state.dir"]) as log:
        reader = log.reader()
        reader.assign({TopicPartition("dlq.items", 0): 0})
        records = reader.poll(100, 1.0)
        reader.close()
    assert [(r.key, r.value) for r in records] == [(d["key"] and d["key"].encode(), d["value"].encode()) for d in dead]
    headers = [dict(r.headers) for r in records]
    assert all(h["trace"] == b"t-1" and h["empty"] is None for h in headers)
    assert [h["__connect.errors.offset"] for h in headers] == [b"1", b"2", b"3"]
    assert [h["__connect.errors.stage"] for h in headers] == [b"VALUE_CONVERTER", b"TASK_PUT", b"TASK_PUT"]
    first = headers[0]
    assert first["__connect.errors.topic"] == TOPIC.encode() and first["__connect.errors.partition"] == b"0"
    assert first["__connect.errors.connector.name"] == b"items-sink"
    assert first["__connect.errors.exception.class.name"].endswith(b"DeserializeError")
    assert b"malformed JSON" in first["__connect.errors.exception.message"]


def test_tolerance_none_stops_with_the_event_named(spark: Any, tmp_path: Path) -> None:
    source = _poisoned_topic(tmp_path)
    query = start_query(
        spark, source, {"target": "delta", "path": str(tmp_path / "lake")}, str(tmp_path / "ckpt"), available_now=True
    )
    with pytest.raises(
        Exception,
        match=r"table shop_inv_items, key id=2: poison event at shop\.inv\.items-0@1: malformed JSON.*"
        r"errors\.tolerance=all",
    ):
        query.awaitTermination(120)
    assert delta_rows(str(tmp_path / "lake" / "shop_inv_items")) == []

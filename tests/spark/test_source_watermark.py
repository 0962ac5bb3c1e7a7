"""The `cdc` source's `watermark.topic`: planned with the data topics, read before them, never read as
rows, and held back whenever a batch stops short of the data's end (issue 31).

The embedded log is a real one in a temporary directory; the end-offset calls are watched by
wrapping its `end_offsets` (the order of the calls is the property under test).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from cdc.log import TopicPartition
from cdc.log.embedded import EmbeddedLog
from cdc_spark.source import SourceOptionError, SourceOptions
from cdc_spark.source.reader import CdcStreamReader
from tests.spark.events import produce

pytestmark = pytest.mark.unit

DATA, MARK = "srv.db.items", "__debezium-heartbeat.srv"
PATTERN = r"srv\.[^.]+\.[^.]+"


def _reader(state: str) -> CdcStreamReader:
    return CdcStreamReader(SourceOptions.parse({"state.dir": state, "topic.pattern": PATTERN, "watermark.topic": MARK}))


def _log(tmp_path: Path, data: int = 5, marks: int = 2) -> str:
    state = str(tmp_path / "state")
    with EmbeddedLog(state) as log:
        produce(log, DATA, [(b"k%d" % i, b"{}") for i in range(data)])
        produce(log, MARK, [(b"s", b"{}") for _ in range(marks)])
    return state


def test_the_watermark_topic_is_planned_but_never_read(tmp_path: Path) -> None:
    reader = _reader(_log(tmp_path))
    try:
        start = reader.initialOffset()
        assert start == {DATA: {"0": 0}, MARK: {"0": 0}}
        end = reader.latestOffset(start, ReadAllAvailable())
        assert end == {DATA: {"0": 5}, MARK: {"0": 2}}
        ranges = reader.partitions(start, end)
        assert [(r.topic, r.start, r.end) for r in ranges] == [(DATA, 0, 5)]
        # Only the watermark moved: a batch with no range to read, whose checkpoint moves the watermark.
        assert reader.partitions({DATA: {"0": 5}, MARK: {"0": 1}}, end) == []
    finally:
        reader.stop()


def test_the_watermark_ends_are_read_before_the_data_ends(tmp_path: Path) -> None:
    reader = _reader(_log(tmp_path))
    calls: list[set[str]] = []
    original = reader.log.end_offsets

    def watched(tps: Any) -> Any:
        tps = list(tps)
        calls.append({tp.topic for tp in tps})
        return original(tps)

    reader.log.end_offsets = watched  # type: ignore[method-assign]
    try:
        reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
        assert calls == [{MARK}, {DATA}]
    finally:
        reader.stop()


def test_a_batch_cut_by_max_events_keeps_the_watermark_where_it_was(tmp_path: Path) -> None:
    reader = _reader(_log(tmp_path))
    try:
        start = {DATA: {"0": 0}, MARK: {"0": 1}}
        assert reader.latestOffset(start, ReadMaxRows(3)) == {DATA: {"0": 3}, MARK: {"0": 1}}
        assert reader.latestOffset(start, ReadMaxRows(5)) == {DATA: {"0": 5}, MARK: {"0": 2}}
    finally:
        reader.stop()


def test_an_unconfirmed_data_end_keeps_the_watermark_at_the_query_position(tmp_path: Path) -> None:
    reader = _reader(_log(tmp_path))
    original = reader._end_offsets

    def unconfirmed(tps: Any, floor: Any = None, unanswered: Any = None) -> Any:
        ends = original(tps, floor)
        if unanswered is not None:
            unanswered.add(TopicPartition(DATA, 0))  # as probe_end_offsets reports a silent partition
        return ends

    reader._end_offsets = unconfirmed  # type: ignore[method-assign]
    try:
        start = {DATA: {"0": 0}, MARK: {"0": 1}}
        assert reader.latestOffset(start, ReadAllAvailable()) == {DATA: {"0": 5}, MARK: {"0": 1}}
        # A watermark topic the query has not planned yet is not planned from an unconfirmed end either.
        assert reader.latestOffset({DATA: {"0": 0}}, ReadAllAvailable()) == {DATA: {"0": 5}}
    finally:
        reader.stop()


def test_a_watermark_topic_the_stream_also_reads_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceOptionError, match=re.escape("watermark.topic='srv.db.beats' is also one of the topics")):
        SourceOptions.parse({"state.dir": str(tmp_path), "topic.pattern": PATTERN, "watermark.topic": "srv.db.beats"})
    with pytest.raises(SourceOptionError, match="is also one of the topics"):
        SourceOptions.parse({"state.dir": str(tmp_path), "topics": f"{DATA},{MARK}", "watermark.topic": MARK})

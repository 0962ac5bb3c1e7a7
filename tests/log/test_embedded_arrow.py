"""The embedded log's Arrow range reader against its record reader: same records, any range."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.log import TopicPartition, TopicSpec, decode_headers
from cdc.log.embedded import EmbeddedLog
from cdc.log.kafka import KafkaLog
from cdc.log.sqlite_copies import SQLITE_COPIES
from tests.support.examples import examples

blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20))), max_size=3)
records = st.lists(st.tuples(blobs, blobs, headers), min_size=1, max_size=60)


@settings(max_examples=examples(40), deadline=None)
@given(
    records=records,
    bounds=st.tuples(st.integers(0, 70), st.integers(0, 70)),
    batch_rows=st.integers(1, 25),
    log_open=st.booleans(),
)
def test_read_arrow_returns_the_records_of_the_range(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    bounds: tuple[int, int],
    batch_rows: int,
    log_open: bool,
) -> None:
    """Either library: ADBC when nothing else in the process has the log open, else sqlite3 (sqlite_copies)."""
    start, end = sorted(bounds)
    with tempfile.TemporaryDirectory() as d:
        log = EmbeddedLog(Path(d), synchronous="NORMAL")
        try:
            log.create_topics([TopicSpec("t", 1)])
            p = log.producer()
            for key, value, hdrs in records:
                p.send("t", value, key=key, partition=0, headers=hdrs)
            p.flush(10)
            p.close()
            reader = log.reader()
            reader.assign({TopicPartition("t", 0): start})
            expected = [r for r in reader.poll(max_records=1000, timeout=0.1) if r.offset < end]
            reader.close()
            from cdc.log.embedded_arrow import read_arrow

            if not log_open:
                log.close()
            with SQLITE_COPIES.adbc(log.path) as adbc_allowed:
                assert adbc_allowed is not log_open
            batches = list(read_arrow(log.path, 1000, "t", 0, start, end, headers=True, batch_rows=batch_rows))
        finally:
            log.close()
    assert all(0 < b.num_rows <= batch_rows for b in batches)
    got = [row for b in batches for row in b.to_pylist()]
    assert [g["offset"] for g in got] == [e.offset for e in expected]
    assert [(g["key"], g["value"]) for g in got] == [(e.key, e.value) for e in expected]
    assert [decode_headers(g["headers"]) for g in got] == [tuple(e.headers) for e in expected]
    assert [g["timestamp_ms"] for g in got] == [e.timestamp for e in expected]


def test_capabilities_are_flags_of_the_log() -> None:
    """Callers ask the log what it can do (retention, history topics, Arrow ranges), not its type."""
    assert EmbeddedLog.owner_applies_retention and EmbeddedLog.keeps_history_topics and EmbeddedLog.arrow_ranges
    assert not (KafkaLog.owner_applies_retention or KafkaLog.keeps_history_topics or KafkaLog.arrow_ranges)


def test_retention_reaching_the_range_while_it_is_read_is_reported(tmp_path: Path) -> None:
    """Each batch is its own snapshot: records deleted between two batches must not vanish unread."""
    from cdc.log.embedded_arrow import RecordsDeletedError, read_arrow

    log = EmbeddedLog(tmp_path, synchronous="NORMAL")
    try:
        log.create_topics([TopicSpec("t", 1)])
        p = log.producer()
        for i in range(10):
            p.send("t", b"v%d" % i, key=b"k", partition=0)
        p.flush(10)
        p.close()
        batches = read_arrow(log.path, 1000, "t", 0, 0, 10, batch_rows=3)
        assert next(batches).column("offset").to_pylist() == [0, 1, 2]
        log.delete_records({TopicPartition("t", 0): 7})  # retention while the reader holds a batch
        try:
            next(batches)
            raise AssertionError("offsets 3 to 6 vanished unread without an error")
        except RecordsDeletedError as e:
            assert (e.position, e.start) == (3, 7)
    finally:
        log.close()

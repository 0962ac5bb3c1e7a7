"""SubmittedBatches (source offsets by poll batch): with acknowledgements in any order, a stored
offset never passes an unacknowledged record, and once every record is acknowledged the newest
offset of each source partition is storable."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import SourceRecord
from cdc.runtime.source_batches import SubmittedBatches, latest_offsets
from tests.support.examples import examples

PARTITIONS = [{"server": "a"}, {"server": "b"}, {"server": "c"}]


def _record(partition: int, n: int) -> SourceRecord:
    return SourceRecord(PARTITIONS[partition], {"n": n}, "t", None, None, None, None, n)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 2), min_size=0, max_size=6), min_size=1, max_size=6),
    st.randoms(use_true_random=False),
)
def test_property_offsets_never_pass_an_unacknowledged_record(batches: list[list[int]], rnd) -> None:
    tracker = SubmittedBatches()
    n = 0
    acks = []  # (batch handle, global index of the record)
    for parts in batches:
        records = []
        for p in parts:
            records.append(_record(p, n))
            n += 1
        handle = tracker.submit(records, len(records))
        acks.extend((handle, r.value) for r in records)
    assert tracker.outstanding == n
    rnd.shuffle(acks)
    acked: set[int] = set()
    stored: dict[str, int] = {}
    for handle, index in acks:
        tracker.ack(handle)
        acked.add(index)
        for partition, offset in tracker.committable():
            stored[partition["server"]] = offset["n"]
        # Every record up to a stored offset is acknowledged.
        for upto in stored.values():
            assert set(range(upto + 1)) <= acked
    assert tracker.outstanding == 0
    newest: dict[str, int] = {}
    for i, p in enumerate(p for parts in batches for p in parts):
        newest[PARTITIONS[p]["server"]] = i
    assert stored == newest


def test_a_batch_with_nothing_sent_is_storable_at_once_after_the_ones_before() -> None:
    tracker = SubmittedBatches()
    first = tracker.submit([_record(0, 0)], 1)
    tracker.submit([_record(0, 1)], 0)  # everything dropped by an SMT
    assert tracker.committable() == []
    tracker.ack(first)
    assert tracker.committable() == [(PARTITIONS[0], {"n": 1})]


def test_latest_offsets_keeps_the_last_offset_per_partition_even_for_equal_dicts() -> None:
    records = [_record(0, 0), _record(1, 1), SourceRecord({"server": "a"}, {"n": 2}, "t", None, None, None)]
    latest = latest_offsets(records)
    assert [offset for _, offset in latest.values()] == [{"n": 2}, {"n": 1}]

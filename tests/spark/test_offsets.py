"""Admission control arithmetic of the source (no Spark)."""

from __future__ import annotations

from cdc.log import TopicPartition
from cdc_spark.source import offsets as off

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def test_cap_shares_fairly_and_gives_unused_share_to_others() -> None:
    start = {A: 0, B: 10, C: 5}
    end = {A: 100, B: 12, C: 105}
    capped = off.cap(start, end, 50)
    assert capped[B] == 12  # the small partition is drained
    assert sum(capped[tp] - start[tp] for tp in end) == 50
    assert abs((capped[A] - 0) - (capped[C] - 5)) <= 1


def test_cap_never_exceeds_the_end_and_keeps_new_partitions_whole() -> None:
    assert off.cap({A: 0}, {A: 3}, 1000) == {A: 3}
    assert off.cap({A: 0}, {A: 3, C: 9}, 2)[C] == 9
    # A log that now ends below the start (failOnDataLoss=false) restarts at its end.
    assert off.cap({A: 10, C: 0}, {A: 4, C: 9}, 5) == {A: 4, C: 5}


def test_offsets_json_round_trip_is_sorted_and_stable() -> None:
    data = off.to_json({B: 4, A: 2, C: 1})
    assert list(data) == ["t", "u"] and data["t"] == {"0": 2, "1": 4}
    assert off.from_json(data) == {A: 2, B: 4, C: 1}

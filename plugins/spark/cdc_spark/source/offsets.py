"""Source offsets as Spark checkpoints them: JSON `{topic: {partition: next_offset}}`.

Pure functions (no log, no Spark) so the admission-control arithmetic is easy to test.
"""

from __future__ import annotations

from collections.abc import Mapping

from cdc.log import TopicPartition

Offsets = dict[TopicPartition, int]
OffsetJson = dict[str, dict[str, int]]


def to_json(offsets: Mapping[TopicPartition, int]) -> OffsetJson:
    """Sorted, so equal positions always serialise to the same checkpoint text."""
    out: OffsetJson = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json(data: Mapping[str, Mapping[str, int]] | None) -> Offsets:
    return {TopicPartition(t, int(p)): int(o) for t, parts in (data or {}).items() for p, o in parts.items()}


def cap(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int], max_events: int) -> Offsets:
    """`end` limited to `max_events` records in total, shared fairly among partitions.

    Water-filling: every partition with data gets an equal share; what a small partition
    leaves unused goes to the others, so a trigger never reads less than it may.
    """
    avail = {tp: max(0, end[tp] - start.get(tp, end[tp])) for tp in end}
    take = dict.fromkeys(avail, 0)
    budget = max_events
    open_ = [tp for tp in sorted(avail) if avail[tp] > 0]
    while budget > 0 and open_:
        share = max(1, budget // len(open_))
        for tp in list(open_):
            n = min(share, avail[tp] - take[tp], budget)
            take[tp] += n
            budget -= n
            if take[tp] >= avail[tp]:
                open_.remove(tp)
            if budget == 0:
                break
    # A partition whose log now ends below the start (reported by the caller) restarts at its end.
    return {tp: (end[tp] if tp not in start or start[tp] > end[tp] else start[tp] + take[tp]) for tp in end}


class DataLossError(RuntimeError):
    """Records of a planned range were deleted from the log before a task read them."""

    def __init__(self, tp: TopicPartition, start: int, earliest: int) -> None:
        self.tp, self.start, self.earliest = tp, start, earliest
        super().__init__(
            f"{tp.topic}-{tp.partition}: offsets {start} to {earliest - 1} were deleted from the log before this "
            f"query read them (retention.ms or retention.bytes of the topic, or a delete-records), so "
            f"{earliest - start} change events never reached the sink and the target may miss their changes. "
            "Fix: apply a fresh snapshot of the source with a new checkpoint (cdc verify shows the differences), "
            "or set the source option failOnDataLoss=false to skip them and go on, as with Spark's Kafka source; "
            "keep the topic's retention longer than the sink can be down."
        )


class LogRewoundError(RuntimeError):
    """A partition's log ends below the checkpoint: the checkpoint belongs to another log."""

    def __init__(self, tp: TopicPartition, checkpoint: int, end: int) -> None:
        self.tp, self.checkpoint, self.end = tp, checkpoint, end
        super().__init__(
            f"{tp.topic}-{tp.partition}: the log ends at offset {end}, but this query's checkpoint is already at "
            f"{checkpoint}: the checkpoint was made against another log (state.dir or bootstrap.servers changed), "
            "or the topic was deleted and created again, so change events below the checkpoint would be skipped. "
            "Fix: give the new log a new checkpoint (and apply a fresh snapshot; cdc verify shows the differences), "
            f"or set failOnDataLoss=false to read on from offset {end}, as with Spark's Kafka source."
        )

"""A completed snapshot outranks everything older: rows it lacks leave the target.

Defect (issue 16): `cdc run` killed during its initial snapshot, rows deleted, then run again.
The second run retakes the snapshot at a later position; no delete event is ever emitted for
the rows deleted in between, and the first snapshot's reads kept them alive in the lake. The
sink now treats a table's last snapshot read (`source.snapshot` = `last` or
`last_in_data_collection`) as a truncate at the snapshot's position.

Seeded and randomized: which keys the killed snapshot read, which are deleted and inserted
before the retake, how the retake's reads split across batches and partitions (the marker
may be applied a batch before reads from another partition), and late replays of the killed
snapshot's reads. Set CDC_PURGE_SEED to replay one case.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from cdc_spark.apply import ChangeApplier
from tests.spark.events import Table
from tests.spark.helpers import raw_frame, visible
from tests.spark.test_truncate import _target

TOPIC = "shop.inv.items"
TABLE = "shop_inv_items"
SEEDS = [int(os.environ["CDC_PURGE_SEED"])] if os.environ.get("CDC_PURGE_SEED") else [11, 23]


def _case(seed: int) -> tuple[list[list[tuple[int, list]]], dict[int, tuple]]:
    """Batches of (partition, events) and the source table at the end (id → (id, name, qty))."""
    rnd = random.Random(seed)
    t = Table(TOPIC)
    db = {i: f"v{i}" for i in range(1, rnd.randint(20, 60))}
    # Run 1: the snapshot at position 100 is killed after some reads (no end marker).
    first = [t.event("r", i, {"name": name}, 100) for i, name in list(db.items())[: rnd.randint(5, len(db))]]
    # Between the runs: deletes and inserts the binlog carries, but nobody streams them.
    for i in rnd.sample(sorted(db), k=len(db) // 3):
        del db[i]
    for i in range(100, 100 + rnd.randint(0, 10)):
        db[i] = f"n{i}"
    # Run 2: the whole snapshot again at position 200; its last read carries the marker.
    ids = sorted(db)
    marker = rnd.choice(["last", "last_in_data_collection"])
    second = [
        t.event("r", i, {"name": db[i]}, 200, snapshot=marker if n == len(ids) - 1 else "true")
        for n, i in enumerate(ids)
    ]
    # Streaming after the snapshot.
    streamed = []
    pos = 300
    for _ in range(rnd.randint(0, 15)):
        pos += 10
        i = rnd.choice([*db, 500 + pos])
        if i in db and rnd.random() < 0.3:
            streamed.append(t.event("d", i, {"name": db.pop(i)}, pos))
        else:
            db[i] = f"s{pos}"
            streamed.append(t.event("u" if i in db else "c", i, {"name": db[i]}, pos))
    # The retake's reads land on two partitions; the one holding the marker may be read first.
    rnd.shuffle(second)
    cut = rnd.randint(0, len(second))
    batches: list[list[tuple[int, list]]] = [[(0, first)], [(1, second[:cut])], [(0, second[cut:])]]
    if rnd.random() < 0.5:
        batches[1], batches[2] = batches[2], batches[1]
    batches.append([(1, streamed)])
    # A replay of the killed snapshot's reads (a late partition) must not bring anything back.
    batches.append([(2, rnd.sample(first, k=len(first) // 2))])
    return batches, {i: (i, name, None) for i, name in db.items()}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["delta", "postgres", "iceberg"])
def test_a_retaken_snapshot_removes_rows_deleted_in_between(
    kind: str, seed: int, spark: Any, tmp_path: Path, request: Any
) -> None:
    postgres_db = request.getfixturevalue("postgres_db") if kind == "postgres" else None
    sink, rows = _target(kind, tmp_path, postgres_db)
    batches, expected = _case(seed)
    applier = ChangeApplier({**sink, "truncate.enabled": "false"} if seed % 2 else sink)
    batch_id = 0
    for batch in batches:
        frames = [raw_frame(spark, TOPIC, events, partition=p) for p, events in batch if events]
        if not frames:
            continue
        frame = frames[0]
        for more in frames[1:]:
            frame = frame.union(more)
        applier(frame, batch_id)
        batch_id += 1
    got = visible(rows(TABLE))
    assert got == expected, (
        f"seed {seed} ({kind}): missing {sorted(set(expected) - set(got))}, extra {sorted(set(got) - set(expected))}"
    )

"""The parallel Delta apply through Spark: the bucketed layout as deltalake reads it, one
commit per micro-batch, replays, the earlier layout kept on the driver, and the merge run
in the tasks' processes, not the driver's."""

from __future__ import annotations

import json
import os
import random
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from cdc_spark.apply import ChangeApplier
from cdc_spark.apply.errors import SinkConfigError
from tests.spark.events import Table
from tests.spark.helpers import delta_rows, raw_frame, visible

TOPIC = "shop.inv.items"


def _commits(path: str) -> list[dict[str, Any]]:
    """Each version's actions, read from the Delta log's JSON files."""
    out = []
    for f in sorted(Path(path, "_delta_log").glob("*.json")):
        out.append([json.loads(line) for line in f.read_text().splitlines() if line])
    return out


def _referenced_files_exist(path: str) -> None:
    dt = DeltaTable(path)
    for uri in dt.file_uris():
        assert os.path.exists(uri.removeprefix("file://")), f"{uri} is in the log but not on disk"


def test_bucketed_layout_one_commit_per_batch_and_replays(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake, "buckets": 4})
    rng = random.Random(11)
    model: dict[int, tuple[int, str, int | None]] = {}
    seq = 0
    workers: set[str] = set()
    for batch_id in range(4):
        events = []
        for _ in range(30):
            seq += 1
            k = rng.randrange(25)
            op = rng.choice("cuud")
            events.append(t.event(op, k, {"name": f"n{seq}", "qty": seq}, seq))
            if op == "d":
                model.pop(k, None)
            else:
                model[k] = (k, f"n{seq}", seq)
        frame = raw_frame(spark, TOPIC, events, partition=batch_id % 2, first_offset=batch_id * 30)
        applier(frame, batch_id)
        workers |= applier.apply_workers
        main = f"{lake}/shop_inv_items"
        before = DeltaTable(main).version()
        applier(frame, batch_id)  # a replay of the same batch: nothing is written
        assert DeltaTable(main).version() == before
        assert visible(delta_rows(main)) == model
    dt = DeltaTable(f"{lake}/shop_inv_items")
    assert dt.metadata().configuration == {"cdc.buckets": "4"}
    assert list(dt.metadata().partition_columns) == ["__bucket"]
    for row in delta_rows(f"{lake}/shop_inv_items"):
        key = json.dumps({"id": row["id"]}, separators=(",", ":")).encode()
        assert row["__bucket"] == zlib.crc32(key) % 4, row
    # One transaction per batch: create (version 0), then each batch's adds and removes in one commit.
    commits = _commits(f"{lake}/shop_inv_items")
    txns = [a["txn"]["version"] for c in commits for a in c if "txn" in a]
    assert txns == [0, 1, 2, 3]
    assert len(commits) == 5
    for path in (f"{lake}/shop_inv_items", f"{lake}/shop_inv_items__tombstones"):
        _referenced_files_exist(path)
    # The merge ran in Spark's Python workers, not in the driver's process.
    assert workers and all(not w.endswith(f":{os.getpid()}") for w in workers)


def test_a_table_in_the_earlier_layout_stays_on_the_driver(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    old = ChangeApplier({"target": "delta", "path": lake, "apply.on": "driver"})
    old(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a"}, 1), t.event("c", 2, {"name": "b"}, 2)]), 0)
    new = ChangeApplier({"target": "delta", "path": lake})
    new(raw_frame(spark, TOPIC, [t.event("u", 1, {"name": "a2"}, 3), t.event("d", 2, None, 4)], first_offset=2), 1)
    dt = DeltaTable(f"{lake}/shop_inv_items")
    assert list(dt.metadata().partition_columns) == []
    assert "__bucket" not in pa.schema(dt.schema().to_arrow()).names
    assert visible(delta_rows(f"{lake}/shop_inv_items")) == {1: (1, "a2", None)}
    assert new.apply_workers == frozenset()  # applied by the driver's MERGE


def test_soft_deletes_truncates_and_late_events_on_the_tasks(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake, "delete.mode": "soft", "buckets": 3})
    applier(raw_frame(spark, TOPIC, [t.event("c", k, {"name": f"a{k}"}, k) for k in range(1, 7)]), 0)
    applier(
        raw_frame(spark, TOPIC, [t.event("d", 2, None, 10), t.event("u", 3, {"name": "b3"}, 11)], first_offset=6), 1
    )
    # Late events older than what the table holds change nothing.
    applier(
        raw_frame(
            spark, TOPIC, [t.event("u", 2, {"name": "zombie"}, 9), t.event("u", 3, {"name": "old"}, 5)], first_offset=8
        ),
        2,
    )
    rows = {r["id"]: r for r in delta_rows(f"{lake}/shop_inv_items")}
    assert rows[2]["__deleted"] is True and rows[3]["name"] == "b3"
    # A truncate clears older rows; a later event brings its key back.
    applier(
        raw_frame(spark, TOPIC, [t.event("t", 0, None, 20), t.event("c", 9, {"name": "z"}, 21)], first_offset=10), 3
    )
    assert visible(delta_rows(f"{lake}/shop_inv_items")) == {9: (9, "z", None)}


def test_partition_by_tables_are_applied_by_the_tasks(spark: Any, tmp_path: Path) -> None:
    """partition.by columns before `__bucket`: keys move between partitions (an update changes
    the partition column, to NULL and to a value with a slash too); replays; read with deltalake,
    whose values of the partition column come from the log."""
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake, "buckets": 3, "partition.by": {TOPIC: ["name"]}})
    rng = random.Random(23)
    model: dict[int, tuple[int, str | None, int | None]] = {}
    seq = 0
    workers: set[str] = set()
    for batch_id in range(4):
        events = []
        for _ in range(40):
            seq += 1
            k = rng.randrange(20)
            op = rng.choice("cuud")
            name = rng.choice(["a", "b", "x/y", "é 1", None])
            events.append(t.event(op, k, {"name": name, "qty": seq}, seq))
            if op == "d":
                model.pop(k, None)
            else:
                model[k] = (k, name, seq)
        frame = raw_frame(spark, TOPIC, events, partition=batch_id % 2, first_offset=batch_id * 40)
        applier(frame, batch_id)
        workers |= applier.apply_workers
        applier(frame, batch_id)  # a replay: nothing changes
        assert visible(delta_rows(f"{lake}/shop_inv_items")) == model
    dt = DeltaTable(f"{lake}/shop_inv_items")
    assert list(dt.metadata().partition_columns) == ["name", "__bucket"]
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    assert {a["partition.name"] for a in actions} <= {"a", "b", "x/y", "é 1", None}
    # A partition filter reads only that partition's files, and finds exactly the model's rows.
    only_a = DeltaTable(f"{lake}/shop_inv_items").to_pyarrow_table(partitions=[("name", "=", "a")]).to_pylist()
    assert sorted(r["id"] for r in only_a) == sorted(k for k, v in model.items() if v[1] == "a")
    assert list(DeltaTable(f"{lake}/shop_inv_items__tombstones").metadata().partition_columns) == ["__bucket"]
    _referenced_files_exist(f"{lake}/shop_inv_items")
    assert workers and all(not w.endswith(f":{os.getpid()}") for w in workers)


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"apply.on": "workers"}, r"apply.on='workers': use executors .* or driver"),
        ({"buckets": 0}, r"buckets=0 must be 1 to 10000"),
        ({"buckets": "many"}, r"buckets='many' must be an integer"),
    ],
)
def test_bad_apply_settings_are_refused_with_the_fix(conf: dict[str, Any], message: str, tmp_path: Path) -> None:
    with pytest.raises(SinkConfigError, match=message):
        ChangeApplier({"target": "delta", "path": str(tmp_path), **conf})

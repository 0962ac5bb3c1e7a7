"""The parallel Iceberg apply through Spark (apply.on=executors, iceberg_layout.py): the bucketed
layout as pyiceberg reads it, one snapshot per table and micro-batch, replays, a new column in
the middle of a batch, the earlier layout kept on the driver, and the merge run in the tasks'
processes. Everything is read back with pyiceberg's own catalog, not the sink's code."""

from __future__ import annotations

import json
import os
import random
import zlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyiceberg.catalog import load_catalog

from cdc.api.data import Schema
from cdc_spark.apply import ChangeApplier
from tests.spark.events import Table
from tests.spark.helpers import iceberg_rows, raw_frame, visible

TOPIC = "shop.inv.items"


def _catalog(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "wh").mkdir(exist_ok=True)
    return {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}


def _load(cat: dict[str, str], table: str) -> Any:
    return load_catalog("cdc", **cat).load_table(("lake", table))


def _ours(tbl: Any) -> list[int]:
    """The batch ids named by the table's snapshots, oldest first (the sink's summaries)."""
    out = []
    for snap in tbl.snapshots():
        if snap.summary is not None and snap.summary["cdc.batch.id"] is not None:
            out.append(int(snap.summary["cdc.batch.id"]))
    return out


def _files_on_disk_are_referenced(tbl: Any) -> None:
    """Every data file of the table's directory is named by one of its snapshots, and every file
    the current snapshot names exists: no orphan from a discarded pass, no dangling entry."""
    referenced: set[str] = set()
    for snap in tbl.snapshots():
        for manifest in snap.manifests(tbl.io):
            for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=False):
                referenced.add(entry.data_file.file_path.removeprefix("file://"))
    current = {t.file.file_path.removeprefix("file://") for t in tbl.scan().plan_files()}
    for path in current:
        assert os.path.exists(path), f"the current snapshot names a missing file {path}"
    data = Path(tbl.location().removeprefix("file://"), "data")
    on_disk = {str(p) for p in data.rglob("*.parquet")}
    assert on_disk <= referenced, f"files no snapshot names: {sorted(on_disk - referenced)}"


def test_bucketed_layout_one_snapshot_per_batch_and_replays(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    cat = _catalog(tmp_path)
    applier = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake", "buckets": 4})
    rng = random.Random(17)
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
        before = _load(cat, "shop_inv_items").current_snapshot().snapshot_id
        applier(frame, batch_id)  # a replay of the same batch: nothing is written
        assert _load(cat, "shop_inv_items").current_snapshot().snapshot_id == before
        assert visible(iceberg_rows(cat, "lake", "shop_inv_items")) == model
    tbl = _load(cat, "shop_inv_items")
    assert tbl.properties["cdc.buckets"] == "4"
    spec = tbl.spec()
    assert [(str(f.transform), tbl.schema().find_column_name(f.source_id)) for f in spec.fields] == [
        ("identity", "__bucket")
    ]
    for row in iceberg_rows(cat, "lake", "shop_inv_items"):
        key = json.dumps({"id": row["id"]}, separators=(",", ":")).encode()
        assert row["__bucket"] == zlib.crc32(key) % 4, row
    # Each file holds one bucket, and its partition value is that bucket.
    for task in tbl.scan().plan_files():
        held = pq.read_table(task.file.file_path.removeprefix("file://"), columns=["__bucket"])
        assert set(held.column("__bucket").to_pylist()) == {task.file.partition[0]}
    # One snapshot per batch and table: batches 0..3 in order, none twice.
    assert _ours(tbl) == [0, 1, 2, 3]
    tombs = _load(cat, "shop_inv_items__tombstones")
    assert _ours(tombs) == sorted(set(_ours(tombs)))
    for table in (tbl, tombs):
        _files_on_disk_are_referenced(table)
    # The merge ran in Spark's Python workers, not in the driver's process.
    assert workers and all(not w.endswith(f":{os.getpid()}") for w in workers)


def test_a_column_added_mid_batch_is_applied_with_its_field_id(spark: Any, tmp_path: Path) -> None:
    """A batch whose later events bring a column: the table gains it and the batch is applied
    again with it (the first pass's files are deleted); the column reads back through its id."""
    cat = _catalog(tmp_path)
    applier = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake", "delete.mode": "soft"})
    v1 = Table(TOPIC)
    applier(raw_frame(spark, TOPIC, [v1.event("c", k, {"name": f"a{k}"}, k) for k in range(1, 9)]), 0)
    v2 = Table(
        TOPIC,
        {"id": Schema.INT32_SCHEMA, "name": Schema.OPTIONAL_STRING_SCHEMA, "color": Schema.OPTIONAL_STRING_SCHEMA},
    )
    mixed = [v1.event("u", 1, {"name": "b1"}, 10), v2.event("u", 2, {"name": "b2", "color": "red"}, 11)]
    mixed += [v2.event("c", 20, {"name": "new", "color": "blue"}, 12), v2.event("d", 3, None, 13)]
    applier(raw_frame(spark, TOPIC, mixed, first_offset=8), 1)
    tbl = _load(cat, "shop_inv_items")
    assert "color" in tbl.schema().column_names
    rows = {r["id"]: r for r in iceberg_rows(cat, "lake", "shop_inv_items")}
    assert (rows[1]["name"], rows[1]["color"]) == ("b1", None)
    assert (rows[2]["name"], rows[2]["color"]) == ("b2", "red")
    assert (rows[20]["name"], rows[20]["color"]) == ("new", "blue")
    assert rows[3]["__deleted"] is True
    assert {k for k, r in rows.items() if not r["__deleted"]} == {1, 2, 4, 5, 6, 7, 8, 20}
    # Each data file carries field ids, the new column's included (readers find columns by id).
    color_id = tbl.schema().find_field("color").field_id
    for task in tbl.scan().plan_files():
        schema = pq.read_schema(task.file.file_path.removeprefix("file://"))
        ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in schema if f.metadata}
        assert set(ids) == set(schema.names), schema
        if "color" in ids:
            assert ids["color"] == color_id
    assert _ours(tbl) == [0, 1]
    _files_on_disk_are_referenced(tbl)


def test_a_table_in_the_earlier_layout_stays_on_the_driver(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    cat = _catalog(tmp_path)
    old = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake", "apply.on": "driver"})
    old(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a"}, 1), t.event("c", 2, {"name": "b"}, 2)]), 0)
    new = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake"})
    new(raw_frame(spark, TOPIC, [t.event("u", 1, {"name": "a2"}, 3), t.event("d", 2, None, 4)], first_offset=2), 1)
    tbl = _load(cat, "shop_inv_items")
    assert not tbl.spec().fields and "__bucket" not in tbl.schema().column_names
    assert visible(iceberg_rows(cat, "lake", "shop_inv_items")) == {1: (1, "a2", None)}
    assert new.apply_workers == frozenset()  # applied by the driver's path


def test_truncates_late_events_and_hard_deletes_on_the_tasks(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    cat = _catalog(tmp_path)
    applier = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake", "buckets": 3})
    applier(raw_frame(spark, TOPIC, [t.event("c", k, {"name": f"a{k}"}, k) for k in range(1, 7)]), 0)
    applier(
        raw_frame(spark, TOPIC, [t.event("d", 2, None, 10), t.event("u", 3, {"name": "b3"}, 11)], first_offset=6), 1
    )
    # Late events older than the table's row or the key's remembered delete change nothing.
    late = [t.event("c", 2, {"name": "zombie"}, 9), t.event("u", 3, {"name": "old"}, 5)]
    applier(raw_frame(spark, TOPIC, late, first_offset=8), 2)
    assert visible(iceberg_rows(cat, "lake", "shop_inv_items")) == {
        1: (1, "a1", None),
        3: (3, "b3", None),
        4: (4, "a4", None),
        5: (5, "a5", None),
        6: (6, "a6", None),
    }
    tombs = iceberg_rows(cat, "lake", "shop_inv_items__tombstones")
    assert [r["id"] for r in tombs] == [2]
    # A truncate clears older rows; a later event brings its key back.
    applier(
        raw_frame(spark, TOPIC, [t.event("t", 0, None, 20), t.event("c", 9, {"name": "z"}, 21)], first_offset=10), 3
    )
    assert visible(iceberg_rows(cat, "lake", "shop_inv_items")) == {9: (9, "z", None)}

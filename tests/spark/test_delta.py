"""The Delta target end to end through the streaming source on the embedded log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from cdc.api.data import Schema
from cdc.log.embedded import EmbeddedLog
from cdc_spark.apply import ChangeApplier, SchemaEvolutionError
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows, raw_frame, run_available_now, visible

TOPIC = "shop.inv.items"


def _setup(tmp_path: Path, records: list, partitions: int = 2) -> tuple[dict[str, str], str]:
    state = str(tmp_path / "state")
    with EmbeddedLog(state) as log:
        produce(log, TOPIC, records, partitions=partitions)
    return {"state.dir": state, "topics": TOPIC}, str(tmp_path / "lake")


def test_latest_event_wins_and_deletes_are_remembered(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    source, lake = _setup(
        tmp_path,
        [
            t.event("r", 1, {"name": "a", "qty": 1}, 10),
            t.event("r", 2, {"name": "b", "qty": 2}, 10),
            t.event("u", 1, {"name": "a2", "qty": 3}, 12),
            t.event("d", 2, None, 13),
            (b'{"id":2}', None),  # the Kafka tombstone after a delete
            t.event("c", 3, {"name": "c", "qty": 9}, 14),
        ],
    )
    sink = {"target": "delta", "path": lake}
    run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    assert visible(delta_rows(f"{lake}/shop_inv_items")) == {1: (1, "a2", 3), 3: (3, "c", 9)}
    tombs = delta_rows(f"{lake}/shop_inv_items__tombstones")
    assert [r["id"] for r in tombs] == [2]

    # A late, older update of the deleted key arrives in a later batch: it must not resurrect.
    with EmbeddedLog(source["state.dir"]) as log:
        produce(
            log,
            TOPIC,
            [t.event("u", 2, {"name": "zombie", "qty": 0}, 11), t.event("u", 1, {"name": "old"}, 9)],
            partitions=2,
        )
    run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    assert visible(delta_rows(f"{lake}/shop_inv_items")) == {1: (1, "a2", 3), 3: (3, "c", 9)}


def test_soft_delete_mode_keeps_flagged_rows(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    source, lake = _setup(tmp_path, [t.event("c", 1, {"name": "a"}, 1), t.event("d", 1, None, 2)])
    run_available_now(spark, source, {"target": "delta", "path": lake, "delete.mode": "soft"}, str(tmp_path / "c"))
    rows = delta_rows(f"{lake}/shop_inv_items")
    assert [(r["id"], r["__deleted"], r["__op"]) for r in rows] == [(1, True, "d")]


def test_replayed_batch_is_skipped_by_its_app_transaction(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake, "app.id": "q1"})
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a"}, 1)]), 0)
    applier(raw_frame(spark, TOPIC, [t.event("u", 1, {"name": "b"}, 2)]), 1)
    version = DeltaTable(f"{lake}/shop_inv_items").version()
    # Spark re-runs batch 1 after a crash, even with different content: nothing changes.
    applier(raw_frame(spark, TOPIC, [t.event("u", 1, {"name": "c"}, 3)]), 1)
    assert DeltaTable(f"{lake}/shop_inv_items").version() == version
    assert DeltaTable(f"{lake}/shop_inv_items").transaction_version("q1") == 1
    assert visible(delta_rows(f"{lake}/shop_inv_items")) == {1: (1, "b", None)}


def test_truncate_clears_older_rows_only(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake})
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a"}, 1), t.event("c", 2, {"name": "b"}, 2)]), 0)
    applier(
        raw_frame(
            spark,
            TOPIC,
            [t.event("c", 3, {"name": "x"}, 3), t.event("t", 0, None, 4), t.event("c", 4, {"name": "after"}, 5)],
        ),
        1,
    )
    assert visible(delta_rows(f"{lake}/shop_inv_items")) == {4: (4, "after", None)}


def test_truncate_can_be_ignored(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake, "truncate.enabled": "false"})
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a"}, 1), t.event("t", 0, None, 2)]), 0)
    assert visible(delta_rows(f"{lake}/shop_inv_items")) == {1: (1, "a", None)}


def test_schema_evolution_adds_columns_keeps_dropped_and_refuses_type_changes(spark: Any, tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake})
    v1 = Table(TOPIC)
    applier(raw_frame(spark, TOPIC, [v1.event("c", 1, {"name": "a", "qty": 1}, 1)]), 0)
    v2 = Table(
        TOPIC,
        {"id": Schema.INT32_SCHEMA, "name": Schema.OPTIONAL_STRING_SCHEMA, "color": Schema.OPTIONAL_STRING_SCHEMA},
    )  # qty dropped, color added
    applier(
        raw_frame(
            spark,
            TOPIC,
            [v2.event("c", 2, {"name": "b", "color": "red"}, 2), v2.event("u", 1, {"name": "a2", "color": "blue"}, 3)],
        ),
        1,
    )
    rows = {r["id"]: r for r in delta_rows(f"{lake}/shop_inv_items")}
    assert rows[2]["color"] == "red" and rows[2]["qty"] is None
    assert rows[1]["color"] == "blue" and rows[1]["name"] == "a2"
    v3 = Table(TOPIC, {"id": Schema.INT32_SCHEMA, "name": Schema.OPTIONAL_INT64_SCHEMA})
    with pytest.raises(SchemaEvolutionError, match=r"table shop_inv_items: column 'name' changed type .*Fix:"):
        applier(raw_frame(spark, TOPIC, [v3.event("u", 1, {"name": 5}, 4)]), 2)
    # int → bigint (the key): lossless; delta-rs cannot change a column type in place, so the
    # table is rewritten with the wider type in one commit, and the batch applies after it.
    wide = Table(TOPIC, {"id": Schema.INT64_SCHEMA, "name": Schema.OPTIONAL_STRING_SCHEMA})
    applier(raw_frame(spark, TOPIC, [wide.event("u", 1, {"name": "w"}, 5), wide.event("c", 3_000_000_000, {}, 6)]), 2)
    dt = DeltaTable(f"{lake}/shop_inv_items")
    assert pa.schema(dt.schema().to_arrow()).field("id").type == pa.int64()
    rows = {r["id"]: r for r in delta_rows(f"{lake}/shop_inv_items")}
    assert rows[1]["name"] == "w" and rows[2]["color"] == "red" and 3_000_000_000 in rows


def test_maintenance_compacts_and_forgets_old_tombstones(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    applier = ChangeApplier(
        {"target": "delta", "path": lake, "delete.retention.ms": "0", "maintenance.interval.batches": "2"}
    )
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a"}, 1), t.event("c", 2, {"name": "b"}, 2)]), 0)
    applier(raw_frame(spark, TOPIC, [t.event("d", 1, None, 3)]), 1)
    applier(raw_frame(spark, TOPIC, [t.event("u", 2, {"name": "c"}, 4)]), 2)  # maintenance runs after batch 2
    assert delta_rows(f"{lake}/shop_inv_items__tombstones") == []
    assert visible(delta_rows(f"{lake}/shop_inv_items")) == {2: (2, "c", None)}
    assert list((tmp_path / "lake" / "shop_inv_items" / "_delta_log").glob("*.checkpoint.parquet"))


def test_scd2_history_is_chained_by_sequence_even_out_of_order(spark: Any, tmp_path: Path) -> None:
    from cdc_spark.decode import sequence

    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    applier = ChangeApplier({"target": "delta", "path": lake, "mode": "scd2"})
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "v1"}, 1), t.event("u", 1, {"name": "v3"}, 3)]), 0)
    late = [t.event("u", 1, {"name": "v2"}, 2), t.event("d", 1, None, 5), t.event("c", 2, {"name": "w"}, 4)]
    applier(raw_frame(spark, TOPIC, late), 1)
    applier(raw_frame(spark, TOPIC, [*late, t.event("u", 1, {"name": "v3"}, 3)]), 2)  # re-delivered: no change

    def pos(seq: bytes | None) -> int | None:
        return None if seq is None else sequence.unpack(seq)[1]

    rows = sorted(delta_rows(f"{lake}/shop_inv_items"), key=lambda r: (r["id"], r["__valid_from"]))
    history = [(r["id"], r["name"], pos(r["__valid_from"]), pos(r["__valid_to"]), r["__deleted"]) for r in rows]
    assert history == [
        (1, "v1", 1, 2, False),
        (1, "v2", 2, 3, False),
        (1, "v3", 3, 5, False),
        (1, None, 5, None, True),  # the delete (its before image holds only the key here) closes the key
        (2, "w", 4, None, False),
    ]

"""The Iceberg target through pyiceberg: a SQLite SQL catalog, and a REST catalog (the stand-in of
tests/support/iceberg_rest.py, read back with pyiceberg's own RestCatalog)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdc.api.data import Schema
from cdc_spark.apply import ChangeApplier
from tests.spark.events import Table
from tests.spark.helpers import iceberg_rows, raw_frame, visible
from tests.support.iceberg_rest import serving

TOPIC = "shop.inv.items"


def catalog(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "wh").mkdir(exist_ok=True)
    return {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}


def _apply_guarded_batches(spark: Any, cat: dict[str, Any]) -> None:
    """Five inserts; an update, a delete and a late older update, replayed; a zombie insert of the
    deleted key, older than its delete."""
    t = Table(TOPIC)
    applier = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake"})
    applier(raw_frame(spark, TOPIC, [t.event("c", i, {"name": f"n{i}", "qty": i}, i) for i in range(1, 6)]), 0)
    second = [t.event("u", 1, {"name": "new"}, 10), t.event("d", 2, None, 11), t.event("u", 3, {"name": "old"}, 0)]
    applier(raw_frame(spark, TOPIC, second), 1)
    applier(raw_frame(spark, TOPIC, second), 1)
    applier(raw_frame(spark, TOPIC, [t.event("c", 2, {"name": "zombie"}, 9)]), 2)


def test_guarded_upsert_and_delete_in_one_transaction(spark: Any, tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    _apply_guarded_batches(spark, cat)
    assert visible(iceberg_rows(cat, "lake", "shop_inv_items")) == {
        1: (1, "new", None),
        3: (3, "n3", 3),
        4: (4, "n4", 4),
        5: (5, "n5", 5),
    }


def test_new_columns_and_soft_deletes(spark: Any, tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    applier = ChangeApplier({"target": "iceberg", "catalog": cat, "namespace": "lake", "delete.mode": "soft"})
    v1 = Table(TOPIC)
    applier(raw_frame(spark, TOPIC, [v1.event("c", 1, {"name": "a"}, 1), v1.event("c", 2, {"name": "b"}, 2)]), 0)
    v2 = Table(
        TOPIC,
        {"id": Schema.INT32_SCHEMA, "name": Schema.OPTIONAL_STRING_SCHEMA, "color": Schema.OPTIONAL_STRING_SCHEMA},
    )
    applier(raw_frame(spark, TOPIC, [v2.event("u", 1, {"name": "a", "color": "red"}, 3), v2.event("d", 2, None, 4)]), 1)
    rows = {r["id"]: r for r in iceberg_rows(cat, "lake", "shop_inv_items")}
    assert rows[1]["color"] == "red" and rows[2]["__deleted"] is True
    applier(raw_frame(spark, TOPIC, [v2.event("t", 0, None, 5), v2.event("c", 3, {"name": "c"}, 6)]), 2)
    assert visible(iceberg_rows(cat, "lake", "shop_inv_items")) == {3: (3, "c", None)}


def test_maintenance_expires_tombstones_and_snapshots(spark: Any, tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = Table(TOPIC)
    applier = ChangeApplier(
        {
            "target": "iceberg",
            "catalog": cat,
            "namespace": "lake",
            "delete.retention.ms": "0",
            "maintenance.interval.batches": "1",
        }
    )
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a"}, 1), t.event("c", 2, {"name": "b"}, 2)]), 0)
    applier(raw_frame(spark, TOPIC, [t.event("d", 1, None, 3)]), 1)
    assert iceberg_rows(cat, "lake", "shop_inv_items__tombstones") == []
    assert visible(iceberg_rows(cat, "lake", "shop_inv_items")) == {2: (2, "b", None)}


def test_a_rest_catalog_takes_the_same_guarded_batches(spark: Any, tmp_path: Path) -> None:
    """`type: rest` with a bearer token: inserts, updates, deletes, a replayed batch and a late older
    event, read back with pyiceberg's RestCatalog, equal the SQL catalog's result above. (A server
    thread, but the `spark` fixture already makes this an e2e test.)"""
    from pyiceberg.catalog.rest import RestCatalog

    with serving(tmp_path / "rest", token="rest-token-value") as server:
        cat = {"type": "rest", "uri": server.uri, "token": "rest-token-value"}
        _apply_guarded_batches(spark, cat)
        reader = RestCatalog("check", uri=server.uri, token="rest-token-value")
        rows = reader.load_table(("lake", "shop_inv_items")).scan().to_arrow().to_pylist()
        assert visible(rows) == {1: (1, "new", None), 3: (3, "n3", 3), 4: (4, "n4", 4), 5: (5, "n5", 5)}
        assert reader.table_exists(("lake", "shop_inv_items__tombstones"))
        assert ("POST", "/v1/namespaces/lake/tables/shop_inv_items") in server.routes.requests  # commits
        assert not server.backing.table_exists(("cdc", "shop_inv_items"))  # under the namespace it was given

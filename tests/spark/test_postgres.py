"""The PostgreSQL target: parallel COPY + guarded upsert per Spark partition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc.api.data import Schema
from cdc_spark.apply import ChangeApplier, SchemaEvolutionError
from tests.spark.events import Table
from tests.spark.helpers import postgres_rows, raw_frame, visible

TOPIC = "shop.inv.items"


def test_guarded_upserts_deletes_and_replays(spark: Any, postgres_db: Any) -> None:
    t = Table(TOPIC)
    applier = ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn})
    first = [t.event("c", i, {"name": f"n{i}", "qty": i}, i) for i in range(1, 41)]
    applier(raw_frame(spark, TOPIC, first), 0)
    second = [
        t.event("u", 1, {"name": "new", "qty": 100}, 50),
        t.event("d", 2, None, 51),
        t.event("u", 3, {"name": "stale"}, 0),
    ]
    applier(raw_frame(spark, TOPIC, second), 1)
    applier(raw_frame(spark, TOPIC, second), 1)  # replay: idempotent
    applier(raw_frame(spark, TOPIC, [t.event("u", 2, {"name": "zombie"}, 45)]), 2)  # late, older than the delete
    rows = visible(postgres_rows(postgres_db.dsn, "shop_inv_items"))
    expected = {i: (i, f"n{i}", i) for i in range(1, 41) if i != 2}
    expected[1] = (1, "new", 100)
    assert rows == expected
    tombs = postgres_rows(postgres_db.dsn, "shop_inv_items__tombstones")
    assert [r["id"] for r in tombs] == [2]


def test_soft_mode_truncate_and_schema_evolution(spark: Any, postgres_db: Any) -> None:
    applier = ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn, "delete.mode": "soft"})
    v1 = Table(TOPIC)
    applier(
        raw_frame(
            spark,
            TOPIC,
            [v1.event("c", 1, {"name": "a"}, 1), v1.event("d", 1, None, 2), v1.event("c", 2, {"name": "b"}, 3)],
        ),
        0,
    )
    rows = {r["id"]: r for r in postgres_rows(postgres_db.dsn, "shop_inv_items")}
    assert rows[1]["__deleted"] is True and rows[2]["__deleted"] is False
    v2 = Table(
        TOPIC,
        {"id": Schema.INT32_SCHEMA, "name": Schema.OPTIONAL_STRING_SCHEMA, "color": Schema.OPTIONAL_STRING_SCHEMA},
    )
    applier(raw_frame(spark, TOPIC, [v2.event("t", 0, None, 4), v2.event("c", 3, {"name": "c", "color": "red"}, 5)]), 1)
    rows = {r["id"]: r for r in postgres_rows(postgres_db.dsn, "shop_inv_items")}
    assert list(rows) == [3] and rows[3]["color"] == "red" and rows[3]["qty"] is None
    v3 = Table(TOPIC, {"id": Schema.INT32_SCHEMA, "name": Schema.OPTIONAL_INT64_SCHEMA})
    with pytest.raises(Exception, match=r"column 'name' changed type from text to bigint.*Fix:") as info:
        applier(raw_frame(spark, TOPIC, [v3.event("u", 3, {"name": 7}, 6)]), 2)
    assert "public.shop_inv_items" in str(info.value)
    assert SchemaEvolutionError.__name__ in str(info.value) or "changed type" in str(info.value)
    # int → bigint (a key column) is widened in place with ALTER COLUMN … TYPE.
    wide = Table(TOPIC, {"id": Schema.INT64_SCHEMA, "name": Schema.OPTIONAL_STRING_SCHEMA})
    applier(raw_frame(spark, TOPIC, [wide.event("c", 2**40, {"name": "big"}, 7)]), 3)
    rows = {r["id"]: r for r in postgres_rows(postgres_db.dsn, "shop_inv_items")}
    assert rows[2**40]["name"] == "big" and rows[3]["name"] == "c"


def test_topics_map_to_tables_by_format(spark: Any, postgres_db: Any, tmp_path: Path) -> None:
    t = Table("srv.db.orders")
    applier = ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn, "table.name.format": "cdc_${table}"})
    applier(raw_frame(spark, "srv.db.orders", [t.event("c", 1, {"name": "x"}, 1)]), 0)
    assert visible(postgres_rows(postgres_db.dsn, "cdc_orders")) == {1: (1, "x", None)}

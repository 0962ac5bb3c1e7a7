"""A truncate outranks older events that arrive in later batches, for every keyed target.

A truncate has no key, so it can sit in another topic partition than the rows it clears;
admission control can then apply it a batch before older changes of those rows. The
target remembers each table's last truncate, across batches and query restarts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cdc_spark.apply import ChangeApplier
from tests.spark.events import Table
from tests.spark.helpers import delta_rows, iceberg_rows, postgres_rows, raw_frame, visible

TOPIC, OTHER = "shop.inv.items", "shop.inv.other"


def _target(kind: str, tmp_path: Path, postgres_db: Any) -> tuple[dict[str, Any], Callable[[str], list[dict]]]:
    if kind == "delta":
        lake = str(tmp_path / "lake")
        return {"target": "delta", "path": lake}, lambda table: delta_rows(f"{lake}/{table}")
    if kind == "postgres":
        return {"target": "postgres", "dsn": postgres_db.dsn}, lambda table: postgres_rows(postgres_db.dsn, table)
    (tmp_path / "wh").mkdir()
    cat = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    return {"target": "iceberg", "catalog": cat, "namespace": "lake"}, lambda table: iceberg_rows(cat, "lake", table)


@pytest.mark.parametrize("kind", ["delta", "postgres", "iceberg"])
def test_older_events_after_a_truncate_stay_out(kind: str, spark: Any, tmp_path: Path, request: Any) -> None:
    postgres_db = request.getfixturevalue("postgres_db") if kind == "postgres" else None
    sink, rows = _target(kind, tmp_path, postgres_db)
    t, other = Table(TOPIC), Table(OTHER)
    applier = ChangeApplier(sink)
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "a"}, 1), t.event("c", 2, {"name": "b"}, 2)]), 0)
    # The truncate (sequence 5) of both tables; `other` has no table yet.
    truncates = [t.event("t", 0, None, 5), t.event("c", 3, {"name": "c"}, 6), other.event("t", 0, None, 5)]
    applier(raw_frame(spark, TOPIC, truncates[:2]), 1)
    applier(raw_frame(spark, OTHER, truncates[2:]), 2)
    assert visible(rows("shop_inv_items")) == {3: (3, "c", None)}

    # Older changes from another partition arrive a batch later: they lose to the truncate.
    late = [t.event("u", 1, {"name": "zombie"}, 3), t.event("c", 4, {"name": "old"}, 4)]
    applier(raw_frame(spark, TOPIC, [*late, t.event("c", 5, {"name": "new"}, 7)]), 3)
    assert visible(rows("shop_inv_items")) == {3: (3, "c", None), 5: (5, "new", None)}

    # After a restart the marks come from the target, also for the table created after its truncate.
    restarted = ChangeApplier(sink)
    restarted(raw_frame(spark, TOPIC, [t.event("c", 6, {"name": "old"}, 4)]), 4)
    after = [other.event("c", 1, {"name": "old"}, 4), other.event("c", 2, {"name": "x"}, 8)]
    restarted(raw_frame(spark, OTHER, after), 5)
    assert visible(rows("shop_inv_items")) == {3: (3, "c", None), 5: (5, "new", None)}
    assert visible(rows("shop_inv_other")) == {2: (2, "x", None)}

"""AUTO CDC's per-table options through the real sink, read back with each target's own library
(deltalake, pyiceberg, psycopg): `ignore_null_updates` on every target and both Delta paths
(Spark tasks, the driver's MERGE), column lists, and the SCD2 history lists on Delta.

The seeded random tests hold each target to the model of tests/spark/partial_model.py: random
inserts, updates with NULLs and deletes over a few keys, cut into random micro-batches (each
shuffled: the sequence decides within a batch, not the arrival). Spark in-process: the e2e tier
(tests/tiers.py, by the `spark` fixture)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from cdc.api.data import Schema
from cdc.log.embedded import EmbeddedLog
from cdc_spark.apply import ChangeApplier
from cdc_spark.apply.table_options import TableOptionError
from cdc_spark.decode import sequence
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows, iceberg_rows, postgres_rows, raw_frame, run_available_now
from tests.spark.partial_model import COLUMNS, encode, history, model, scd2_model, shuffled_within, splits

TOPIC = "shop.crm.users"
TABLE = "shop_crm_users"
USERS = {
    "id": Schema.INT32_SCHEMA,
    "name": Schema.OPTIONAL_STRING_SCHEMA,
    "qty": Schema.OPTIONAL_INT64_SCHEMA,
    "secret": Schema.OPTIONAL_STRING_SCHEMA,
}
TARGETS = ["delta", "delta-driver", "iceberg", "postgres"]
# The example runs on every apply path: Iceberg's driver path and soft deletes too.
EVERY_PATH = [*TARGETS, "iceberg-driver", "delta-soft"]


def _sink(kind: str, tmp_path: Path, request: pytest.FixtureRequest, **extra: Any) -> dict[str, Any]:
    lake = str(tmp_path / "lake")
    if kind == "delta":
        return {"target": "delta", "path": lake, **extra}
    if kind == "delta-driver":
        return {"target": "delta", "path": lake, "apply.on": "driver", **extra}
    if kind == "delta-soft":
        return {"target": "delta", "path": lake, "delete.mode": "soft", **extra}
    if kind == "postgres":
        return {"target": "postgres", "dsn": request.getfixturevalue("postgres_db").dsn, **extra}
    (tmp_path / "wh").mkdir(exist_ok=True)
    catalog = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    on = {"apply.on": "driver"} if kind == "iceberg-driver" else {}
    return {"target": "iceberg", "catalog": catalog, "namespace": "lake", **on, **extra}


def _read(sink: dict[str, Any], table: str = TABLE) -> list[dict[str, Any]]:
    if sink["target"] == "postgres":
        return postgres_rows(sink["dsn"], table)
    if sink["target"] == "iceberg":
        return iceberg_rows(sink["catalog"], "lake", table)
    return delta_rows(f"{sink['path']}/{table}")


def _live(rows: list[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> dict[int, tuple[Any, ...]]:
    return {r["id"]: tuple(r[c] for c in columns) for r in rows if not r["__deleted"]}


@pytest.mark.parametrize("kind", EVERY_PATH)
def test_a_null_in_an_update_keeps_the_stored_value_on_every_target(
    spark: Any, tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    """Users who fill in their profile piece by piece (AUTO CDC's partial-update example, re-told):
    each update carries only what changed, NULL elsewhere."""
    t = Table(TOPIC, USERS)
    sink = _sink(kind, tmp_path, request, **{"table.options": {TOPIC: {"ignore_null_updates": True}}})
    applier = ChangeApplier(sink)
    applier(
        raw_frame(
            spark,
            TOPIC,
            [
                t.event("c", 1, {"name": "Ann", "qty": 1, "secret": "s1"}, 1),
                t.event("c", 2, {"name": "Bo", "qty": 2, "secret": "s2"}, 2),
                t.event("u", 2, {"name": None, "qty": 20, "secret": None}, 4),
                t.event("u", 2, {"name": "Bob", "qty": None, "secret": None}, 3),  # older, arrives later
                t.event("c", 3, {"name": "Cy", "qty": 3, "secret": None}, 5),
            ],
        ),
        0,
    )
    applier(
        raw_frame(
            spark,
            TOPIC,
            [
                t.event("u", 1, {"name": None, "qty": 10, "secret": None}, 6),  # the stored row has the rest
                t.event("u", 2, {"name": None, "qty": None, "secret": "s22"}, 7),
                t.event("d", 3, {"name": "Cy", "qty": 3, "secret": None}, 8),
                t.event("u", 3, {"name": None, "qty": 33, "secret": None}, 9),  # after a delete: nothing to keep
                t.event("u", 4, {"name": None, "qty": 4, "secret": None}, 10),  # a row the target never had
            ],
        ),
        1,
    )
    expected = {1: ("Ann", 10, "s1"), 2: ("Bob", 20, "s22"), 3: (None, 33, None), 4: (None, 4, None)}
    assert _live(_read(sink), ("name", "qty", "secret")) == expected
    # An insert is a whole row: its NULLs are NULLs.
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": None, "qty": 11, "secret": None}, 11)]), 2)
    assert _live(_read(sink), ("name", "qty", "secret"))[1] == (None, 11, None)


@pytest.mark.parametrize("kind", TARGETS)
def test_column_lists_write_only_the_chosen_columns(
    spark: Any, tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    t = Table(TOPIC, USERS)
    other = "shop.crm.orders"
    sink = _sink(
        kind,
        tmp_path,
        request,
        **{"table.options": {TOPIC: {"except_column_list": ["secret"]}, other: {"column_list": ["id", "qty"]}}},
    )
    applier = ChangeApplier(sink)
    orders = Table(other, USERS)
    batch = [t.event("c", 1, {"name": "Ann", "qty": 1, "secret": "s"}, 1)]
    applier(raw_frame(spark, TOPIC, batch), 0)
    applier(raw_frame(spark, other, [orders.event("c", 7, {"name": "x", "qty": 70, "secret": "y"}, 2)]), 1)
    (user,) = _read(sink)
    assert "secret" not in user and (user["id"], user["name"], user["qty"]) == (1, "Ann", 1)
    (order,) = _read(sink, "shop_crm_orders")
    assert {k for k in order if not k.startswith("__")} == {"id", "qty"} and order["qty"] == 70


def test_a_list_that_drops_the_key_stops_the_query_naming_the_fix(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC, USERS)
    applier = ChangeApplier(
        {"target": "delta", "path": str(tmp_path), "table.options": {TOPIC: {"column_list": ["name"]}}}
    )
    with pytest.raises(TableOptionError, match=f"table {TABLE}: leaves out key column.s. id.*add id to column_list"):
        applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "Ann"}, 1)]), 0)


@pytest.mark.parametrize(("kind", "seed"), [(k, s) for k in TARGETS for s in (11, 12)])
def test_random_partial_updates_end_as_the_model(
    spark: Any, tmp_path: Path, request: pytest.FixtureRequest, kind: str, seed: int
) -> None:
    rng = random.Random(seed)
    events = history(rng, 28)
    t = Table(TOPIC)
    sink = _sink(kind, tmp_path, request, **{"ignore.null.updates": "true"})
    applier = ChangeApplier(sink)
    for batch_id, batch in enumerate(splits(rng, events, 4)):
        applier(raw_frame(spark, TOPIC, encode(t, shuffled_within(rng, batch))), batch_id)
    assert _live(_read(sink)) == model(events), f"seed {seed}"


def test_random_partial_updates_through_the_streaming_source(spark: Any, tmp_path: Path) -> None:
    """The source forwards every event while a table ignores null updates (each partition's
    latest alone would lose the earlier updates' values), keys spread over two partitions."""
    rng = random.Random(7)
    events = history(rng, 30, keys=5)
    t = Table(TOPIC)
    state, lake = str(tmp_path / "state"), str(tmp_path / "lake")
    sink = {"target": "delta", "path": lake, "table.options": {TOPIC: {"ignore_null_updates": True}}}
    for batch in splits(rng, events, 3):
        with EmbeddedLog(state) as log:
            produce(log, TOPIC, encode(t, batch), partitions=2)
        run_available_now(spark, {"state.dir": state, "topics": TOPIC}, sink, str(tmp_path / "ckpt"))
    assert _live(delta_rows(f"{lake}/{TABLE}")) == model(events)


# -- SCD2 history lists (Delta) ------------------------------------------------------------------
PEOPLE = {"id": Schema.INT32_SCHEMA, "name": Schema.OPTIONAL_STRING_SCHEMA, "city": Schema.OPTIONAL_STRING_SCHEMA}


def _history(path: str) -> list[tuple[int, int, int | None, str, str | None]]:
    """(id, __valid_from, __valid_to, name or <deleted>, city) per version, from deltalake."""
    out = []
    for r in DeltaTable(path).to_pyarrow_table().to_pylist():
        to = sequence.unpack(r["__valid_to"])[1] if r["__valid_to"] is not None else None
        out.append(
            (
                r["id"],
                sequence.unpack(r["__valid_from"])[1],
                to,
                "<deleted>" if r["__deleted"] else r["name"],
                r["city"],
            )
        )
    return sorted(out)


def test_only_tracked_changes_open_a_version(spark: Any, tmp_path: Path) -> None:
    """AUTO CDC's SCD2 example with history kept for every column but the city (re-told): a move
    updates the person's current version in place; a new name opens one; across two batches, one
    event arriving after a newer one."""
    t = Table(TOPIC, PEOPLE)
    lake = str(tmp_path / "lake")
    options = {"track_history_except_column_list": ["city"], "ignore_null_updates": True}
    applier = ChangeApplier({"target": "delta", "path": lake, "mode": "scd2", "table.options": {TOPIC: options}})
    applier(
        raw_frame(
            spark,
            TOPIC,
            [
                t.event("c", 1, {"name": "Ines", "city": "Lima"}, 1),
                t.event("c", 2, {"name": "Tom", "city": "Quito"}, 2),
                t.event("u", 2, {"name": "Tomas", "city": None}, 3),  # a new name; the city unchanged (NULL)
                t.event("u", 1, {"name": None, "city": "Cusco"}, 4),  # the city only: in place
            ],
        ),
        0,
    )
    applier(
        raw_frame(
            spark,
            TOPIC,
            [
                t.event("u", 2, {"name": None, "city": "Cuenca"}, 6),
                t.event("u", 2, {"name": "Tom", "city": None}, 5),  # arrives after 6: the sequence decides
                t.event("d", 1, {"name": "Ines", "city": "Cusco"}, 7),
            ],
        ),
        1,
    )
    applier(raw_frame(spark, TOPIC, [t.event("u", 2, {"name": None, "city": "Ambato"}, 8)]), 2)
    assert _history(f"{lake}/{TABLE}") == [
        (1, 1, 7, "Ines", "Cusco"),
        (1, 7, None, "<deleted>", "Cusco"),
        (2, 2, 3, "Tom", "Quito"),
        (2, 3, 5, "Tomas", "Quito"),
        (2, 5, None, "Tom", "Ambato"),  # 6 and 8 moved Tom in place
    ]
    current = [r for r in delta_rows(f"{lake}/{TABLE}") if r["__valid_to"] is None and not r["__deleted"]]
    assert [(r["id"], sequence.unpack(r["__seq"])[1]) for r in current] == [(2, 8)]  # its newest state's sequence


def test_a_late_event_inside_an_in_place_version_keeps_the_current_row_newest(spark: Any, tmp_path: Path) -> None:
    t = Table(TOPIC, PEOPLE)
    lake = str(tmp_path / "lake")
    options = {"track_history_column_list": ["name"]}
    applier = ChangeApplier({"target": "delta", "path": lake, "mode": "scd2", "table.options": {TOPIC: options}})
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {"name": "Ines", "city": "Lima"}, 1)]), 0)
    applier(raw_frame(spark, TOPIC, [t.event("u", 1, {"name": "Ines", "city": "Cusco"}, 5)]), 1)
    applier(raw_frame(spark, TOPIC, [t.event("u", 1, {"name": "Inés", "city": "Puno"}, 3)]), 2)  # late
    assert _history(f"{lake}/{TABLE}") == [
        (1, 1, 3, "Ines", "Cusco"),
        (1, 3, 5, "Inés", "Puno"),
        (1, 5, None, "Ines", "Cusco"),
    ]
    applier(raw_frame(spark, TOPIC, [t.event("u", 1, {"name": "Inés", "city": "Puno"}, 3)]), 2)  # a replay
    assert len(_history(f"{lake}/{TABLE}")) == 3


@pytest.mark.parametrize("seed", [21, 22])
def test_random_history_tracking_one_column_ends_as_the_model(spark: Any, tmp_path: Path, seed: int) -> None:
    """scd2 with history kept for `name` only and null updates ignored: every version, its span
    and values, against the model, over random batches of in-order (per key) events."""
    rng = random.Random(seed)
    events = history(rng, 26, keys=3)
    t = Table(TOPIC)
    lake = str(tmp_path / "lake")
    options = {"track_history_column_list": ["name"], "ignore_null_updates": True}
    applier = ChangeApplier({"target": "delta", "path": lake, "mode": "scd2", "table.options": {TOPIC: options}})
    for batch_id, batch in enumerate(splits(rng, events, 4)):
        applier(raw_frame(spark, TOPIC, encode(t, shuffled_within(rng, batch))), batch_id)
    stored = []
    for r in delta_rows(f"{lake}/{TABLE}"):
        end = sequence.unpack(r["__valid_to"])[1] if r["__valid_to"] is not None else None
        row = None if r["__deleted"] else (r["name"], r["qty"])
        stored.append((r["id"], sequence.unpack(r["__valid_from"])[1], end, row))
    assert sorted(stored, key=lambda v: (v[0], v[1])) == scd2_model(events, ("name",)), f"seed {seed}"

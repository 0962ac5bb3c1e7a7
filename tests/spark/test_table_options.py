"""AUTO CDC's per-table options, the pure parts (table_options.py, unchanged.py, latest.py, scd2.py):
parsing and its refusals, column selection, which NULLs an update keeps, how a key's partial
updates in one batch combine with each other and the stored row, and when a change opens a
new SCD2 version. The sink runs them in tests/spark/test_partial_updates.py."""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_spark.apply import SinkConfig, SinkConfigError
from cdc_spark.apply.latest import latest_and_earlier
from cdc_spark.apply.scd2 import absorbed, chain, coalesce, resumptions
from cdc_spark.apply.table_options import TableOptionError, TableOptions, null_masks
from cdc_spark.apply.unchanged import fill_from_stored, flatten_latest
from cdc_spark.decode.events import DECODED_ARROW
from cdc_spark.decode.flatbatch import FlatBatch
from cdc_spark.decode.unavailable import DEFAULT, Placeholder
from tests.spark.events import Table
from tests.spark.partial_model import Event, history, model, splits
from tests.support.examples import examples

pytestmark = pytest.mark.unit

TOPIC = "p.db.users"
TABLE = "p_db_users"


# -- parsing -----------------------------------------------------------------------------------
def test_the_two_column_lists_exclude_each_other() -> None:
    with pytest.raises(TableOptionError) as e:
        TableOptions.parse({"column_list": ["id", "name"], "except_column_list": ["qty"]})
    assert e.value.key == "except_column_list"
    assert "column_list and except_column_list exclude each other" in e.value.detail


def test_history_lists_exclude_each_other_and_need_scd2() -> None:
    both = {"track_history_column_list": ["name"], "track_history_except_column_list": ["qty"]}
    with pytest.raises(TableOptionError, match="exclude each other"):
        TableOptions.parse(both, mode="scd2")
    with pytest.raises(TableOptionError) as e:
        TableOptions.parse({"track_history_column_list": ["name"]}, mode="scd1")
    assert e.value.key == "track_history_column_list"
    assert "this table's mode is scd1: drop track_history_column_list, or set mode: scd2" in e.value.detail
    assert TableOptions.parse({"track_history_except_column_list": "qty"}, mode="scd2").tracks_history


def test_a_tracked_column_must_be_one_the_table_keeps() -> None:
    with pytest.raises(TableOptionError, match="names qty, which column_list leaves out"):
        TableOptions.parse({"column_list": ["id", "name"], "track_history_column_list": ["qty"]}, mode="scd2")
    with pytest.raises(TableOptionError, match="names qty, which except_column_list leaves out"):
        TableOptions.parse({"except_column_list": ["qty"], "track_history_column_list": ["qty"]}, mode="scd2")


@pytest.mark.parametrize(
    ("raw", "key", "says"),
    [
        ({"column_list": []}, "column_list", "must name columns"),
        ({"column_list": ["id", " "]}, "column_list", "an empty name"),
        ({"except_column_list": 3}, "except_column_list", "must be a list of column names"),
        ({"ignore_null_updates": "yes"}, "ignore_null_updates", "use true or false"),
        ({"columns": ["id"]}, "columns", "not a table option"),
    ],
)
def test_bad_shapes_are_refused_naming_the_option(raw: dict[str, Any], key: str, says: str) -> None:
    with pytest.raises(TableOptionError) as e:
        TableOptions.parse(raw)
    assert e.value.key == key and says in e.value.detail


def test_the_parquet_changelog_takes_none_of_them() -> None:
    with pytest.raises(TableOptionError, match="parquet changelog appends every event"):
        TableOptions.parse({"ignore_null_updates": True}, target="parquet")
    with pytest.raises(SinkConfigError, match=r"^ignore\.null\.updates: the parquet changelog"):
        SinkConfig.parse({"target": "parquet", "path": "/x", "ignore.null.updates": "true"})


def test_the_sink_config_takes_them_per_topic_over_the_job_default() -> None:
    conf = SinkConfig.parse(
        {
            "target": "delta",
            "path": "/lake",
            "ignore.null.updates": True,
            "table.modes": {"p.db.hist": "scd2"},
            "table.options": {
                TOPIC: {"except_column_list": ["secret"], "ignore_null_updates": False},
                "p.db.hist": {"track_history_column_list": ["name"]},
            },
        }
    )
    assert conf.options_for(TABLE) == TableOptions(except_column_list=("secret",), ignore_null_updates=False)
    assert conf.options_for("p_db_hist").ignore_null_updates and conf.options_for("p_db_hist").tracks_history
    assert conf.options_for("p_db_other") == TableOptions(ignore_null_updates=True)
    assert conf.null_update_topics([TOPIC, "p.db.hist", "p.db.other"]) == {"p.db.hist", "p.db.other"}
    assert not conf.keeps_only_latest  # the batch's earlier updates hold what the latest leaves NULL
    assert SinkConfig.parse(
        {"target": "delta", "path": "/l", "table.options": {TOPIC: {"column_list": ["id"]}}}
    ).keeps_only_latest
    with pytest.raises(SinkConfigError, match=rf"^table\.options for topic {TOPIC}: track_history_column_list: "):
        SinkConfig.parse(
            {"target": "delta", "path": "/l", "table.options": {TOPIC: {"track_history_column_list": ["a"]}}}
        )


# -- column selection --------------------------------------------------------------------------
def _flat(**columns: list[Any]) -> FlatBatch:
    n = len(next(iter(columns.values())))
    meta = {
        "__op": ["u"] * n,
        "__seq": [bytes([i]) for i in range(n)],
        "__source_ts_ms": [0] * n,
        "__deleted": [False] * n,
    }
    return FlatBatch(pa.table({**columns, **meta}), ["id"])


def test_column_lists_keep_the_key_and_meta_columns() -> None:
    flat = _flat(id=[1], name=["a"], qty=[2], secret=["s"])
    kept = TableOptions(column_list=("id", "name")).select(flat, TABLE).table.column_names
    assert kept == ["id", "name", "__op", "__seq", "__source_ts_ms", "__deleted"]
    dropped = TableOptions(except_column_list=("secret",)).select(flat, TABLE).table.column_names
    assert dropped == ["id", "name", "qty", "__op", "__seq", "__source_ts_ms", "__deleted"]


def test_a_list_that_drops_the_key_is_refused_with_the_fix() -> None:
    flat = _flat(id=[1], name=["a"])
    with pytest.raises(TableOptionError) as e:
        TableOptions(column_list=("name",)).select(flat, TABLE)
    assert str(e.value) == (
        f"column_list: table {TABLE}: leaves out key column(s) id; the sink applies every change by its key, so the "
        "key stays: add id to column_list"
    )
    with pytest.raises(TableOptionError, match="remove id from except_column_list"):
        TableOptions(except_column_list=("id",)).select(flat, TABLE)


def test_a_list_naming_a_column_the_events_lack_is_refused() -> None:
    with pytest.raises(TableOptionError) as e:
        TableOptions(except_column_list=("scret",)).select(_flat(id=[1], secret=["s"]), TABLE)
    assert e.value.key == "except_column_list"
    assert "no column 'scret' in its change events (they have id, secret)" in e.value.detail


# -- which NULLs an update keeps ---------------------------------------------------------------
def test_only_the_nulls_of_updates_are_kept() -> None:
    table = pa.table(
        {
            "id": [1, 2, 3, 4],
            "name": [None, None, None, "x"],
            "qty": [None, 5, None, None],
            "__op": ["u", "c", "d", "u"],
            "__deleted": [False, False, True, False],
        }
    )
    masks = null_masks(table, ["id"])
    assert {c: m.to_pylist() for c, m in masks.items()} == {
        "name": [True, False, False, False],
        "qty": [True, False, False, True],
    }


# -- how a key's partial updates combine --------------------------------------------------------
def _decoded(table: Table, events: list[Event]) -> pa.Table:
    """The decoded rows the sink reduces (offsets in the given order)."""
    rows = []
    for offset, (seq, key, op, values) in enumerate(events):
        _, value = table.event(op, key, values, seq)
        rows.append(
            {
                "topic": TOPIC,
                "partition": 0,
                "offset": offset,
                "key": json.dumps({"id": key}, separators=(",", ":")),
                "value": value,
                "__op": op,
                "__seq": seq.to_bytes(32, "big"),
                "__source_ts_ms": seq,
                "__deleted": op == "d",
            }
        )
    return pa.Table.from_pylist(rows, schema=DECODED_ARROW)


def _settle(events: list[Event], stored: pa.Table | None = None, options: TableOptions | None = None) -> pa.Table:
    """One micro-batch's winners as the lake targets write them: reduced, flattened, partial
    updates combined in the batch, then settled against `stored` (the target's rows)."""
    options = options or TableOptions(ignore_null_updates=True)
    placeholder = Placeholder.parse(DEFAULT)
    rows = _decoded(Table(TOPIC), events)
    topics = {TOPIC} if options.ignore_null_updates else set()
    winners, earlier = latest_and_earlier(rows, {}, placeholder, topics)
    flat = flatten_latest(TOPIC, winners, earlier, None, placeholder, options, TABLE)
    if stored is None:
        stored = flat.table.slice(0, 0)
    table, _ = fill_from_stored(flat.table, flat.unchanged, stored, ["id"])
    return table


def _rows(table: pa.Table) -> dict[int, tuple[Any, ...]]:
    return {r["id"]: (r["name"], r["qty"]) for r in table.to_pylist() if not r["__deleted"]}


def test_updates_of_one_batch_combine_column_by_column() -> None:
    """AUTO CDC's rule re-expressed: each column takes its latest non-NULL value; an insert or a
    delete in between resets the row; the order the events arrive in does not matter."""
    events: list[Event] = [
        (1, 1, "c", {"name": "Ann", "qty": 1}),
        (3, 1, "u", {"name": None, "qty": 3}),
        (2, 1, "u", {"name": "Anna", "qty": None}),  # arrives after a newer one: the sequence decides
        (4, 2, "c", {"name": "Bo", "qty": 4}),
        (5, 2, "d", {"name": None, "qty": None}),
        (6, 2, "c", {"name": None, "qty": 6}),  # re-inserted: its NULL is a NULL
        (7, 2, "u", {"name": None, "qty": 7}),
        (8, 3, "u", {"name": None, "qty": 8}),  # nothing to keep: NULL
    ]
    assert _rows(_settle(events)) == {1: ("Anna", 3), 2: (None, 7), 3: (None, 8)}
    assert _rows(_settle(events)) == model(events)
    plain = _settle(events, options=TableOptions())  # without the option a NULL is a NULL
    assert _rows(plain)[1] == (None, 3)


def test_the_stored_row_decides_where_it_is_newer_than_the_batch_s_value() -> None:
    events: list[Event] = [(3, 1, "u", {"name": "late", "qty": None}), (7, 1, "u", {"name": None, "qty": None})]
    stored = _settle([(5, 1, "c", {"name": "stored", "qty": 50})])
    # The stored row (seq 5) is newer than the batch's value of name (seq 3): it wins; qty has no
    # value in the batch: the stored one.
    assert _rows(_settle(events, stored)) == {1: ("stored", 50)}
    older = _settle([(2, 1, "c", {"name": "old", "qty": 20})])
    assert _rows(_settle(events, older)) == {1: ("late", 20)}


def test_only_the_events_back_to_the_latest_whole_row_are_kept_for_the_fill() -> None:
    events: list[Event] = [
        (1, 1, "c", {"name": "a", "qty": 1}),
        (2, 1, "d", {"name": None, "qty": None}),
        (3, 1, "c", {"name": "b", "qty": None}),  # the newest whole row: needed, nothing before it
        (4, 1, "u", {"name": None, "qty": 4}),
        (5, 1, "u", {"name": None, "qty": None}),  # the winner
        (6, 2, "c", {"name": "z", "qty": 6}),
        (7, 2, "u", {"name": "y", "qty": 7}),
        (8, 3, "u", {"name": "x", "qty": 1}),
        (9, 3, "c", {"name": "w", "qty": 2}),  # an insert wins: no earlier event is needed
    ]
    rows = _decoded(Table(TOPIC), events)
    placeholder = Placeholder.parse(DEFAULT)
    winners, earlier = latest_and_earlier(rows, {}, placeholder, {TOPIC})
    assert sorted(winners["offset"].to_pylist()) == [4, 6, 8]
    # Key 2's winner is an update: its NULLs are known only once flattened, so its insert is kept too.
    assert sorted(earlier["offset"].to_pylist()) == [2, 3, 5]
    assert latest_and_earlier(rows, {}, placeholder)[1].num_rows == 0  # without the option: none


@settings(max_examples=examples(200), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30), parts=st.integers(1, 5))
def test_random_partial_updates_in_random_batches_end_as_the_model(seed: int, n: int, parts: int) -> None:
    """The pure path of every lake target: each batch settled against what the ones before it
    stored, then applied under the sequence guard."""
    rng = random.Random(seed)
    events = history(rng, n)
    stored: pa.Table | None = None
    for batch in splits(rng, events, parts) if n > 1 else [events]:
        rng.shuffle(batch)
        settled = _settle(batch, stored)
        stored = settled if stored is None else _guarded(stored, settled)
    assert _rows(stored) == model(events)


def _guarded(stored: pa.Table, batch: pa.Table) -> pa.Table:
    """The stored rows after the batch under the sequence guard (deletes kept as soft deletes:
    they are the state a later update starts from)."""
    rows = {r["id"]: r for r in stored.to_pylist()}
    for r in batch.to_pylist():
        if r["id"] not in rows or r["__seq"] > rows[r["id"]]["__seq"]:
            rows[r["id"]] = r
    return pa.Table.from_pylist(list(rows.values()), schema=batch.schema)


# -- SCD2: which changes open a version --------------------------------------------------------
def _versions(rows: list[tuple[int, int, int, str, str, bool]]) -> pa.Table:
    """(id, valid_from, seq, name, city, deleted) rows, chained."""
    table = pa.table(
        {
            "id": [r[0] for r in rows],
            "name": [r[3] for r in rows],
            "city": [r[4] for r in rows],
            "__seq": [r[2].to_bytes(2, "big") for r in rows],
            "__deleted": [r[5] for r in rows],
            "__valid_from": [r[1].to_bytes(2, "big") for r in rows],
            "__valid_to": pa.nulls(len(rows), pa.binary()),
            "__new": [True] * len(rows),
        }
    )
    return chain(table, ["id"])


def _spans(table: pa.Table) -> list[tuple[int, int, int | None, str, str]]:
    out = []
    for r in table.to_pylist():
        to = int.from_bytes(r["__valid_to"], "big") if r["__valid_to"] is not None else None
        name = "<deleted>" if r["__deleted"] else r["name"]
        out.append((r["id"], int.from_bytes(r["__valid_from"], "big"), to, name, r["city"]))
    return sorted(out)


def test_only_changes_to_tracked_columns_open_a_version() -> None:
    """AUTO CDC's SCD2 example re-expressed, history kept for every column but the city: a move
    within the name's version updates that version in place."""
    history_ = _versions(
        [
            (1, 1, 1, "Ines", "Lima", False),
            (1, 4, 4, "Ines", "Cusco", False),  # the city only: in place
            (1, 6, 6, "Ines", "Cusco", True),  # a delete always closes
            (2, 2, 2, "Tom", "Quito", False),
            (2, 5, 5, "Tomas", "Lima", False),
            (2, 3, 3, "Tomas", "Cuenca", False),  # a new name: a version
            (3, 2, 2, "Lu", "Oruro", False),
        ]
    )
    tracked = TableOptions(track_history_except_column_list=("city",)).tracked(history_.column_names, ["id"])
    assert tracked == ["name"]
    assert _spans(chain(coalesce(history_, ["id"], tracked), ["id"])) == [
        (1, 1, 6, "Ines", "Cusco"),
        (1, 6, None, "<deleted>", "Cusco"),
        (2, 2, 3, "Tom", "Quito"),
        (2, 3, None, "Tomas", "Lima"),  # 5 changed only the city: in place, keeping 3
        (3, 2, None, "Lu", "Oruro"),
    ]
    every = TableOptions(track_history_column_list=("name", "city")).tracked(history_.column_names, ["id"])
    assert len(chain(coalesce(history_, ["id"], every), ["id"])) == 7


def test_a_late_event_inside_a_version_updated_in_place_is_chained_before_its_newest_state() -> None:
    stored = _versions([(1, 1, 5, "Ines", "Cusco", False)])  # from 1, updated in place up to 5
    stored = stored.set_column(stored.schema.get_field_index("__new"), "__new", pa.array([False]))
    late = _versions([(1, 3, 3, "Inés", "Lima", False)])
    resumed = resumptions(stored.drop_columns(["__new"]), late.drop_columns(["__new"]), ["id"])
    assert _spans(resumed) == [(1, 5, None, "Ines", "Cusco")]
    resumed = resumed.append_column("__new", pa.array([False]))
    merged = chain(pa.concat_tables([stored, resumed, late]), ["id"])
    assert _spans(chain(coalesce(merged, ["id"], ["name"]), ["id"])) == [
        (1, 1, 3, "Ines", "Cusco"),
        (1, 3, 5, "Inés", "Lima"),
        (1, 5, None, "Ines", "Cusco"),  # the current row is still the newest state
    ]


def test_a_stored_version_a_new_event_joins_to_another_is_marked_for_deletion() -> None:
    stored = _versions([(1, 1, 1, "A", "x", False), (1, 4, 4, "B", "x", False)])
    versions = _versions([(1, 1, 1, "A", "x", False)])
    gone = absorbed(stored.drop_columns(["__new"]), versions, ["id"])
    assert [
        (int.from_bytes(r["__valid_from"], "big"), r["__valid_to"] == r["__valid_from"]) for r in gone.to_pylist()
    ] == [(4, True)]

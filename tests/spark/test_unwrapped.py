"""The Spark sink reads rows flattened by Debezium's ExtractNewRecordState (issue 23, deliverable 3).

Each record here is made twice from one change: as the Debezium envelope, and as the record cdc's
own ExtractNewRecordState (add.fields with op and the source position, rewrite deletes) writes.
The decoder must give both the same key, op and sequence, the flattener the same row, and the
applier the same Delta table under reordering, replays and duplicates; without the fields it
needs, the sink names the add.fields (or delete mode) to set.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api.data import Schema
from cdc_spark.decode import JsonDeserializer, decode_one, flatten
from cdc_spark.decode.events import decode_batches
from cdc_spark.decode.schemas import restore
from cdc_spark.source.reader import ARROW_SCHEMA
from tests.spark.helpers import delta_rows, raw_frame
from tests.spark.unwrap_events import ADD_FIELDS, UnwrappedTable
from tests.support.examples import examples

Change = tuple[str, int, int, int, int]  # (op, key, seq, qty, epoch)

changes = st.lists(
    st.tuples(
        st.sampled_from("crud"), st.integers(1, 5), st.integers(1, 10**6), st.integers(-99, 99), st.integers(0, 3)
    ),
    min_size=1,
    max_size=12,
)


def _raw(records: list[tuple[bytes | None, bytes | None]], topic: str) -> pa.RecordBatch:
    n = len(records)
    cols = [[topic] * n, [0] * n, list(range(n)), [k for k, _ in records], [v for _, v in records], [0] * n]
    return pa.RecordBatch.from_arrays(
        [pa.array(c, f.type) for c, f in zip(cols, ARROW_SCHEMA, strict=True)], schema=ARROW_SCHEMA
    )


@settings(max_examples=examples(60), deadline=None)
@given(events=changes, schemas=st.booleans())
def test_unwrapped_records_decode_like_their_envelopes(events: list[Change], schemas: bool) -> None:
    t = UnwrappedTable("p.db.t", schemas_enable=schemas)
    for op, key, seq, qty, epoch in events:
        envelope = t.event(op, key, {"name": f"n{seq}", "qty": qty}, seq, epoch=epoch)
        unwrapped = t.unwrapped(op, key, {"name": f"n{seq}", "qty": qty}, seq, epoch=epoch)
        assert unwrapped is not None and unwrapped[1] is not None
        want = decode_one(JsonDeserializer(), t.topic, *envelope)
        got = decode_one(JsonDeserializer(), t.topic, *unwrapped)
        assert got == want and got is not None and got[-1] is None


@settings(max_examples=examples(30), deadline=None)
@given(events=changes, schemas=st.booleans(), combine=st.booleans())
def test_unwrapped_winners_flatten_to_the_envelopes_rows(events: list[Change], schemas: bool, combine: bool) -> None:
    """Both flattening paths (Arrow, and row by row after the schema is put back) give the rows
    the envelopes give: the added fields become the sink's own columns, not row columns."""
    cols = {
        "id": Schema.INT32_SCHEMA,
        "name": Schema.OPTIONAL_STRING_SCHEMA,
        "qty": Schema.OPTIONAL_INT64_SCHEMA,
        "__source_table": Schema.OPTIONAL_STRING_SCHEMA,  # a column of the table, not an added field
    }
    t = UnwrappedTable("p.db.t", cols, schemas_enable=schemas)
    rows = [
        (op, key, {"name": f"n{seq}", "qty": qty, "__source_table": "x"}, seq, epoch)
        for op, key, seq, qty, epoch in events
    ]
    flats = []
    for make in (t.event, t.unwrapped):
        records = [make(op, key, row, seq, epoch=epoch) for op, key, row, seq, epoch in rows]  # type: ignore[operator]
        decoded = pa.Table.from_batches(
            list(decode_batches(iter([_raw(records, t.topic)]), JsonDeserializer(), combine=combine))
        )
        ids, marks = decoded["schema_id"].to_pylist(), decoded["value_schema"].to_pylist()
        texts = {sid: text for sid, text in zip(ids, marks, strict=True) if text}
        flat = flatten(t.topic, decoded, texts if combine else None)
        assert flat.table.equals(flatten(t.topic, restore(decoded, texts)).table)
        flats.append(flat)
    assert flats[1].key_columns == flats[0].key_columns == ["id"]
    assert flats[1].table.to_pylist() == flats[0].table.to_pylist()
    assert flats[1].table.schema.names == flats[0].table.schema.names


@pytest.mark.parametrize("schemas", [True, False])
def test_add_fields_prefix_and_bare_names_are_honoured(schemas: bool) -> None:
    smt = {
        "add.fields": "op,file,pos,row,sequence,source.snapshot",
        "add.fields.prefix": "cdc_",
        "delete.tombstone.handling.mode": "rewrite",
    }
    t = UnwrappedTable("p.db.t", schemas_enable=schemas, smt=smt)
    for op in "crud":
        unwrapped = t.unwrapped(op, 3, {"name": "a", "qty": 1}, 77, epoch=2)
        assert unwrapped is not None and b'"cdc_pos"' in (unwrapped[1] or b"")
        want = decode_one(JsonDeserializer(), t.topic, *t.event(op, 3, {"name": "a", "qty": 1}, 77, epoch=2))
        got = decode_one(JsonDeserializer(), t.topic, *unwrapped)
        assert got is not None and want is not None and got[:3] == want[:3] and got[4:] == want[4:]
        assert got[3] is None  # no source.ts_ms added


def test_snapshot_end_marker_survives_unwrapping() -> None:
    from cdc_spark.decode.events import SNAPSHOT_END

    t = UnwrappedTable("p.db.t")
    records = [
        t.unwrapped("r", 1, {"name": "a"}, 5, snapshot="true"),
        t.unwrapped("r", 2, {"name": "b"}, 6, snapshot="last"),
    ]
    decoded = pa.Table.from_batches(list(decode_batches(iter([_raw(records, t.topic)]), JsonDeserializer())))  # type: ignore[arg-type]
    ends = [r for r in decoded.to_pylist() if r["__op"] == SNAPSHOT_END]
    assert len(ends) == 1 and ends[0]["key"] is None and ends[0]["__seq"] == decoded["__seq"][1].as_py()


@pytest.mark.parametrize(
    ("add_fields", "missing"),
    [
        ("", "__op"),
        ("op", "__source_file"),
        ("op,source.file,source.pos", "__source_row, __source_sequence"),
        ("source.file,source.pos,source.row,source.sequence", "__op"),
        ("op,source.file:f,source.pos:p,source.row,source.sequence", "__source_file, __source_pos"),  # renamed
    ],
)
def test_missing_add_fields_are_refused_naming_them(add_fields: str, missing: str) -> None:
    t = UnwrappedTable("p.db.t", smt={"add.fields": add_fields, "delete.tombstone.handling.mode": "rewrite"})
    out = decode_one(JsonDeserializer(), t.topic, *t.unwrapped("u", 1, {"name": "a"}, 5))  # type: ignore[misc]
    assert out is not None and out[0] is None
    error = out[-1]
    assert error is not None and "\n" not in error and missing in error, error
    assert "add.fields=op,source.file,source.pos,source.row,source.sequence" in error
    assert "delete.tombstone.handling.mode=rewrite" in error


def test_a_delete_without_its_position_is_refused_naming_the_delete_mode() -> None:
    """delete.tombstone.handling.mode=tombstone (the default) makes a delete a null value under the
    value schema: nothing to order it by."""
    t = UnwrappedTable("p.db.t", smt={"add.fields": ADD_FIELDS})
    key, value = t.unwrapped("d", 1, {"name": "a"}, 5)  # type: ignore[misc]
    out = decode_one(JsonDeserializer(), t.topic, key, value)
    assert out is not None and out[-1] is not None
    assert "delete.tombstone.handling.mode=rewrite" in out[-1] and "null" in out[-1]
    # delete-to-tombstone: a Kafka tombstone, as after any delete; not a change (validate refuses the mode)
    t = UnwrappedTable(
        "p.db.t", smt={"add.fields": ADD_FIELDS, "delete.tombstone.handling.mode": "delete-to-tombstone"}
    )
    assert decode_one(JsonDeserializer(), t.topic, *t.unwrapped("d", 1, {"name": "a"}, 5)) is None  # type: ignore[misc]


# -- applied to Delta: latest per key, sequence guard, tombstones, replays ------------------------------
def _model(events: list[Change]) -> dict[int, int]:
    last: dict[int, Change] = {}
    for e in sorted(events, key=lambda e: (e[4], e[2])):
        last[e[1]] = e
    return {k: e[3] for k, e in last.items() if e[0] != "d"}


@settings(
    max_examples=examples(5),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_unwrapped_changes_reach_delta_in_sequence_order(spark: Any, data: st.DataObject) -> None:
    """Random histories (distinct positions, some after a binlog lineage change) delivered out of
    order in several batches, with re-deliveries and a replayed batch id: the Delta table ends as
    the last change by sequence, whatever order the batches came in, and a late update never brings
    a deleted row back."""
    n = data.draw(st.integers(2, 14))
    seqs = data.draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n, unique=True))
    events: list[Change] = [
        (
            data.draw(st.sampled_from("cud")),
            data.draw(st.integers(1, 4)),
            s,
            data.draw(st.integers(0, 99)),
            data.draw(st.integers(0, 1)),
        )
        for s in seqs
    ]
    order = data.draw(st.permutations(events))
    cut = data.draw(st.integers(1, n))
    batches = [order[:cut], order[cut:], data.draw(st.lists(st.sampled_from(events), max_size=4))]
    batches = [b for b in batches if b]
    if data.draw(st.booleans()):
        batches.append(batches[-1])  # the same batch id again: a replay after a crash
    ids = list(range(len(batches)))
    if ids[-1] > 0 and batches[-1] is batches[-2]:
        ids[-1] = ids[-2]
    topic = f"p.db.u{uuid.uuid4().hex[:8]}"
    t = UnwrappedTable(topic)
    root = Path(tempfile.mkdtemp(prefix="cdc-unwrap-"))
    from cdc_spark.apply import ChangeApplier

    applier = ChangeApplier({"target": "delta", "path": str(root / "lake")})
    for batch_id, batch in zip(ids, batches, strict=True):
        records = [
            t.unwrapped(op, key, {"name": f"v{seq}", "qty": qty}, seq, epoch=epoch)
            for op, key, seq, qty, epoch in batch
        ]
        applier(raw_frame(spark, topic, [r for r in records if r is not None]), batch_id)
    rows = delta_rows(str(root / "lake" / topic.replace(".", "_")))
    assert {r["id"]: r["qty"] for r in rows if not r["__deleted"]} == _model(events)
    for row in rows[:1]:  # the position fields became the sink's __seq, not columns of their own
        assert {"__op", "__seq"} <= set(row) and not {"__source_file", "__source_pos", "__source_sequence"} & set(row)


@settings(max_examples=examples(30), deadline=None)
@given(events=changes, schemas=st.booleans())
def test_unwrapped_batches_decode_in_arrow_like_record_by_record(events: list[Change], schemas: bool) -> None:
    """A batch of flattened rows is read in Arrow (fast.py), with the same result as the per-record path."""
    from cdc_spark.decode.events import _decode_rows, fast_decode

    t = UnwrappedTable("p.db.t", schemas_enable=schemas)
    records = [
        t.unwrapped(op, key, {"name": f"n{seq}", "qty": qty}, seq, epoch=epoch) for op, key, seq, qty, epoch in events
    ]
    raw = _raw(records, t.topic)  # type: ignore[arg-type]
    fast = fast_decode(raw, schemas)
    assert fast is not None, "the flattened rows went down the per-record path"
    assert fast.equals(_decode_rows(raw, JsonDeserializer(schemas)))
    # an envelope among them: the batch is read record by record, both shapes decoded
    mixed = _raw([*records, t.event("u", 9, {"name": "e", "qty": 1}, 7)], t.topic)  # type: ignore[list-item]
    assert fast_decode(mixed, schemas) is None
    rows = _decode_rows(mixed, JsonDeserializer(schemas)).to_pylist()
    assert all(r["__error"] is None for r in rows) and rows[-1]["key"] == '{"id":9}'


def test_the_sink_stops_on_rows_it_cannot_order_naming_the_fix(spark: Any) -> None:
    """At run time (records written by a producer `cdc validate` never saw): one line with the table,
    the key, the fields missing and the add.fields to set."""
    from cdc_spark.apply import ChangeApplier
    from cdc_spark.apply.errors import PoisonEventError

    topic = f"p.db.m{uuid.uuid4().hex[:8]}"
    t = UnwrappedTable(topic, smt={"add.fields": "op,source.ts_ms", "delete.tombstone.handling.mode": "rewrite"})
    root = Path(tempfile.mkdtemp(prefix="cdc-unwrap-"))
    applier = ChangeApplier({"target": "delta", "path": str(root / "lake")})
    with pytest.raises(PoisonEventError) as caught:
        applier(raw_frame(spark, topic, [t.unwrapped("c", 4, {"name": "a", "qty": 1}, 9)]), 0)  # type: ignore[list-item]
    line = str(caught.value)
    assert "\n" not in line and f"table {topic.replace('.', '_')}, key id=4: " in line, line
    assert "lacks __source_file, __source_pos, __source_row, __source_sequence" in line
    assert "Fix: set add.fields=op,source.file,source.pos,source.row,source.sequence" in line
    assert "fix the producer" not in line
    assert not (root / "lake" / topic.replace(".", "_")).exists()

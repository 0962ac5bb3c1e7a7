"""io.debezium.transforms.ExtractChangedRecordState: Debezium's ExtractChangedRecordStateTest cases,
and the chain the docs suggest with HeaderToValue and ExtractNewRecordState (issue 23)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.envelope import Envelope
from cdc_debezium.transforms.extract_changed_record_state import ExtractChangedRecordState
from tests.debezium_core.transforms.envelopes import (
    ENVELOPE_WITH_DEFAULT,
    ROW_WITH_DEFAULT,
    chain,
    create,
    delete,
    heartbeat,
    row,
    schema_change,
    source,
    tombstone,
    update,
)
from tests.support.examples import examples


def smt(**props: str) -> ExtractChangedRecordState[SourceRecord]:
    out: ExtractChangedRecordState[SourceRecord] = ExtractChangedRecordState()
    out.configure({k.replace("_", "."): v for k, v in props.items()})
    return out


def headers_of(rec: SourceRecord | None) -> dict[str, Any]:
    assert rec is not None
    return {h.key: h.value for h in rec.headers}


def test_update_with_default_values_compares_what_was_written() -> None:
    before = row(name=None, schema=ROW_WITH_DEFAULT)  # null, shown as the default by get()
    after = row(name="default_str", schema=ROW_WITH_DEFAULT)
    rec = update(before, after, envelope=ENVELOPE_WITH_DEFAULT)
    assert headers_of(smt(header_changed_name="Changed").apply(rec)) == {"Changed": ["name"]}


def test_changed_and_unchanged_headers_on_update() -> None:
    out = smt(header_changed_name="Changed", header_unchanged_name="Unchanged").apply(update())
    assert headers_of(out) == {"Changed": ["name"], "Unchanged": ["id"]}
    assert out is not None and out.headers.last_with_name("Changed").schema.name == "Changed"  # type: ignore[union-attr]
    only_changed = smt(header_changed_name="Changed").apply(update())
    assert headers_of(only_changed) == {"Changed": ["name"]}


def test_create_and_delete_get_empty_lists() -> None:
    s = smt(header_changed_name="Changed", header_unchanged_name="Unchanged")
    for rec in (create(), delete()):
        assert headers_of(s.apply(rec)) == {"Changed": [], "Unchanged": []}


def test_no_headers_when_not_configured() -> None:
    for rec in (create(), update(), delete()):
        assert len(smt().apply(rec).headers) == 0  # type: ignore[union-attr]


def test_non_change_events_pass_through() -> None:
    s = smt(header_changed_name="Changed")
    for rec in (tombstone(), heartbeat(), schema_change()):
        assert s.apply(rec) is rec


def test_the_input_record_is_not_modified() -> None:
    rec = update()
    smt(header_changed_name="Changed").apply(rec)
    assert len(rec.headers) == 0


@settings(max_examples=examples(60), deadline=None)
@given(
    before=st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=4, max_size=4),
    after=st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=4, max_size=4),
)
def test_changed_and_unchanged_partition_the_columns(before: list[int | None], after: list[int | None]) -> None:
    builder = SchemaBuilder.struct().name("t.Value").optional()
    names = ["a", "b", "c", "d"]
    for n in names:
        builder.field(n, Schema.OPTIONAL_INT32_SCHEMA)
    schema = builder.build()
    env = Envelope.define("t.Envelope", schema, source().schema)
    b, a = Struct.from_values(schema, list(before)), Struct.from_values(schema, list(after))
    rec = SourceRecord({}, {}, "t", None, None, None, env.schema, env.make("u", b, a, source()))
    got = headers_of(smt(header_changed_name="c", header_unchanged_name="u").apply(rec))
    assert got["c"] == [n for n, x, y in zip(names, before, after, strict=True) if x != y]
    assert got["u"] == [n for n, x, y in zip(names, before, after, strict=True) if x == y]


def test_documented_chain_with_header_to_value_and_unwrap() -> None:
    """changes -> header -> value field -> flattened row carries the changed column names."""
    c = chain(
        {
            "transforms": "changes,tovalue,unwrap",
            "transforms.changes.type": "io.debezium.transforms.ExtractChangedRecordState",
            "transforms.changes.header.changed.name": "Changed",
            "transforms.tovalue.type": "io.debezium.transforms.HeaderToValue",
            "transforms.tovalue.headers": "Changed",
            "transforms.tovalue.fields": "changes",
            "transforms.tovalue.operation": "move",
            "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.unwrap.add.fields": "changes:changed_columns",
        }
    )
    out = c.apply(update())
    assert out.value.to_dict() == {"id": 1, "name": "updatedRecord", "__changed_columns": ["name"]}
    assert len(out.headers) == 0
    created = c.apply(create())
    assert created.value.get("__changed_columns") == []

"""io.debezium.transforms.ExtractNewRecordState: Debezium's ExtractNewRecordStateTest cases and the
event-flattening documentation's examples, re-expressed (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import ConfigException, Headers, Schema, SchemaBuilder, SourceRecord, Struct
from cdc.runtime.plugins import PluginKind, PluginRegistry
from cdc.transforms import build_transformation_chain
from cdc_debezium.transforms.extract_new_record_state import ExtractNewRecordState
from tests.debezium_core.transforms.envelopes import (
    ENVELOPE,
    ENVELOPE_WITH_DEFAULT,
    KEY,
    ROW_WITH_DEFAULT,
    TS_NS,
    create,
    delete,
    header,
    heartbeat,
    record,
    row,
    schema_change,
    source,
    tombstone,
    transaction,
    truncate,
    update,
)
from tests.support.examples import examples


def unwrap(**props: Any) -> ExtractNewRecordState[SourceRecord]:
    smt: ExtractNewRecordState[SourceRecord] = ExtractNewRecordState()
    smt.configure({k.replace("_", "."): v for k, v in props.items()})
    return smt


def mode(name: str, **props: Any) -> ExtractNewRecordState[SourceRecord]:
    return unwrap(**{"delete.tombstone.handling.mode": name}, **props)


def value_of(out: SourceRecord | None) -> Struct:
    assert out is not None and isinstance(out.value, Struct)
    return out.value


# -- the documented example: the envelope becomes its after row -------------------------------
def test_update_becomes_its_after_row() -> None:
    out = unwrap().apply(update())
    assert out is not None
    assert value_of(out).to_dict() == {"id": 1, "name": "updatedRecord"}
    assert out.value_schema == ENVELOPE.value_schema
    assert (out.topic, out.source_partition, out.source_offset) == ("dummy", {"server": "dummy"}, {"pos": 1})


def test_create_row_keeps_the_columns_schema_parameters() -> None:
    out = mode("tombstone").apply(create())
    assert value_of(out).get_without_default("id") == 1
    assert value_of(out).get_without_default("name") == "myRecord"
    assert out is not None and out.value_schema is not None
    assert out.value_schema.field("id").schema.parameters == {"__debezium.source.column.name": "id"}  # type: ignore[union-attr]


# -- tombstones and deletes, per delete.tombstone.handling.mode -------------------------------
@pytest.mark.parametrize("name", ["drop", "tombstone", "rewrite", "delete-to-tombstone"])
def test_tombstones_are_dropped(name: str) -> None:
    assert mode(name).apply(tombstone()) is None


def test_tombstone_is_kept_by_rewrite_with_tombstone() -> None:
    t = tombstone()
    assert mode("rewrite-with-tombstone").apply(t) == t


def test_default_mode_is_tombstone_delete_becomes_null_value_and_tombstone_dropped() -> None:
    smt = unwrap()
    out = smt.apply(delete())
    assert out is not None and out.value is None
    # Debezium keeps the value schema here (the JDBC sink reads a null value as a flattened delete)
    assert out.value_schema == ENVELOPE.value_schema
    assert smt.apply(tombstone()) is None


@pytest.mark.parametrize("name", ["tombstone", "drop", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"])
def test_truncate_is_dropped(name: str) -> None:
    assert mode(name).apply(truncate()) is None


def test_drop_mode_drops_the_delete() -> None:
    assert mode("drop").apply(delete()) is None


def test_rewrite_delete_is_the_before_row_flagged_deleted() -> None:
    out = mode("rewrite").apply(delete())
    assert value_of(out).to_dict() == {"id": 1, "name": "myRecord", "__deleted": "true"}
    assert out is not None and out.value_schema is not None
    assert out.value_schema.field("__deleted").schema == Schema.OPTIONAL_STRING_SCHEMA  # type: ignore[union-attr]


def test_rewrite_create_is_flagged_not_deleted_and_gets_the_op_header() -> None:
    out = mode("rewrite", add_headers="op").apply(create())
    assert value_of(out).get_without_default("__deleted") == "false"
    assert out is not None and len(out.headers) == 1 and header(out, "__op") == "c"


def test_delete_to_tombstone_makes_the_delete_a_real_tombstone() -> None:
    smt = mode("delete-to-tombstone")
    out = smt.apply(delete())
    assert out is not None and out.value is None and out.value_schema is None
    assert smt.apply(tombstone()) is None


def test_rewrite_with_tombstone_adds_headers_to_both() -> None:
    smt = mode("rewrite-with-tombstone", add_headers="op,source.lsn")
    out = smt.apply(delete())
    assert value_of(out).get_without_default("__deleted") == "true"
    assert out is not None and header(out, "__op") == "d" and header(out, "__source_lsn") == 1234
    t = smt.apply(tombstone())
    assert t is not None and t.value is None and header(t, "__op") == "d"
    assert header(t, "__source_lsn") is None


def test_documented_rewrite_example_with_add_fields() -> None:
    # delete.tombstone.handling.mode=rewrite, add.fields=table,lsn: "pk": 2, "cola": null, "__deleted": "true"
    row_schema = (
        SchemaBuilder.struct()
        .name("db.t.Value")
        .optional()
        .field("pk", Schema.INT32_SCHEMA)
        .field("cola", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    from cdc_debezium.envelope import Envelope

    env = Envelope.define("db.t.Envelope", row_schema, source().schema)
    rec = record(env.make("d", Struct(row_schema).put("pk", 2), None, source(table="t"), None, TS_NS), env)
    out = unwrap(delete_tombstone_handling_mode="rewrite", add_fields="table,lsn").apply(rec)
    assert value_of(out).to_dict() == {"pk": 2, "cola": None, "__deleted": "true", "__table": "t", "__lsn": 1234}


def test_rewrite_replace_null_with_default() -> None:
    created = create(row(name=None, schema=ROW_WITH_DEFAULT), envelope=ENVELOPE_WITH_DEFAULT)
    assert value_of(mode("rewrite").apply(created)).get_without_default("name") == "default_str"
    kept = mode("rewrite", replace_null_with_default="false").apply(created)
    assert value_of(kept).get_without_default("name") is None
    # without rewriting the row is passed on as it is
    assert value_of(mode("tombstone").apply(created)).get_without_default("name") is None


# -- legacy keys ------------------------------------------------------------------------------
def test_legacy_defaults_drop_deletes_and_tombstones() -> None:
    smt = unwrap(**{"drop.tombstones": "true"})
    assert smt.apply(delete()) is None and smt.apply(tombstone()) is None


def test_legacy_none_keeps_null_deletes_and_tombstones_when_asked() -> None:
    smt = unwrap(**{"drop.tombstones": "false", "delete.handling.mode": "none"})
    out = smt.apply(delete())
    assert out is not None and out.value is None
    t = tombstone()
    assert smt.apply(t) == t


def test_legacy_rewrite() -> None:
    smt = unwrap(**{"delete.handling.mode": "rewrite"})
    assert value_of(smt.apply(delete())).get_without_default("__deleted") == "true"
    assert value_of(smt.apply(create())).get_without_default("__deleted") == "false"
    assert smt.apply(tombstone()) is None  # drop.tombstones defaults to true


def test_new_key_wins_over_legacy_keys() -> None:
    smt = unwrap(**{"delete.tombstone.handling.mode": "rewrite", "delete.handling.mode": "drop"})
    assert value_of(smt.apply(delete())).get_without_default("__deleted") == "true"


# -- records that are not change events pass through ------------------------------------------
@pytest.mark.parametrize("make", [heartbeat, schema_change], ids=["heartbeat", "schema-change"])
def test_non_envelope_records_pass_unchanged_even_with_headers(make: Any) -> None:
    rec = make()
    out = mode("rewrite", add_headers="op,source.lsn", add_fields="op").apply(rec)
    assert out is rec and len(out.headers) == 0


def test_unnamed_and_schemaless_values_pass_unchanged() -> None:
    unnamed = SchemaBuilder.struct().field("id", Schema.INT8_SCHEMA).build()
    rec = SourceRecord(None, None, "dummy", None, None, None, unnamed, Struct(unnamed).put("id", 1))
    assert unwrap().apply(rec) is rec
    schemaless = SourceRecord(None, None, "dummy", None, None, None, None, {"before": None, "after": {"id": 1}})
    assert unwrap().apply(schemaless) is schemaless


def test_record_headers_are_propagated() -> None:
    rec = create(headers=Headers().add("application/debezium-test-header", "kept"))
    out = unwrap().apply(rec)
    assert out is not None and len(out.headers) == 1 and header(out, "application/debezium-test-header") == "kept"


# -- add.fields / add.headers -------------------------------------------------------------------
def test_add_field_op_and_new_columns_get_their_own_schema() -> None:
    smt = mode("tombstone", add_fields="op")
    assert value_of(smt.apply(create())).get_without_default("__op") == "c"
    wider = SchemaBuilder.struct().name("dummy.Value").optional().field("id", Schema.INT8_SCHEMA)
    wider_schema = wider.field("started_at", Schema.OPTIONAL_INT64_SCHEMA).build()
    from cdc_debezium.envelope import Envelope

    env = Envelope.define("dummy.Envelope", wider_schema, source().schema)
    for ts in (1694587158123, 1694587158789):
        rec = record(env.make("c", None, Struct(wider_schema).put("id", 1).put("started_at", ts), source()), env)
        assert value_of(smt.apply(rec)).to_dict() == {"id": 1, "started_at": ts, "__op": "c"}


def test_add_timestamps_from_the_envelope_and_the_source() -> None:
    out = unwrap(add_fields="ts_ms,source.ts_ms").apply(create())
    assert value_of(out).get_without_default("__ts_ms") == TS_NS // 1_000_000
    assert value_of(out).get_without_default("__source_ts_ms") == 1588252618953


def test_add_fields_with_prefix_resolve_unqualified_names() -> None:
    # lsn is a source field, id a transaction field, op an envelope field
    out = unwrap(add_fields="op , lsn,id", add_fields_prefix="prefix.").apply(update())
    got = value_of(out)
    assert (got.get("prefix.op"), got.get("prefix.lsn"), got.get("prefix.id")) == ("u", 1234, "571")


def test_add_fields_and_headers_with_new_names() -> None:
    smt = unwrap(
        add_fields="op:OP, lsn:LSN, id:ID, source.lsn:source_lsn, transaction.total_order:TOTAL_ORDER",
        add_fields_prefix="",
        add_headers="op, source.lsn:source_lsn, transaction.id:TXN_ID, transaction.total_order:TOTAL_ORDER",
        add_headers_prefix="h.",
    )
    out = smt.apply(update())
    got = value_of(out)
    assert [got.get(n) for n in ("OP", "LSN", "ID", "source_lsn", "TOTAL_ORDER")] == ["u", 1234, "571", 1234, 42]
    assert out is not None and len(out.headers) == 4
    assert [header(out, n) for n in ("h.op", "h.source_lsn", "h.TXN_ID", "h.TOTAL_ORDER")] == ["u", 1234, "571", 42]


def test_missing_transaction_block_adds_a_null_field_and_header() -> None:
    out = unwrap(add_fields="op,lsn,id", add_headers="op,lsn,id").apply(create())
    got = value_of(out)
    assert (got.get("__op"), got.get("__lsn"), got.get("__id")) == ("c", 1234, None)
    assert out is not None and len(out.headers) == 3 and header(out, "__id") is None
    assert out.value_schema is not None and out.value_schema.field("__id").schema.optional  # type: ignore[union-attr]


def test_add_fields_specifying_struct() -> None:
    out = unwrap(add_fields="op,source.lsn,transaction.id,transaction.total_order").apply(update())
    got = value_of(out)
    assert [got.get(n) for n in ("__op", "__source_lsn", "__transaction_id", "__transaction_total_order")] == [
        "u",
        1234,
        "571",
        42,
    ]


def test_unknown_add_fields_are_left_out() -> None:
    out = unwrap(add_fields="notExisting,op:OP", add_fields_prefix="").apply(update())
    assert out is not None and out.value_schema is not None
    assert out.value_schema.field("notExisting") is None and value_of(out).get("OP") == "u"


@pytest.mark.parametrize("name", ["rewrite", "rewrite-with-tombstone"])
def test_add_fields_on_rewritten_deletes(name: str) -> None:
    out = mode(name, add_fields="op,lsn,source.lsn").apply(delete())
    got = value_of(out)
    assert [got.get(n) for n in ("__deleted", "__op", "__lsn", "__source_lsn")] == ["true", "d", 1234, 1234]


def test_add_fields_position_for_ordering() -> None:
    """What a sink needs to order flattened rows: op plus the source position (issue 23, deliverable 3)."""
    out = mode("rewrite", add_fields="op,source.file,source.pos,source.ts_ms").apply(update())
    assert value_of(out).to_dict() == {
        "id": 1,
        "name": "updatedRecord",
        "__deleted": "false",
        "__op": "u",
        "__source_file": "binlog.000003",
        "__source_pos": 4711,
        "__source_ts_ms": 1588252618953,
    }


# -- route.by.field ---------------------------------------------------------------------------
def test_route_by_field() -> None:
    smt = mode("tombstone", route_by_field="name")
    assert smt.apply(create()).topic == "myRecord"  # type: ignore[union-attr]
    assert smt.apply(update()).topic == "updatedRecord"  # type: ignore[union-attr]
    assert smt.apply(delete()).topic == "myRecord"  # type: ignore[union-attr]  # the before row's value


def test_route_by_field_blank_value_keeps_the_topic() -> None:
    out = mode("rewrite", route_by_field="name").apply(create(row(name=" ")))
    assert out is not None and out.topic == "dummy"


# -- drop.fields.* ----------------------------------------------------------------------------
def with_drop_header(rec: SourceRecord, names: list[str]) -> SourceRecord:
    rec.headers.add("drop-fields", names, SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    return rec


def keyed(make: Any) -> SourceRecord:
    rec: SourceRecord = make()
    return record(rec.value, ENVELOPE_WITH_DEFAULT, key=Struct(KEY).put("id", 1), headers=rec.headers)


def creates_and_updates() -> list[SourceRecord]:
    after = row(name=None, schema=ROW_WITH_DEFAULT)
    c = create(after, envelope=ENVELOPE_WITH_DEFAULT)
    u = update(row(name=None, schema=ROW_WITH_DEFAULT), row(schema=ROW_WITH_DEFAULT), envelope=ENVELOPE_WITH_DEFAULT)
    return [c, u, keyed(lambda: c), keyed(lambda: u)]


@pytest.mark.parametrize("from_key", [False, True])
def test_drop_fields_keeping_schemas_compatible_drops_only_optional_fields(from_key: bool) -> None:
    smt = mode("drop", drop_fields_header_name="drop-fields", drop_fields_from_key=str(from_key).lower())
    for rec in creates_and_updates():
        out = smt.apply(with_drop_header(rec, ["id", "name"]))
        assert out is not None and out.value_schema is not None
        assert out.value_schema.field("name") is None and value_of(out).get("id") == 1
        if rec.key is not None:  # a required key column is kept either way
            assert out.key == Struct(KEY).put("id", 1)
        else:
            assert out.key is None and out.key_schema is None
    assert smt.apply(with_drop_header(delete(), ["id", "name"])) is None
    assert smt.apply(with_drop_header(tombstone(), ["id", "name"])) is None


@pytest.mark.parametrize("from_key", [False, True])
def test_drop_fields_without_schema_compatibility_drops_every_named_field(from_key: bool) -> None:
    smt = mode(
        "drop",
        drop_fields_header_name="drop-fields",
        drop_fields_keep_schema_compatible="false",
        drop_fields_from_key=str(from_key).lower(),
    )
    for rec in creates_and_updates():
        out = smt.apply(with_drop_header(rec, ["id", "name"]))
        assert out is not None and out.value_schema is not None
        assert out.value_schema.fields == [] and value_of(out) == Struct(out.value_schema)
        if rec.key is not None:
            assert out.key_schema is not None
            assert (out.key_schema.field("id") is None) == from_key


def test_drop_fields_header_absent_or_empty_changes_nothing() -> None:
    smt = mode("tombstone", drop_fields_header_name="drop-fields")
    plain = smt.apply(create())
    assert plain is not None and value_of(plain).to_dict() == {"id": 1, "name": "myRecord"}
    empty = smt.apply(with_drop_header(create(after=row(schema=ROW_WITH_DEFAULT), envelope=ENVELOPE_WITH_DEFAULT), []))
    assert empty is not None and value_of(empty).to_dict() == {"id": 1, "name": "myRecord"}


# -- config errors ----------------------------------------------------------------------------
def registry_chain(config: dict[str, str]) -> Any:
    registry = PluginRegistry.discover()
    kinds = {"transform": [PluginKind.TRANSFORMATION], "predicate": [PluginKind.PREDICATE]}
    return build_transformation_chain(config, lambda kind, name: registry.resolve(name, kinds[kind]).cls)


def test_registered_under_debeziums_class_name_and_short_name() -> None:
    for name in ("io.debezium.transforms.ExtractNewRecordState", "ExtractNewRecordState"):
        chain = registry_chain({"transforms": "unwrap", "transforms.unwrap.type": name})
        assert isinstance(chain.stages[0].transformation, ExtractNewRecordState)
        assert value_of(chain.apply(create())).to_dict() == {"id": 1, "name": "myRecord"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delete.tombstone.handling.mode", "jbsdfkjsd"),
        ("delete.handling.mode", "keep"),
        ("drop.tombstones", "maybe"),
        ("add.fields", "source.ts_ms:a:b"),
        ("add.headers", "a.b.c"),
    ],
)
def test_bad_config_is_one_line_naming_alias_and_key(key: str, value: str) -> None:
    with pytest.raises(ConfigException) as e:
        registry_chain(
            {
                "transforms": "unwrap",
                "transforms.unwrap.type": "ExtractNewRecordState",
                f"transforms.unwrap.{key}": value,
            }
        )
    assert e.value.name == f"transforms.unwrap.{key}"
    assert f"transforms.unwrap.{key}" in str(e.value) and "\n" not in str(e.value)


def test_mode_is_case_insensitive() -> None:
    assert mode(" Rewrite ").apply(tombstone()) is None
    assert value_of(mode("REWRITE").apply(delete())).get("__deleted") == "true"


# -- randomized: every mode, every op ---------------------------------------------------------
EXPECTED = {  # mode -> (create/update kept, delete outcome, tombstone kept)
    "drop": ("row", None, False),
    "tombstone": ("row", "null", False),
    "rewrite": ("row+flag", "before+flag", False),
    "rewrite-with-tombstone": ("row+flag", "before+flag", True),
    "delete-to-tombstone": ("row", "tombstone", False),
}


@settings(max_examples=examples(60), deadline=None)
@given(
    name=st.sampled_from(sorted(EXPECTED)),
    ids=st.lists(st.integers(-128, 127), min_size=1, max_size=8),
    ops=st.lists(st.sampled_from("cudt"), min_size=1, max_size=8),
)
def test_every_mode_and_op(name: str, ids: list[int], ops: list[str]) -> None:
    smt = mode(name)
    kept_row, on_delete, keep_tombstones = EXPECTED[name]
    for i, op in zip(ids * len(ops), ops, strict=False):
        key = Struct(KEY).put("id", i)
        if op == "c":
            out = smt.apply(record(ENVELOPE.make("c", None, row(i), source(), None, TS_NS), key=key))
            want = {"id": i, "name": "myRecord"} | ({"__deleted": "false"} if kept_row == "row+flag" else {})
            assert value_of(out).to_dict() == want and out is not None and out.key == key
        elif op == "u":
            out = smt.apply(record(ENVELOPE.make("u", row(i), row(i, "x"), source(), transaction(), TS_NS), key=key))
            assert value_of(out).get("name") == "x"
        elif op == "d":
            out = smt.apply(record(ENVELOPE.make("d", row(i), None, source(), None, TS_NS), key=key))
            if on_delete is None:
                assert out is None
            elif on_delete == "before+flag":
                assert value_of(out).to_dict() == {"id": i, "name": "myRecord", "__deleted": "true"}
            else:
                assert out is not None and out.value is None and out.key == key
                assert (out.value_schema is None) == (on_delete == "tombstone")
        else:
            t = tombstone(key)
            assert (smt.apply(t) == t) if keep_tombstones else smt.apply(t) is None

"""io.debezium.transforms.outbox.EventRouter: Debezium's EventRouterTest cases and the
outbox-event-router documentation's example, re-expressed (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import ConnectException, DataException, Schema, SchemaBuilder, SourceRecord, Struct
from cdc.api.data import Type
from cdc_debezium.envelope import Envelope
from cdc_debezium.transforms.outbox_event_router import EventRouter
from tests.debezium_core.transforms.envelopes import (
    TS_NS,
    assert_one_line_config_error,
    chain,
    header,
    heartbeat,
    schema_change,
    source,
)
from tests.support.examples import examples

TS_MS = TS_NS // 1_000_000


def router(**props: Any) -> EventRouter[SourceRecord]:
    smt: EventRouter[SourceRecord] = EventRouter()
    smt.configure(props)
    return smt


def outbox_record(
    op: str = "c",
    event_id: str = "da8d6de6-3b77-45ff-8f44-57db55a7a06c",
    event_type: str = "UserCreated",
    key: str = "10711fa5",
    aggregate: str = "User",
    payload: str | None = "{}",
    extra_schemas: dict[str, Schema] | None = None,
    extra_values: dict[str, Any] | None = None,
) -> SourceRecord:
    builder = (
        SchemaBuilder.struct()
        .name("db.outbox.Value")
        .optional()
        .field("id", Schema.STRING_SCHEMA)
        .field("aggregatetype", Schema.STRING_SCHEMA)
        .field("aggregateid", Schema.STRING_SCHEMA)
        .field("type", Schema.STRING_SCHEMA)
        .field("payload", Schema.OPTIONAL_STRING_SCHEMA)
    )
    for name, schema in (extra_schemas or {}).items():
        builder.field(name, schema)
    row_schema = builder.build()
    row = Struct(row_schema).put("id", event_id).put("aggregatetype", aggregate).put("aggregateid", key)
    row.put("type", event_type).put("payload", payload)
    for name, value in (extra_values or {}).items():
        row.put(name, value)
    env = Envelope.define("db.outbox.Envelope", row_schema, source().schema)
    before, after = (row, None) if op == "d" else ((row, row) if op == "u" else (None, row))
    value = env.make(op, before, after, source(), None, TS_NS)
    return SourceRecord({"server": "db"}, {"pos": 3}, "db.outbox", None, None, None, env.schema, value, None)


def routed(smt: EventRouter[SourceRecord], rec: SourceRecord) -> SourceRecord:
    out = smt.apply(rec)
    assert out is not None
    return out


# -- what is skipped --------------------------------------------------------------------------
def test_skips_tombstones_deletes_and_updates() -> None:
    smt = router()
    assert smt.apply(SourceRecord(None, None, "db.outbox", None, None, "k", None, None)) is None
    assert smt.apply(outbox_record("d")) is None
    assert smt.apply(outbox_record("u")) is None


def test_update_is_fatal_when_configured() -> None:
    with pytest.raises(ConnectException, match="Unexpected update"):
        router(**{"table.op.invalid.behavior": "fatal"}).apply(outbox_record("u"))


@pytest.mark.parametrize("make", [heartbeat, schema_change], ids=["heartbeat", "schema-change"])
def test_non_envelope_records_pass_through(make: Any) -> None:
    rec = make()
    assert router().apply(rec) is rec


def test_unnamed_or_schemaless_values_pass_through() -> None:
    unnamed = SchemaBuilder.struct().field("id", Schema.STRING_SCHEMA).build()
    rec = SourceRecord(None, None, "db.outbox", None, None, None, unnamed, Struct(unnamed).put("id", "x"))
    assert router().apply(rec) is rec
    schemaless = SourceRecord(None, None, "db.outbox", None, None, None, None, {"after": {"id": "x"}})
    assert router().apply(schemaless) is schemaless


# -- the default configuration (the documented example) ---------------------------------------
def test_documented_default_routing() -> None:
    payload = '{"id": 1, "lineItems": [{"id": 1, "item": "Debezium in Action", "quantity": 2}]}'
    out = routed(
        router(),
        outbox_record(event_id="406c07f3-26f0-4eea-a50c-109940064b8f", key="1", aggregate="Order", payload=payload),
    )
    assert out.topic == "outbox.event.Order"
    assert (out.key_schema, out.key) == (Schema.STRING_SCHEMA, "1")
    assert (out.value_schema, out.value) == (Schema.OPTIONAL_STRING_SCHEMA, payload)
    assert [(h.key, h.value) for h in out.headers] == [("id", "406c07f3-26f0-4eea-a50c-109940064b8f")]
    assert out.timestamp == TS_MS
    assert (out.source_partition, out.source_offset) == ({"server": "db"}, {"pos": 3})


def test_snapshot_reads_are_routed_like_inserts() -> None:
    assert routed(router(), outbox_record("r")).topic == "outbox.event.User"


def test_message_key_from_configured_column_and_invalid_key_column() -> None:
    assert routed(router(**{"table.field.event.key": "type"}), outbox_record()).key == "UserCreated"
    with pytest.raises(DataException):
        router(**{"table.field.event.key": "fakefield"}).apply(outbox_record())


def test_timestamp_from_a_configured_column() -> None:
    smt = router(**{"table.field.event.timestamp": "event_timestamp"})
    for name, raw in (
        ("io.debezium.time.Timestamp", 1422226462533),
        ("io.debezium.time.MicroTimestamp", 1422226462533_000),
        ("io.debezium.time.NanoTimestamp", 1422226462533_000_000),
    ):
        schema = SchemaBuilder.int64().name(name).optional().build()
        rec = outbox_record(extra_schemas={"event_timestamp": schema}, extra_values={"event_timestamp": raw})
        assert rec.timestamp is None and routed(smt, rec).timestamp == 1422226462533
    null_ts = outbox_record(
        extra_schemas={"event_timestamp": SchemaBuilder.int64().name("io.debezium.time.Timestamp").optional().build()}
    )
    assert routed(smt, null_ts).timestamp == TS_MS


def test_route_by_field_per_aggregate() -> None:
    smt = router(**{"route.by.field": "aggregatetype"})
    assert routed(smt, outbox_record(aggregate="User")).topic == "outbox.event.User"
    assert routed(smt, outbox_record(event_type="UserUpdate", aggregate="User")).topic == "outbox.event.User"
    assert routed(smt, outbox_record(event_type="AddressCreated", aggregate="Address")).topic == "outbox.event.Address"


def test_topic_regex_and_replacement_in_java_syntax() -> None:
    smt = router(**{"route.topic.regex": "(?<agg>[A-Z])(.*)", "route.topic.replacement": "events.$2-${agg}"})
    assert routed(smt, outbox_record(aggregate="Order")).topic == "events.rder-O"
    # a routed value the regex does not match keeps its name
    assert routed(smt, outbox_record(aggregate="order")).topic == "order"


def test_every_table_field_configurable() -> None:
    smt = router(
        **{
            "table.field.event.id": "event_id",
            "table.field.event.key": "payload_id",
            "table.field.event.type": "event_type",
            "table.field.event.payload": "payload_body",
            "route.by.field": "payload_id",
        }
    )
    row_schema = (
        SchemaBuilder.struct()
        .optional()
        .field("event_id", Schema.STRING_SCHEMA)
        .field("payload_id", Schema.STRING_SCHEMA)
        .field("event_type", Schema.STRING_SCHEMA)
        .field("payload_body", Schema.STRING_SCHEMA)
        .build()
    )
    env = Envelope.define("event.Envelope", row_schema, SchemaBuilder.struct().optional().build())
    row = Struct(row_schema).put("event_id", "da8d").put("payload_id", "10711fa5").put("event_type", "UserCreated")
    row.put("payload_body", "{}")
    out = routed(smt, SourceRecord({}, {}, "db.outbox", None, None, None, env.schema, env.make("c", None, row, None)))
    assert out.value == "{}" and out.topic == "outbox.event.10711fa5"
    assert [(h.key, h.value) for h in out.headers] == [("id", "da8d")]


def test_column_types_are_kept() -> None:
    row_schema = (
        SchemaBuilder.struct()
        .name("db.outbox.Value")
        .optional()
        .field("event_id", Schema.INT32_SCHEMA)
        .field("payload_id", Schema.INT32_SCHEMA)
        .field("my_route_field", Schema.STRING_SCHEMA)
        .field("event_type", Schema.BYTES_SCHEMA)
        .field("payload_body", Schema.BYTES_SCHEMA)
        .field("some_boolean", Schema.BOOLEAN_SCHEMA)
        .build()
    )
    smt = router(
        **{
            "table.field.event.id": "event_id",
            "table.field.event.key": "payload_id",
            "table.field.event.type": "event_type",
            "table.field.event.payload": "payload_body",
            "route.by.field": "my_route_field",
            "table.fields.additional.placement": "some_boolean:envelope:bool",
        }
    )
    env = Envelope.define("db.outbox.Envelope", row_schema, source().schema)
    row = Struct(row_schema).put("event_id", 2).put("payload_id", 1232).put("event_type", b"CoolSchemaCreated")
    row.put("my_route_field", "routename").put("payload_body", b"{}").put("some_boolean", True)
    out = routed(smt, SourceRecord({}, {}, "t", None, None, None, env.schema, env.make("c", None, row, source())))
    assert out.topic == "outbox.event.routename"
    assert (out.key_schema, out.key) == (Schema.INT32_SCHEMA, 1232)
    assert header(out, "id") == 2 and out.headers.last_with_name("id").schema == Schema.INT32_SCHEMA  # type: ignore[union-attr]
    assert out.value_schema is not None and out.value_schema.name == "db.outbox.routename.Value"
    assert out.value_schema.field("payload").schema == Schema.BYTES_SCHEMA  # type: ignore[union-attr]
    assert out.value_schema.field("bool").schema == Schema.BOOLEAN_SCHEMA  # type: ignore[union-attr]
    assert isinstance(out.value, Struct) and out.value.to_dict() == {"payload": b"{}", "bool": True}


# -- additional fields and schema versions ----------------------------------------------------
def test_schema_version_from_a_column() -> None:
    smt = router(
        **{
            "table.field.event.schema.version": "version",
            "table.fields.additional.placement": "type:envelope:eventType",
        }
    )
    extra = {"version": Schema.INT32_SCHEMA}
    v1 = routed(smt, outbox_record(extra_schemas=extra, extra_values={"version": 1}))
    v3 = routed(smt, outbox_record(extra_schemas=extra, extra_values={"version": 3}))
    v1_again = routed(smt, outbox_record(event_id="other", extra_schemas=extra, extra_values={"version": 1}))
    assert (v1.value_schema.version, v3.value_schema.version) == (1, 3)  # type: ignore[union-attr]
    assert v1.value_schema is v1_again.value_schema


def test_no_schema_version_by_default() -> None:
    smt = router(**{"table.fields.additional.placement": "type:envelope:eventType"})
    extra = {"version": Schema.INT32_SCHEMA}
    out = routed(smt, outbox_record(extra_schemas=extra, extra_values={"version": 1}))
    assert out.value_schema is not None and out.value_schema.version is None
    assert routed(router(), outbox_record()).value_schema.version is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("placement", "name"), [("type:envelope", "type"), ("type:envelope:aggregateType", "aggregateType")]
)
def test_type_into_the_envelope(placement: str, name: str) -> None:
    out = routed(router(**{"table.fields.additional.placement": placement}), outbox_record())
    assert isinstance(out.value, Struct) and out.value.get(name) == "UserCreated" and out.value.get("payload") == "{}"


def test_multiple_fields_into_envelope_and_headers() -> None:
    smt = router(
        **{
            "table.fields.additional.placement": "type:envelope:payloadType,aggregateid:envelope:payloadId,"
            "type:header:payloadType"
        }
    )
    out = routed(smt, outbox_record())
    assert isinstance(out.value, Struct)
    assert (out.value.get("payloadType"), out.value.get("payloadId")) == ("UserCreated", "10711fa5")
    assert header(out, "payloadType") == "UserCreated"


def test_partition_from_a_column() -> None:
    smt = router(**{"table.fields.additional.placement": "p:partition"})
    out = routed(smt, outbox_record(extra_schemas={"p": Schema.INT32_SCHEMA}, extra_values={"p": 123}))
    assert out.kafka_partition == 123
    assert routed(router(), outbox_record()).kafka_partition is None


def test_missing_additional_field_ignored_or_fatal() -> None:
    ignoring = router(
        **{
            "table.fields.additional.placement": "nonExistingField:envelope:alias",
            "table.field.additional.missing": "ignore",
        }
    )
    out = routed(ignoring, outbox_record())
    assert isinstance(out.value, Struct) and out.value.schema.field("alias") is None
    with pytest.raises(ConnectException, match="nonExistingField"):
        router(**{"table.fields.additional.placement": "nonExistingField:envelope:alias"}).apply(outbox_record())


# -- empty payloads ---------------------------------------------------------------------------
def test_empty_payload_becomes_a_tombstone_when_configured() -> None:
    props = {"table.fields.additional.placement": "is_deleted:envelope:deleted"}
    extra = ({"is_deleted": Schema.OPTIONAL_BOOLEAN_SCHEMA}, {"is_deleted": True})
    tombstoning = router(**props, **{"route.tombstone.on.empty.payload": "true"})
    kept = routed(tombstoning, outbox_record(payload="{}", extra_schemas=extra[0], extra_values=extra[1]))
    assert isinstance(kept.value, Struct) and kept.value.get("deleted") is True
    for empty in ("", None):
        out = routed(tombstoning, outbox_record(payload=empty, extra_schemas=extra[0], extra_values=extra[1]))
        assert out.value is None and out.value_schema is None and out.key == "10711fa5"
    plain = routed(router(**props), outbox_record(payload="", extra_schemas=extra[0], extra_values=extra[1]))
    assert isinstance(plain.value, Struct) and plain.value.get("deleted") is True and plain.key is not None


# -- table.expand.json.payload ----------------------------------------------------------------
def expanded(payload: str, **props: Any) -> SourceRecord:
    return routed(router(**{"table.expand.json.payload": "true"}, **props), outbox_record(payload=payload))


def test_expand_json_payload() -> None:
    out = expanded(
        '{"fullName": "John Doe", "enabled": true, "rating": 4.9, "age": 42, "pets": ["dog", "cat"], '
        '"petObjects": [{"type": "dog"}, {"type": "cat"}]}'
    )
    schema, value = out.value_schema, out.value
    assert schema is not None and isinstance(value, Struct)
    types = {f.name: f.schema.type for f in schema.fields}
    assert types == {
        "fullName": Type.STRING,
        "enabled": Type.BOOLEAN,
        "rating": Type.FLOAT64,
        "age": Type.INT32,
        "pets": Type.ARRAY,
        "petObjects": Type.ARRAY,
    }
    assert (value.get("fullName"), value.get("enabled"), value.get("rating"), value.get("age")) == (
        "John Doe",
        True,
        4.9,
        42,
    )
    assert value.get("pets") == ["dog", "cat"]
    assert [p.get("type") for p in value.get("petObjects")] == ["dog", "cat"]


def test_expand_json_nested_arrays_where_first_is_empty() -> None:
    out = expanded(
        '{"fullName": "John Doe", "petObjects": [{"type": "dog", "colors": []}, '
        '{"type": "cat", "colors": [{"name": "white"}]}]}'
    )
    pets_schema = out.value_schema.field("petObjects").schema.value_schema  # type: ignore[union-attr]
    assert [f.name for f in pets_schema.fields] == ["type", "colors"]
    assert [f.name for f in pets_schema.field("colors").schema.value_schema.fields] == ["name"]
    pets = out.value.get("petObjects")  # type: ignore[union-attr]
    assert pets[0].get("colors") == [] and pets[1].get("colors")[0].get("name") == "white"


def test_expand_json_drops_empty_arrays_and_nulls_by_default() -> None:
    out = expanded('{"fullName": "John Doe", "petObjects": [{"type": "dog"}], "none": null, "empty": []}')
    assert [f.name for f in out.value_schema.fields] == ["fullName", "petObjects"]  # type: ignore[union-attr]
    kept = expanded(
        '{"none": null, "empty": []}',
        **{
            "table.json.payload.null.behavior": "optional_bytes",
            "table.json.payload.empty.array.behavior": "optional_string",
        },
    )
    fields = {f.name: f.schema for f in kept.value_schema.fields}  # type: ignore[union-attr]
    assert fields["none"] == Schema.OPTIONAL_BYTES_SCHEMA
    assert fields["empty"].type is Type.ARRAY and fields["empty"].value_schema == Schema.OPTIONAL_STRING_SCHEMA


def test_expand_json_array_with_null_first_element() -> None:
    out = expanded('{"fullName": "John Doe", "numbers": [null, 2, 3]}')
    assert out.value_schema.field("numbers").schema.value_schema.type is Type.INT32  # type: ignore[union-attr]
    assert out.value.get("numbers") == [None, 2, 3]  # type: ignore[union-attr]


def test_expand_json_same_shape_same_schema() -> None:
    one = expanded('{"id": "1", "attributes": [{"id": "1", "adr": null, "eans": [{"code": "200"}]}]}')
    two = expanded('{"id": "1", "attributes": [{"id": "1", "adr": null, "eans": [{"code": "200"}, {"code": "300"}]}]}')
    assert one.value_schema == two.value_schema
    assert len(two.value.get("attributes")[0].get("eans")) == 2  # type: ignore[union-attr]


def test_expand_json_with_an_envelope_field() -> None:
    smt = router(**{"table.expand.json.payload": "true", "table.fields.additional.placement": "type:envelope"})
    out = routed(smt, outbox_record(payload='{"fullName": "John Doe"}'))
    assert isinstance(out.value, Struct) and out.value.get("type") == "UserCreated"
    assert out.value.get("payload").to_dict() == {"fullName": "John Doe"}


def test_not_json_or_not_configured_keeps_the_string() -> None:
    payload = '{"fullName": "John Doe", "rating": 4.9, "age": 42}'
    assert routed(router(), outbox_record(payload=payload)).value == payload
    assert expanded("not json").value == "not json"
    assert expanded("{broken").value == "{broken"
    assert routed(router(**{"table.expand.json.payload": "true"}), outbox_record(payload=None)).value is None


@settings(max_examples=examples(40), deadline=None)
@given(
    st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=6),
        st.one_of(
            st.text(max_size=5), st.booleans(), st.integers(-(2**40), 2**40), st.lists(st.integers(0, 9), max_size=3)
        ),
        max_size=6,
    )
)
def test_expand_json_round_trips_flat_documents(document: dict[str, Any]) -> None:
    import json

    out = expanded(json.dumps(document))
    assert isinstance(out.value, Struct)
    want = {k: v for k, v in document.items() if v != []}
    assert out.value.to_dict() == want
    out.value.validate()


# -- config -----------------------------------------------------------------------------------
def test_registered_under_debeziums_class_name() -> None:
    c = chain({"transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter"})
    assert c.apply(outbox_record()).topic == "outbox.event.User"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("route.topic.regex", " [[a-z]"),
        ("route.topic.replacement", "x-${nope}"),
        ("table.fields.additional.placement", "type"),
        ("table.fields.additional.placement", ""),
        ("table.fields.additional.placement", "type:body"),
        ("table.op.invalid.behavior", "invalidOption"),
        ("table.field.additional.missing", "maybe"),
        ("route.tombstone.on.empty.payload", "yes please"),
    ],
)
def test_bad_config_is_one_line_naming_alias_and_key(key: str, value: str) -> None:
    assert_one_line_config_error(
        {"transforms": "outbox", "transforms.outbox.type": "EventRouter", f"transforms.outbox.{key}": value},
        f"transforms.outbox.{key}",
    )

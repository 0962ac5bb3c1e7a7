"""Debezium's documented examples, as tests (issue 23): header-to-value.adoc, timezone-converter.adoc,
filtering.adoc and content-based-routing.adoc (in cdc.expr instead of Groovy), re-expressed with the
records the pages show; and, for every Debezium SMT, what happens to the records that are not row
changes (heartbeats, schema changes, tombstones, truncates) and to deletes, as Debezium's sources
do it. The event-flattening, outbox, topic-routing and event-changes pages have their tests next
to each SMT's own cases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cdc.api import DataException, Headers, Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.envelope import Envelope
from tests.debezium_core.transforms.envelopes import (
    chain,
    create,
    delete,
    heartbeat,
    row,
    schema_change,
    tombstone,
    truncate,
    update,
)

# -- the PostgreSQL customers event the pages show ---------------------------------------------
ZONED = SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").optional().build()
CUSTOMER = (
    SchemaBuilder.struct()
    .name("PostgreSQL_server.public.customers.Value")
    .optional()
    .field("id", Schema.INT32_SCHEMA)
    .field("first_name", Schema.STRING_SCHEMA)
    .field("last_name", Schema.STRING_SCHEMA)
    .field("email", Schema.STRING_SCHEMA)
    .field("created_at", ZONED)
    .field("updated_at", ZONED)
    .field("deleted_at", ZONED)
    .build()
)
PG_SOURCE = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.postgresql.Source")
    .field("version", Schema.STRING_SCHEMA)
    .field("connector", Schema.STRING_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("ts_ms", Schema.INT64_SCHEMA)
    .field("snapshot", Schema.OPTIONAL_STRING_SCHEMA)
    .field("db", Schema.STRING_SCHEMA)
    .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
    .field("schema", Schema.STRING_SCHEMA)
    .field("table", Schema.STRING_SCHEMA)
    .field("txId", Schema.OPTIONAL_INT64_SCHEMA)
    .field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .field("xmin", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)
PG_ENVELOPE = Envelope.define("PostgreSQL_server.public.customers.Envelope", CUSTOMER, PG_SOURCE)
SOURCE_VALUES = {
    "version": "2.1.3.Final",
    "connector": "postgresql",
    "name": "PostgreSQL_server",
    "ts_ms": 1559033904863,
    "snapshot": "true",
    "db": "postgres",
    "sequence": '["24023119","24023128"]',
    "schema": "public",
    "table": "customers",
    "txId": 555,
    "lsn": 24023128,
    "xmin": None,
}
CREATED_AT = "2011-01-11T16:40:30.123456789+00:00"


def anne(headers: Headers | None = None, **times: str) -> SourceRecord:
    after = Struct(CUSTOMER).put("id", 1).put("first_name", "Anne").put("last_name", "Kretchmar")
    after.put("email", "annek@noanswer.org")
    for name, value in times.items():
        after.put(name, value)
    source = Struct(PG_SOURCE)
    for name, value in SOURCE_VALUES.items():
        source.put(name, value)
    value = PG_ENVELOPE.make("c", None, after, source, None, 1559033904863741697)
    return SourceRecord(
        {"server": "PostgreSQL_server"},
        {"lsn": 24023128},
        "PostgreSQL_server.public.customers",
        None,
        None,
        None,
        PG_ENVELOPE.schema,
        value,
        None,
        headers,
    )


def one(config: dict[str, str], record: SourceRecord) -> SourceRecord | None:
    return chain({"transforms": "t", **{f"transforms.t.{k}": v for k, v in config.items()}}).apply(record)


def value_of(record: SourceRecord | None) -> Struct:
    assert record is not None and isinstance(record.value, Struct)
    record.value.validate()
    return record.value


# -- header-to-value.adoc ------------------------------------------------------------------------
def test_header_to_value_documented_move() -> None:
    headers = Headers().add("header_x", 0, Schema.INT32_SCHEMA)
    headers.add("event_timestamp", 1626102708861, Schema.INT64_SCHEMA).add("key", 100, Schema.INT32_SCHEMA)
    record = anne(headers)
    out = one(
        {
            "type": "io.debezium.transforms.HeaderToValue",
            "headers": "event_timestamp,key",
            "fields": "timestamp,source.id",
            "operation": "move",
        },
        record,
    )
    value = value_of(out)
    # The page's configuration names the field `timestamp` (its output shows `event_timestamp`:
    # the page contradicts itself; the configuration is what the SMT follows).
    assert value.get("timestamp") == 1626102708861
    assert value.get("source").to_dict() == {**SOURCE_VALUES, "id": 100}
    assert value.get("after").to_dict() == value_of(record).get("after").to_dict()
    assert (value.get("op"), value.get("ts_ms")) == ("c", 1559033904863)
    assert [(h.key, h.value) for h in out.headers] == [("header_x", 0)]  # type: ignore[union-attr]
    assert [h.key for h in record.headers] == ["header_x", "event_timestamp", "key"]  # the input is untouched


# -- timezone-converter.adoc ---------------------------------------------------------------------
TZ = "io.debezium.transforms.TimezoneConverter"


def test_timezone_converter_documented_basic_configuration() -> None:
    out = one({"type": TZ, "converted.timezone": "Pacific/Easter"}, anne(created_at=CREATED_AT))
    after = value_of(out).get("after")
    assert after.get("created_at") == "2011-01-11T11:40:30.123456789-05:00"
    assert after.get("first_name") == "Anne" and after.get("updated_at") is None


def test_timezone_converter_documented_include_list() -> None:
    record = anne(created_at=CREATED_AT, updated_at=CREATED_AT, deleted_at=CREATED_AT)
    config = {
        "type": TZ,
        "converted.timezone": "+05:30",
        "include.list": "source:customers:created_at,customers:updated_at",
    }
    after = value_of(one(config, record)).get("after")
    converted = "2011-01-11T22:10:30.123456789+05:30"
    assert (after.get("created_at"), after.get("updated_at"), after.get("deleted_at")) == (
        converted,
        converted,
        CREATED_AT,
    )


def test_timezone_converter_documented_exclude_list() -> None:
    record = anne(created_at=CREATED_AT, updated_at=CREATED_AT)
    config = {"type": TZ, "converted.timezone": "+05:30", "exclude.list": "source:customers:updated_at"}
    after = value_of(one(config, record)).get("after")
    assert (after.get("created_at"), after.get("updated_at")) == ("2011-01-11T22:10:30.123456789+05:30", CREATED_AT)


# -- filtering.adoc and content-based-routing.adoc -----------------------------------------------
SCRIPTED = [create(row(2)), update(row(2), row(2, "x")), update(row(1), row(1, "x")), delete(row(2))]


@pytest.mark.parametrize(
    "condition",
    [
        "value.op == 'u' && value.before.id == 2",  # the page's Groovy condition
        "value.get('op') == 'u' && value.get('before').get('id') == 2",  # the page's JavaScript one
    ],
)
def test_filter_documented_condition_keeps_only_updates_of_id_2(condition: str) -> None:
    config = {"type": "io.debezium.transforms.Filter", "language": "cdc.expr", "condition": condition}
    kept = [r for r in SCRIPTED if one(config, r) is not None]
    assert kept == [SCRIPTED[1]]


def test_filter_applied_selectively_leaves_other_messages_alone() -> None:
    """The page's advice: a predicate keeps heartbeats, tombstones and schema changes, which have
    no `op`, away from the condition."""
    config = {
        "transforms": "filter",
        "transforms.filter.type": "io.debezium.transforms.Filter",
        "transforms.filter.language": "cdc.expr",
        "transforms.filter.condition": "value.op == 'u' && value.before.id == 2",
        "transforms.filter.predicate": "changes",
        "transforms.filter.negate": "false",
        "predicates": "changes,tombstones",
        "predicates.changes.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.changes.pattern": "dummy",
        "predicates.tombstones.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
    }
    smt = chain(config)
    hb, ddl = heartbeat(), schema_change()
    ddl = ddl.new_record("dummy-ddl", None, ddl.key_schema, ddl.key, ddl.value_schema, ddl.value, None)
    for record in (hb, ddl, tombstone()):
        assert smt.apply(record) is record
    assert smt.apply(SCRIPTED[0]) is None and smt.apply(SCRIPTED[1]) is SCRIPTED[1]


def test_content_based_router_documented_expression() -> None:
    config = {
        "type": "io.debezium.transforms.ContentBasedRouter",
        "language": "cdc.expr",
        "topic.expression": "value.op == 'u' ? 'updates' : null",
    }
    topics = [one(config, r).topic for r in SCRIPTED]  # type: ignore[union-attr]
    assert topics == ["dummy", "updates", "updates", "dummy"]


# -- records that are not row changes, and deletes, through every Debezium SMT -------------------
def same(record: SourceRecord) -> Callable[[SourceRecord | None], bool]:
    def check(out: SourceRecord | None) -> bool:
        return out is not None and (out.topic, out.kafka_partition, out.key, out.value, list(out.headers)) == (
            record.topic,
            record.kafka_partition,
            record.key,
            record.value,
            list(record.headers),
        )

    return check


def dropped(_record: SourceRecord) -> Callable[[SourceRecord | None], bool]:
    return lambda out: out is None


def null_value(record: SourceRecord) -> Callable[[SourceRecord | None], bool]:
    return lambda out: out is not None and out.value is None and out.key == record.key and out.topic == record.topic


def rerouted(record: SourceRecord) -> Callable[[SourceRecord | None], bool]:
    """ByLogicalTableRouter: the logical topic; a non-envelope value kept as it is."""
    return lambda out: out is not None and out.topic == "logical" and out.value is record.value


def routed_envelope(record: SourceRecord) -> Callable[[SourceRecord | None], bool]:
    """ByLogicalTableRouter: an envelope is rebuilt under the logical topic's schema names."""

    def check(out: SourceRecord | None) -> bool:
        value, original = value_of(out), value_of(record)
        return (
            out.topic == "logical"  # type: ignore[union-attr]
            and value.schema.name == "logical.Envelope"
            and value.get("op") == original.get("op")
            and _as_dict(value.get("before")) == _as_dict(original.get("before"))
        )

    return check


def _as_dict(row: Struct | None) -> dict[str, Any] | None:
    return None if row is None else row.to_dict()


def partitioned(record: SourceRecord) -> Callable[[SourceRecord | None], bool]:
    """PartitionRouting of a delete hashes the `before` row (change.* means before for deletes)."""
    # before.id is the INT8 1: Java's Byte.hashCode() is 1, and 1 % partition.topic.num=4 is 1.
    return lambda out: out is not None and out.kafka_partition == 1 and out.value is record.value


def empty_change_headers(record: SourceRecord) -> Callable[[SourceRecord | None], bool]:
    """ExtractChangedRecordState adds its headers to every change event, empty unless an update
    ("to be consistent with header management", Debezium's comment)."""

    def check(out: SourceRecord | None) -> bool:
        return out is not None and [(h.key, h.value) for h in out.headers] == [("changed", [])]

    return check


KINDS: dict[str, Callable[[], SourceRecord]] = {
    "heartbeat": heartbeat,
    "schema-change": schema_change,
    "tombstone": tombstone,
    "truncate": truncate,
    "delete": delete,
}
# Per SMT: its config and, per kind of record, what Debezium's apply() does with it.
MATRIX: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "ExtractNewRecordState": (
        {"type": "io.debezium.transforms.ExtractNewRecordState"},
        {"heartbeat": same, "schema-change": same, "tombstone": dropped, "truncate": dropped, "delete": null_value},
    ),
    "EventRouter": (
        {"type": "io.debezium.transforms.outbox.EventRouter"},
        {"heartbeat": same, "schema-change": same, "tombstone": dropped, "truncate": dropped, "delete": dropped},
    ),
    "ByLogicalTableRouter": (
        {"type": "io.debezium.transforms.ByLogicalTableRouter", "topic.regex": "dummy", "topic.replacement": "logical"},
        {
            "heartbeat": same,
            "schema-change": rerouted,
            "tombstone": rerouted,
            "truncate": routed_envelope,
            "delete": routed_envelope,
        },
    ),
    "HeaderToValue": (
        {"type": "io.debezium.transforms.HeaderToValue", "headers": "h", "fields": "f", "operation": "copy"},
        {"heartbeat": same, "schema-change": same, "tombstone": same, "truncate": same, "delete": same},
    ),
    "PartitionRouting": (
        {
            "type": "io.debezium.transforms.partitions.PartitionRouting",
            "partition.payload.fields": "change.id",
            "partition.topic.num": "4",
        },
        {"heartbeat": same, "schema-change": same, "tombstone": same, "truncate": same, "delete": partitioned},
    ),
    "TimezoneConverter": (
        {"type": TZ, "converted.timezone": "+05:30"},
        {"heartbeat": same, "schema-change": same, "tombstone": same, "truncate": same, "delete": same},
    ),
    "ExtractChangedRecordState": (
        {"type": "io.debezium.transforms.ExtractChangedRecordState", "header.changed.name": "changed"},
        {
            "heartbeat": same,
            "schema-change": same,
            "tombstone": same,
            "truncate": empty_change_headers,
            "delete": empty_change_headers,
        },
    ),
}


@pytest.mark.parametrize(
    ("smt", "kind"), [(s, k) for s in MATRIX for k in KINDS], ids=[f"{s}-{k}" for s in MATRIX for k in KINDS]
)
def test_records_that_are_not_row_changes_and_deletes(smt: str, kind: str) -> None:
    config, expected = MATRIX[smt]
    record = KINDS[kind]()
    out = one(config, record)
    assert expected[kind](record)(out), (smt, kind, out)


def test_header_to_value_adds_to_any_struct_value_like_debezium() -> None:
    """Debezium's HeaderToValue does not look for an envelope: a heartbeat carrying the header gets
    the field too; a tombstone carrying it stays a tombstone."""
    config = {"type": "io.debezium.transforms.HeaderToValue", "headers": "h", "fields": "f", "operation": "move"}
    hb = heartbeat()
    hb = hb.new_record(hb.topic, None, hb.key_schema, hb.key, hb.value_schema, hb.value, None, Headers().add("h", "v"))
    value = value_of(one(config, hb))
    assert (value.get("ts_ms"), value.get("f")) == (1, "v")
    tomb = tombstone()
    tomb = tomb.new_record(tomb.topic, None, None, None, None, None, None, Headers().add("h", "v"))
    out = one(config, tomb)
    assert out is not None and out.value is None and [h.key for h in out.headers] == ["h"]


@pytest.mark.parametrize("make", [heartbeat, schema_change], ids=["heartbeat", "schema-change"])
@pytest.mark.parametrize(
    ("key", "expression"),
    [("condition", "value.op == 'u'"), ("topic.expression", "value.op == 'u' ? 'updates' : null")],
)
def test_scripted_smts_without_a_predicate_fail_on_messages_without_op(
    make: Callable[[], SourceRecord], key: str, expression: str
) -> None:
    """As the pages warn: without a predicate, a heartbeat or schema change reaches the expression
    and fails on the missing `op` (Debezium's Struct.get raises the same way), naming the
    expression and the topic."""
    smt = "Filter" if key == "condition" else "ContentBasedRouter"
    record = make()
    with pytest.raises(DataException) as e:
        one({"type": f"io.debezium.transforms.{smt}", "language": "cdc.expr", key: expression}, record)
    assert expression in str(e.value) and record.topic in str(e.value) and "'op'" in str(e.value)

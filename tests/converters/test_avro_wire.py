"""AvroConverter against clients nobody here wrote: confluent-kafka's AvroDeserializer reads what we
write, and we read what its AvroSerializer writes; the registered schema of Debezium's `customers`
example is the one Debezium + Confluent register; bad input fails with one line."""

from __future__ import annotations

import datetime
import decimal
import itertools
import json
import socket
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cdc.api import Schema, SchemaBuilder, Struct, Type
from cdc.api.errors import ConfigException, DataException, RetriableException
from cdc.converters.avro import AvroConverter
from cdc_debezium.envelope import Envelope
from cdc_mysql.source_info import source_schema
from tests.converters.avro_compare import confluent_decode, confluent_encode, plain, same
from tests.converters.avro_strategies import converter, mock_registry, schemas, values
from tests.support.examples import examples

_topics = itertools.count(1)


@st.composite
def record(draw: Any) -> tuple[Schema, Any]:
    # decimals within their Avro precision, as any Avro reader requires
    schema = draw(schemas(max_leaves=10))
    return schema, draw(values(schema, nullable=False))


@settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(record())
def test_confluent_avro_deserializer_reads_what_we_write(case: tuple[Schema, Any]) -> None:
    schema, value = case
    registry = mock_registry()
    topic = f"wire{next(_topics)}"
    data = converter(registry).from_connect_data(topic, schema, value)
    # confluent-kafka's deserializer refuses a record whose Avro body is empty (a struct without
    # fields): its own framing check, not a property of what we write.
    assume(len(data) > 5)
    # confluent-kafka-python reads a top-level `bytes` schema as the raw payload, without Avro's
    # length prefix (its own quirk; Java's KafkaAvroDeserializer decodes it as Avro, as we write it).
    assume(schema.type is not Type.BYTES or schema.optional)
    decoded = confluent_decode(registry, topic, data)
    assert same(decoded, plain(schema, value)), (decoded, plain(schema, value))


CONFLUENT_SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "shop.v1",
    "doc": "an order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "small", "type": "int", "doc": "a number"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "tag", "type": {"type": "fixed", "name": "Tag", "size": 2}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "qty", "type": "int", "default": 1},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "n", "type": ["null", "int"], "default": None}]}}},
        {"name": "first", "type": ["null", "Line"], "default": None},
        {"name": "attrs", "type": {"type": "map", "values": "double"}},
        {"name": "blob", "type": "bytes"},
        {"name": "ok", "type": "boolean"},
        {"name": "ratio", "type": "float"},
    ],
}  # fmt: skip


def test_we_read_what_the_confluent_avro_serializer_writes() -> None:
    registry = mock_registry()
    ref = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    order = {
        "id": 2**40, "small": -3, "status": "PAID", "tag": b"ab", "price": decimal.Decimal("1234567.89"),
        "day": datetime.date(2024, 2, 29), "at": datetime.time(13, 14, 15, 123000),
        "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.UTC),
        "ts_us": datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC), "ref": str(ref),
        "note": None, "qty": 4, "lines": [{"sku": "x", "n": 2}, {"sku": "y", "n": None}],
        "first": {"sku": "x", "n": 2}, "attrs": {"a": 0.5}, "blob": b"\x00\xff", "ok": True, "ratio": 0.25,
    }  # fmt: skip
    data = confluent_encode(registry, json.dumps(CONFLUENT_SCHEMA), "orders", order)
    back = converter(registry).to_connect_data("orders", data)
    s = back.schema
    assert (s.name, s.version) == ("shop.v1.Order", 1)  # the registry's version, as Confluent's AvroData
    assert s.parameters == {
        "io.confluent.connect.avro.record.doc": "an order",
        "io.confluent.connect.avro.field.doc.small": "a number",
    }
    assert s.field("status").schema.parameters == {
        "io.confluent.connect.avro.Enum": "shop.v1.Status",
        "io.confluent.connect.avro.Enum.NEW": "NEW",
        "io.confluent.connect.avro.Enum.PAID": "PAID",
    }
    assert s.field("tag").schema.parameters == {"connect.fixed.size": "2"}
    assert s.field("price").schema.parameters == {"scale": "2", "connect.decimal.precision": "9"}
    assert s.field("first").schema.optional and s.field("first").schema.name == "shop.v1.Line"
    assert s.field("qty").schema.default_value == 1
    assert s.field("qty").schema.parameters == {"io.confluent.connect.avro.field.default": "true"}
    v = back.value
    expected = {**order, "ts_us": 1704164645678901, "ref": str(ref)}
    for name, want in expected.items():
        got = v.get(name)
        got = got.to_dict() if isinstance(got, Struct) else got
        if name == "lines":
            got = [x.to_dict() for x in got]
        assert got == want, name
    # ... and what we read writes back (under its own schema: connect.* properties added, the enum a
    # string, as Confluent's converter without enhanced.avro.schema.support) as confluent-kafka wrote it
    ours = converter(registry).from_connect_data("orders", s, v)
    assert confluent_decode(registry, "orders", ours) == {**order, "ts_us": expected["ts_us"]}


def test_enhanced_avro_schema_support_writes_enums_back_as_enums() -> None:
    registry = mock_registry()
    schema = {"type": "record", "name": "R", "namespace": "n", "fields": [
        {"name": "s", "type": {"type": "enum", "name": "S", "symbols": ["A", "B"]}}]}  # fmt: skip
    data = confluent_encode(registry, json.dumps(schema), "e", {"s": "B"})
    c = converter(registry, **{"enhanced.avro.schema.support": "true"})
    back = c.to_connect_data("e", data)
    avro = c.avro_data.from_connect_schema(back.schema)
    assert avro["fields"][0]["type"]["type"] == "enum" and avro["fields"][0]["type"]["symbols"] == ["A", "B"]
    again = c.from_connect_data("e", back.schema, back.value)
    assert confluent_decode(registry, "e", again) == {"s": "B"}


# Debezium's tutorial table (debezium-examples, inventory.customers), as Debezium 2.6+ with Confluent's
# AvroConverter registers it: the envelope record in the topic's namespace, `Value` defined in `before`
# and referenced in `after`, `Source` in io.debezium.connector.mysql, the `event.block` transaction
# record, optional fields as ["null", T] with default null, the snapshot enum as [T, "null"] with its
# default, connect.name/connect.version/connect.parameters/connect.default as AvroData writes them.
def _customers_expected(source_fields: list[dict[str, Any]]) -> dict[str, Any]:
    opt = lambda t: {"type": ["null", t], "default": None}  # noqa: E731
    return {
        "type": "record",
        "name": "Envelope",
        "namespace": "dbserver1.inventory.customers",
        "fields": [
            {"name": "before", **opt({
                "type": "record", "name": "Value", "fields": [
                    {"name": "id", "type": "int"}, {"name": "first_name", "type": "string"},
                    {"name": "last_name", "type": "string"}, {"name": "email", "type": "string"}],
                "connect.name": "dbserver1.inventory.customers.Value"})},
            {"name": "after", **opt("Value")},
            {"name": "source", "type": {
                "type": "record", "name": "Source", "namespace": "io.debezium.connector.mysql",
                "fields": source_fields, "connect.version": 1, "connect.name": "io.debezium.connector.mysql.Source"}},
            {"name": "transaction", **opt({
                "type": "record", "name": "block", "namespace": "event", "fields": [
                    {"name": "id", "type": "string"}, {"name": "total_order", "type": "long"},
                    {"name": "data_collection_order", "type": "long"}],
                "connect.version": 1, "connect.name": "event.block"})},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", **opt("long")},
            {"name": "ts_us", **opt("long")},
            {"name": "ts_ns", **opt("long")},
        ],
        "connect.version": 2,
        "connect.name": "dbserver1.inventory.customers.Envelope",
    }  # fmt: skip


SNAPSHOT_ALLOWED = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
MYSQL_SOURCE_FIELDS: list[dict[str, Any]] = [
    {"name": "version", "type": "string"},
    {"name": "connector", "type": "string"},
    {"name": "name", "type": "string"},
    {"name": "ts_ms", "type": "long"},
    {"name": "snapshot", "type": [{
        "type": "string", "connect.version": 1,
        "connect.parameters": {"allowed": SNAPSHOT_ALLOWED},
        "connect.default": "false", "connect.name": "io.debezium.data.Enum"}, "null"], "default": "false"},
    {"name": "db", "type": "string"},
    {"name": "sequence", "type": ["null", "string"], "default": None},
    {"name": "ts_us", "type": ["null", "long"], "default": None},
    {"name": "ts_ns", "type": ["null", "long"], "default": None},
    {"name": "table", "type": ["null", "string"], "default": None},
    {"name": "server_id", "type": "long"},
    {"name": "gtid", "type": ["null", "string"], "default": None},
    {"name": "file", "type": "string"},
    {"name": "pos", "type": "long"},
    {"name": "row", "type": "int"},
    {"name": "thread", "type": ["null", "long"], "default": None},
    {"name": "query", "type": ["null", "string"], "default": None},
]  # fmt: skip


def customers_schemas() -> tuple[Schema, Schema]:
    value = (
        SchemaBuilder.struct()
        .name("dbserver1.inventory.customers.Value")
        .optional()
        .field("id", Schema.INT32_SCHEMA)
        .field("first_name", Schema.STRING_SCHEMA)
        .field("last_name", Schema.STRING_SCHEMA)
        .field("email", Schema.STRING_SCHEMA)
        .build()
    )
    key = SchemaBuilder.struct().name("dbserver1.inventory.customers.Key").field("id", Schema.INT32_SCHEMA).build()
    return key, Envelope.define("dbserver1.inventory.customers.Envelope", value, source_schema("mysql")).schema


def test_customers_example_registers_the_schemas_debezium_and_confluent_register() -> None:
    key, envelope = customers_schemas()
    registry = mock_registry()
    keys, values_ = converter(registry, is_key=True), converter(registry)
    value = Struct(envelope.field("after").schema)
    value.put("id", 1004).put("first_name", "Anne").put("last_name", "Kretchmar").put("email", "annek@noanswer.org")
    src = Struct(envelope.field("source").schema)
    for k, v in {"version": "3.0.0.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": 1, "db": "inventory",
                 "snapshot": "true", "table": "customers", "server_id": 0, "file": "mysql-bin.000003", "pos": 154,
                 "row": 0}.items():  # fmt: skip
        src.put(k, v)
    event = Struct(envelope).put("after", value).put("source", src).put("op", "r").put("ts_ms", 1486500577691)
    key_bytes = keys.from_connect_data("dbserver1.inventory.customers", key, Struct(key).put("id", 1004))
    value_bytes = values_.from_connect_data("dbserver1.inventory.customers", envelope, event)

    assert sorted(registry.get_subjects()) == [
        "dbserver1.inventory.customers-key",
        "dbserver1.inventory.customers-value",
    ]
    registered = json.loads(registry.get_latest_version("dbserver1.inventory.customers-value").schema.schema_str)
    assert registered == _customers_expected(MYSQL_SOURCE_FIELDS)
    registered_key = json.loads(registry.get_latest_version("dbserver1.inventory.customers-key").schema.schema_str)
    assert registered_key == {
        "type": "record",
        "name": "Key",
        "namespace": "dbserver1.inventory.customers",
        "fields": [{"name": "id", "type": "int"}],
        "connect.name": "dbserver1.inventory.customers.Key",
    }
    decoded = confluent_decode(registry, "dbserver1.inventory.customers", value_bytes)
    assert decoded["after"] == {
        "id": 1004,
        "first_name": "Anne",
        "last_name": "Kretchmar",
        "email": "annek@noanswer.org",
    }
    assert decoded["before"] is None and decoded["op"] == "r" and decoded["source"]["snapshot"] == "true"
    assert confluent_decode(registry, "dbserver1.inventory.customers", key_bytes, is_key=True) == {"id": 1004}


# -- one-line errors --------------------------------------------------------------------------------
def test_no_registry_url_and_none_injected() -> None:
    c = AvroConverter()
    c.configure({}, False)
    schema = SchemaBuilder.struct().name("a.b.V").field("x", Schema.INT32_SCHEMA).build()
    with pytest.raises(ConfigException) as e:
        c.from_connect_data("t", schema, Struct(schema).put("x", 1))
    assert str(e.value) == (
        "AvroConverter: schema.registry.url is not set; set it to your Schema Registry"
        " (or use transport=embedded, whose worker serves one)"
    )


def test_unreachable_registry_names_the_url() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    url = f"http://127.0.0.1:{port}"
    c = AvroConverter()
    c.configure({"schema.registry.url": url}, False)
    schema = SchemaBuilder.struct().name("a.b.V").field("x", Schema.INT32_SCHEMA).build()
    with pytest.raises(RetriableException) as e:
        c.from_connect_data("orders", schema, Struct(schema).put("x", 1))
    message = str(e.value)
    assert f"Schema Registry at {url} is unreachable" in message and "topic orders" in message
    assert "\n" not in message
    with pytest.raises(RetriableException, match="unreachable while reading schema id 7"):
        c.to_connect_data("orders", b"\x00\x00\x00\x00\x07\x02")


def test_unknown_schema_id_names_the_id_and_the_topic() -> None:
    c = converter()
    with pytest.raises(DataException) as e:
        c.to_connect_data("shop.orders", b"\x00\x00\x00\x01\x00\x02")
    message = str(e.value)
    assert "schema id 256 is unknown to the Schema Registry" in message and "topic shop.orders" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        (b'{"schema":{"type":"struct"},"payload":{}}', "7b 22 73 63 68 65 6d 61"),
        (b"\x01\x00\x00\x00\x01\x02", "01 00 00 00 01 02"),
        (b"\x00\x00", "00 00"),
        (b"", "none"),
    ],
)
def test_non_avro_records_name_the_topic_and_show_the_first_bytes(data: bytes, shown: str) -> None:
    with pytest.raises(DataException) as e:
        converter().to_connect_data("shop.orders", data)
    message = str(e.value)
    assert message.startswith("AvroConverter: the record in topic shop.orders is not Confluent Avro")
    assert shown in message and "\n" not in message


def test_schemaless_values_and_broken_values_are_one_line_errors() -> None:
    c = converter()
    with pytest.raises(DataException, match=r"topic t has no schema \(a schemaless dict\)"):
        c.from_connect_data("t", None, {"a": 1})
    schema = SchemaBuilder.struct().name("a.b.V").field("x", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match=r"field 'x' of a.b.V is required but null \(topic t\)"):
        c.from_connect_data("t", schema, Struct.from_values(schema, [None]))
    clash = (
        SchemaBuilder.struct()
        .name("a.b.V")
        .field("p", SchemaBuilder.struct().name("a.b.Same").field("x", Schema.INT32_SCHEMA).build())
        .field("q", SchemaBuilder.struct().name("a.b.Same").field("y", Schema.INT32_SCHEMA).build())
        .build()
    )
    with pytest.raises(DataException, match=r"two different schemas are named 'a.b.Same'"):
        c.from_connect_data("t", clash, None or Struct(clash))

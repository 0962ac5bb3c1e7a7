"""AvroConverter round trips: to_connect_data(from_connect_data(x)) == x for generated Connect schemas
and values (every Connect type, optional and required, defaults, nested structs, arrays, maps with
string and non-string keys, Debezium's semantic types), and the registry holding each schema once."""

from __future__ import annotations

import datetime
import decimal
import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from cdc.api.errors import DataException
from cdc.api.sensitive import HIDDEN, mask_config
from cdc.converters.avro import AvroConverter
from cdc.converters.avro.names import debezium_adjust
from tests.converters.avro_strategies import (
    converter,
    mock_registry,
    read_back,
    schema_diff,
    schemas,
    top_level,
    values,
)
from tests.support.examples import examples

_topics = itertools.count(1)


@st.composite
def schema_and_value(draw: Any) -> tuple[Schema, Any]:
    schema = draw(schemas())
    return schema, draw(values(schema, nullable=False))


@settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(schema_and_value(), st.booleans())
def test_generated_schemas_and_values_round_trip(case: tuple[Schema, Any], is_key: bool) -> None:
    schema, value = case
    c = converter(is_key=is_key)
    topic = f"topic{next(_topics)}"
    data = c.from_connect_data(topic, schema, value)
    assert data is not None and data[0] == 0
    back = c.to_connect_data(topic, data)
    expected = top_level(schema, version=1)
    assert back.schema == expected, schema_diff(back.schema, expected)
    assert back.value == read_back(schema, value, expected), (back.value, value)
    # Writing again registers nothing new: one subject version, the same id.
    assert c.from_connect_data(topic, schema, value) == data
    assert c.registry().get_versions(f"{topic}-{'key' if is_key else 'value'}") == [1]


def test_null_is_a_tombstone_and_registers_nothing() -> None:
    registry = mock_registry()
    c = converter(registry)
    schema = SchemaBuilder.struct().name("a.b.Value").optional().field("x", Schema.INT32_SCHEMA).build()
    assert c.from_connect_data("t", schema, None) is None
    assert c.to_connect_data("t", None).value is None
    assert registry.get_subjects() == []


def test_same_schema_twice_is_one_version_and_one_id_and_a_new_schema_is_version_two() -> None:
    registry = mock_registry()
    v1 = SchemaBuilder.struct().name("shop.db.orders.Value").field("id", Schema.INT64_SCHEMA).build()
    v2 = (
        SchemaBuilder.struct()
        .name("shop.db.orders.Value")
        .field("id", Schema.INT64_SCHEMA)
        .field("note", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    writer, other_writer = converter(registry), converter(registry)
    a = writer.from_connect_data("orders", v1, Struct(v1).put("id", 1))
    b = other_writer.from_connect_data("orders", v1, Struct(v1).put("id", 2))
    assert a[:5] == b[:5]
    c = writer.from_connect_data("orders", v2, Struct(v2).put("id", 3).put("note", "n"))
    assert c[:5] != a[:5]
    assert sorted(registry.get_versions("orders-value")) == [1, 2]
    reader = converter(registry)
    assert reader.to_connect_data("orders", a).schema == top_level(v1, 1)
    assert reader.to_connect_data("orders", c).schema == top_level(v2, 2)
    assert reader.to_connect_data("orders", c).value == Struct(top_level(v2, 2)).put("id", 3).put("note", "n")


@pytest.mark.parametrize(
    ("strategy", "subject"),
    [
        ("io.confluent.kafka.serializers.subject.TopicNameStrategy", "orders-key"),
        ("TopicNameStrategy", "orders-key"),
        ("io.confluent.kafka.serializers.subject.RecordNameStrategy", "shop.db.orders.Key"),
        ("TopicRecordNameStrategy", "orders-shop.db.orders.Key"),
    ],
)
def test_subject_name_strategies(strategy: str, subject: str) -> None:
    registry = mock_registry()
    c = converter(registry, is_key=True, **{"key.subject.name.strategy": strategy})
    key = SchemaBuilder.struct().name("shop.db.orders.Key").field("id", Schema.INT64_SCHEMA).build()
    data = c.from_connect_data("orders", key, Struct(key).put("id", 7))
    assert registry.get_subjects() == [subject]
    assert c.to_connect_data("orders", data).value.get("id") == 7


def test_unknown_subject_name_strategy_is_a_one_line_error() -> None:
    c = AvroConverter()
    with pytest.raises(Exception, match=r"value.subject.name.strategy: unknown subject name strategy 'Nope'") as e:
        c.configure({"schema.registry.url": "mock://x", "value.subject.name.strategy": "Nope"}, False)
    assert "\n" not in str(e.value)


def test_without_auto_register_the_schema_is_looked_up_or_refused() -> None:
    registry = mock_registry()
    schema = SchemaBuilder.struct().name("a.b.Value").field("x", Schema.INT32_SCHEMA).build()
    lookup = converter(registry, **{"auto.register.schemas": "false"})
    with pytest.raises(DataException, match=r"refused looking up the schema under subject t-value") as e:
        lookup.from_connect_data("t", schema, Struct(schema).put("x", 1))
    assert "\n" not in str(e.value)
    registered = converter(registry).from_connect_data("t", schema, Struct(schema).put("x", 1))
    assert lookup.from_connect_data("t", schema, Struct(schema).put("x", 1)) == registered
    latest = converter(registry, **{"auto.register.schemas": "false", "use.latest.version": "true"})
    assert latest.from_connect_data("t", schema, Struct(schema).put("x", 1)) == registered


def test_connect_meta_data_off_writes_plain_avro() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("a.b.Value")
        .version(3)
        .field("small", Schema.INT8_SCHEMA)
        .field("day", Date.SCHEMA)
        .build()
    )
    c = converter(**{"connect.meta.data": "false"})
    avro = c.avro_data.from_connect_schema(schema)
    assert avro == {
        "type": "record",
        "name": "Value",
        "namespace": "a.b",
        "fields": [
            {"name": "small", "type": "int"},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        ],
    }
    back = c.to_connect_data(
        "t", c.from_connect_data("t", schema, Struct(schema).put("small", 5).put("day", datetime.date(2020, 2, 29)))
    )
    assert back.value.get("small") == 5 and back.value.get("day") == datetime.date(2020, 2, 29)
    assert back.schema.field("small").schema == Schema.INT32_SCHEMA  # the int8 annotation is gone


def test_schemas_cache_size_and_schemas_cache_config_are_both_taken() -> None:
    assert converter(**{"schemas.cache.size": "3"}).avro_data._writes._size == 3
    assert converter(**{"schemas.cache.config": "5"}).avro_data._writes._size == 5


def test_logical_types_as_confluent_writes_them() -> None:
    c = converter()
    assert c.avro_data.from_connect_schema(Decimal.schema(2)) == {
        "type": "bytes",
        "scale": 2,
        "precision": 64,
        "connect.version": 1,
        "connect.parameters": {"scale": "2"},
        "connect.name": "org.apache.kafka.connect.data.Decimal",
        "logicalType": "decimal",
    }
    assert c.avro_data.from_connect_schema(Time.SCHEMA)["logicalType"] == "time-millis"
    assert c.avro_data.from_connect_schema(Timestamp.SCHEMA)["logicalType"] == "timestamp-millis"
    assert c.avro_data.from_connect_schema(Date.builder().optional().build()) == [
        "null",
        {
            "type": "int",
            "connect.version": 1,
            "connect.name": "org.apache.kafka.connect.data.Date",
            "logicalType": "date",
        },
    ]
    # An optional schema with a default puts its type first, so the default fits the union.
    s = (
        SchemaBuilder.struct()
        .name("a.b.R")
        .field("n", SchemaBuilder.int16().optional().default_value(4).build())
        .build()
    )
    assert c.avro_data.from_connect_schema(s)["fields"][0] == {
        "name": "n",
        "type": [{"type": "int", "connect.default": 4, "connect.type": "int16"}, "null"],
        "default": 4,
    }
    wide = decimal.Decimal("-123456789012345678901234567890123456789012345678901234567890.12345")
    big = Decimal.schema(5)
    assert c.to_connect_data("d", c.from_connect_data("d", big, wide)).value == wide


def test_unnamed_structs_are_connect_default_and_non_string_maps_are_map_entries() -> None:
    inner = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    other = SchemaBuilder.struct().field("b", Schema.STRING_SCHEMA).build()
    m = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build()
    outer = SchemaBuilder.struct().field("x", inner).field("y", other).field("z", inner).field("m", m).build()
    c = converter()
    avro = c.avro_data.from_connect_schema(outer)
    assert (avro["name"], avro["namespace"]) == ("ConnectDefault", "io.confluent.connect.avro")
    assert avro["fields"][0]["type"]["name"] == "ConnectDefault2"
    assert avro["fields"][1]["type"]["name"] == "ConnectDefault3"
    assert avro["fields"][2]["type"] == "ConnectDefault2"
    assert avro["fields"][3]["type"]["items"]["name"] == "MapEntry"
    value = (
        Struct(outer)
        .put("x", Struct(inner).put("a", 1))
        .put("y", Struct(other).put("b", "x"))
        .put("z", Struct(inner).put("a", 2))
        .put("m", {1: "one", -2: "two"})
    )
    back = c.to_connect_data("t", c.from_connect_data("t", outer, value))
    assert back.schema == top_level(outer, 1)
    assert back.value == read_back(outer, value, top_level(outer, 1))


@pytest.mark.parametrize("mode", ["avro", "avro_unicode"])
def test_names_avro_refuses_follow_the_adjustment_modes(mode: str) -> None:
    schema = (
        SchemaBuilder.struct()
        .name("my-server.db.order-items.Value")
        .field("order total", Schema.INT32_SCHEMA)
        .field("1st", Schema.STRING_SCHEMA)
        .field("über_語", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    plain = converter()
    with pytest.raises(
        DataException, match=r"schema name 'my-server.db.order-items.Value' is not a valid Avro name"
    ) as e:
        plain.from_connect_data("t", schema, Struct(schema).put("order total", 1).put("1st", "a"))
    assert "schema.name.adjustment.mode=avro" in str(e.value) and "\n" not in str(e.value)

    c = converter(**{"schema.name.adjustment.mode": mode, "field.name.adjustment.mode": mode})
    avro = c.avro_data.from_connect_schema(schema)
    assert avro["namespace"] == debezium_adjust("my-server.db.order-items", mode, allow_dots=True)
    assert avro["connect.name"] == "my-server.db.order-items.Value"  # the Connect name is kept
    names = [f["name"] for f in avro["fields"]]
    assert names == [debezium_adjust(n, mode, allow_dots=False) for n in ("order total", "1st", "über_語")]
    if mode == "avro":
        assert names == ["order_total", "_1st", "_ber__"]
    else:
        assert names == ["order_u0020total", "_u0031st", "_u00fcber_u005f_u8a9e"]
    value = Struct(schema).put("order total", 1).put("1st", "a").put("über_語", "z")
    back = c.to_connect_data("t", c.from_connect_data("t", schema, value))
    assert back.schema.name == schema.name
    assert list(back.value.to_dict().values()) == [1, "a", "z"]


def test_debezium_adjustment_examples() -> None:
    # SchemaNameAdjusterTest's cases, re-expressed
    assert debezium_adjust("24Col", "avro", False) == "_24Col"
    assert debezium_adjust("_hello_语言.", "avro_unicode", True) == "_u005fhello_u005f_u8bed_u8a00."
    assert debezium_adjust("a-b.c", "avro", True) == "a_b.c"
    assert debezium_adjust("fine_name", "none", False) == "fine_name"


def test_secrets_are_masked_where_configs_are_shown() -> None:
    config = {
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": "https://sr:8081",
        "value.converter.basic.auth.credentials.source": "USER_INFO",
        "value.converter.basic.auth.user.info": "me:s3cret",
        "key.converter.schema.registry.basic.auth.user.info": "me:s3cret",
        "value.converter.schema.registry.ssl.key.password": "kp",
        "value.converter.schema.registry.ssl.truststore.password": "tp",
        "value.converter.schema.registry.ssl.keystore.password": "ksp",
    }
    masked = mask_config(config)
    assert masked["value.converter.schema.registry.url"] == "https://sr:8081"
    assert masked["value.converter.basic.auth.credentials.source"] == "USER_INFO"
    for key in config:
        if "password" in key or "user.info" in key:
            assert masked[key] == HIDDEN, key
    declared = {k for k, v in AvroConverter().config().config_keys.items() if v.type.value == "PASSWORD"}
    assert declared == {"basic.auth.user.info"}


def test_avro_schema_text_is_deterministic_json() -> None:
    schema = SchemaBuilder.struct().name("a.b.Value").field("x", Schema.INT32_SCHEMA).build()
    c1, c2 = converter(), converter()
    assert c1.avro_data.writer(schema).text == c2.avro_data.writer(schema).text
    assert json.loads(c1.avro_data.writer(schema).text) == c1.avro_data.from_connect_schema(schema)


def test_defaults_of_every_kind_read_back() -> None:
    point = SchemaBuilder.struct().name("a.b.Point").field("x", Schema.INT32_SCHEMA).build()
    pairs = SchemaBuilder.map(Schema.INT8_SCHEMA, Schema.STRING_SCHEMA).build()
    schema = (
        SchemaBuilder.struct()
        .name("a.b.Defaults")
        .version(1)
        .field("points", SchemaBuilder.array(point).default_value([Struct(point).put("x", 7)]).build())
        .field("pairs", SchemaBuilder.map(Schema.INT8_SCHEMA, Schema.STRING_SCHEMA).default_value({1: "a"}).build())
        .field("raw", SchemaBuilder.bytes().optional().default_value(b"\x00\xff").build())
        .field("price", Decimal.builder(2).default_value(decimal.Decimal("-1.25")).build())
        .field("day", Date.builder().optional().default_value(datetime.date(1969, 12, 31)).build())
        .field("n", SchemaBuilder.float32().default_value(0.5).build())
        .build()
    )
    assert pairs.type is schema.field("pairs").schema.type
    c = converter()
    value = Struct.from_values(schema, [None, None, None, None, None, None])
    back = c.to_connect_data("d", c.from_connect_data("d", schema, value))
    assert back.schema == schema, schema_diff(back.schema, schema)
    assert back.value.to_dict() == {
        "points": [Struct(point).put("x", 7)],
        "pairs": {1: "a"},
        "raw": b"\x00\xff",
        "price": decimal.Decimal("-1.25"),
        "day": datetime.date(1969, 12, 31),
        "n": 0.5,
    }

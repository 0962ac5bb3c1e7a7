from __future__ import annotations

import datetime
import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import (
    DataException,
    Date,
    Decimal,
    Headers,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
    Time,
    Timestamp,
    Type,
)
from cdc.api.errors import SchemaBuilderException


def test_builder_builds_struct_with_metadata() -> None:
    s = (
        SchemaBuilder.struct()
        .name("db.inventory.customers.Value")
        .version(2)
        .doc("a row")
        .parameter("k", "v")
        .field("id", Schema.INT32_SCHEMA)
        .field("email", SchemaBuilder.string().optional().default_value("x@y"))
        .build()
    )
    assert s.type is Type.STRUCT and s.name == "db.inventory.customers.Value" and s.version == 2
    assert [f.name for f in s.fields] == ["id", "email"]
    assert s.field("email").schema.default_value == "x@y"
    assert s.field("nope") is None
    assert (
        s
        == SchemaBuilder.struct()
        .name("db.inventory.customers.Value")
        .version(2)
        .doc("a row")
        .parameter("k", "v")
        .field("id", Schema.INT32_SCHEMA)
        .field("email", SchemaBuilder.string().optional().default_value("x@y"))
        .build()
    )


def test_builder_rejects_inconsistent_schemas() -> None:
    with pytest.raises(SchemaBuilderException, match="duplication"):
        SchemaBuilder.struct().field("a", Schema.INT8_SCHEMA).field("a", Schema.INT8_SCHEMA)
    with pytest.raises(SchemaBuilderException, match="default"):
        SchemaBuilder.int8().default_value(1000).build()
    with pytest.raises(SchemaBuilderException, match="already been set"):
        SchemaBuilder.int8().name("a").name("b")
    with pytest.raises(SchemaBuilderException):
        SchemaBuilder.int32().field("a", Schema.INT8_SCHEMA)


def test_struct_validates_each_put_and_required_fields() -> None:
    s = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("n", Schema.OPTIONAL_STRING_SCHEMA).build()
    st_ = Struct(s)
    with pytest.raises(DataException, match="'id'"):
        st_.put("id", "not an int")
    with pytest.raises(DataException, match="not a valid field"):
        st_.put("missing", 1)
    with pytest.raises(DataException, match="'id'"):
        st_.validate()  # required and unset
    st_.put("id", 2**63 - 1)
    st_.validate()
    with pytest.raises(DataException, match="out of range"):
        Struct(s).put("id", 2**63)
    with pytest.raises(DataException):
        Struct(s).put("id", True)  # bool is not an int here, as in Java


def test_default_is_returned_for_null_field() -> None:
    s = SchemaBuilder.struct().field("n", SchemaBuilder.int32().optional().default_value(7)).build()
    st_ = Struct(s)
    assert st_.get("n") == 7 and st_.get_without_default("n") is None


def test_nested_arrays_and_maps_are_validated() -> None:
    inner = SchemaBuilder.struct().field("x", Schema.INT8_SCHEMA).build()
    s = (
        SchemaBuilder.struct()
        .field("list", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
        .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, inner).build())
        .build()
    )
    ok = Struct(s).put("list", ["a"]).put("map", {"k": Struct(inner).put("x", 1)})
    ok.validate()
    with pytest.raises(DataException, match="array element"):
        Struct(s).put("list", ["a", 1])
    with pytest.raises(DataException, match=r"field 'x'"):
        Struct(s).put("map", {"k": Struct(inner)})  # inner struct misses its required field


@given(st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**30), max_value=10**30))
def test_decimal_round_trips_exactly(value: decimal.Decimal) -> None:
    schema = Decimal.schema(4)
    value = value.quantize(decimal.Decimal("0.0001"), context=decimal.Context(prec=60))
    assert Decimal.to_logical(schema, Decimal.from_logical(schema, value)) == value


def test_decimal_wide_values_are_exact_and_minimal() -> None:
    schema = Decimal.schema(2)
    wide = decimal.Decimal("123456789012345678901234567890123456789012345678901234567890123.45")
    assert Decimal.to_logical(schema, Decimal.from_logical(schema, wide)) == wide
    assert Decimal.from_logical(schema, decimal.Decimal("1.28")) == b"\x00\x80"  # Java BigInteger bytes
    assert Decimal.from_logical(schema, decimal.Decimal("-1.28")) == b"\x80"
    with pytest.raises(DataException, match="scale"):
        Decimal.from_logical(schema, decimal.Decimal("1.5"))
    # PostgreSQL numerics reach 131,072 digits; Python refuses int(str) beyond 4,300 of them.
    huge = decimal.Decimal("-" + "9" * 10_000 + ".25")
    assert Decimal.to_logical(schema, Decimal.from_logical(schema, huge)) == huge


def test_temporal_logical_types() -> None:
    assert Date.from_logical(Date.SCHEMA, datetime.date(1970, 1, 11)) == 10
    assert Date.to_logical(Date.SCHEMA, -1) == datetime.date(1969, 12, 31)
    assert Time.from_logical(Time.SCHEMA, datetime.time(1, 0, 0, 5000)) == 3_600_005
    assert Time.to_logical(Time.SCHEMA, 3_600_005) == datetime.time(1, 0, 0, 5000)
    ts = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    assert Timestamp.to_logical(Timestamp.SCHEMA, Timestamp.from_logical(Timestamp.SCHEMA, ts)) == ts
    with pytest.raises(DataException, match="datetime"):
        Struct(SchemaBuilder.struct().field("d", Date.SCHEMA).build()).put("d", datetime.datetime.now())


def test_records_new_record_keeps_subclass_fields() -> None:
    r = SourceRecord({"server": "s"}, {"pos": 4}, "t", None, None, None, Schema.STRING_SCHEMA, "v", 5)
    r.headers.add("h", "x")
    moved = r.new_record("t2", 1, None, None, Schema.STRING_SCHEMA, "v", 5)
    assert isinstance(moved, SourceRecord)
    assert moved.source_offset == {"pos": 4} and moved.topic == "t2" and moved.headers.last_with_name("h").value == "x"
    s = SinkRecord("t", 0, None, None, None, None, 42)
    s2 = s.new_record("renamed", None, None, None, None, None, None)
    assert s2.original_topic == "t" and s2.kafka_offset == 42 and s2.kafka_partition == 0


def test_headers_multimap() -> None:
    h = Headers().add("a", 1).add("b", 2).add("a", 3)
    assert h.last_with_name("a").value == 3
    assert [x.value for x in h.all_with_name("a")] == [1, 3]
    assert [x.key for x in h.duplicate().retain_latest()] == ["b", "a"]
    assert len(h.remove("a")) == 1


def test_from_values_builds_without_per_put_checks_but_validate_still_checks() -> None:
    s = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.OPTIONAL_STRING_SCHEMA).build()
    ok = Struct.from_values(s, [1, None])
    assert ok.get("a") == 1 and ok == Struct(s).put("a", 1)
    bad = Struct.from_values(s, ["not an int", None])
    with pytest.raises(DataException, match="'a'"):
        bad.validate()
    with pytest.raises(DataException, match="2 fields"):
        Struct.from_values(s, [1])

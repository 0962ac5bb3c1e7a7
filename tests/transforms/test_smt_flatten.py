"""Flatten$Key / $Value, as Kafka's FlattenTest asserts it."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import DataException, Schema, SchemaBuilder, SourceRecord, Struct, Type
from cdc.transforms.flatten import FlattenKey, FlattenValue


def value_xform(**configs: str) -> FlattenValue[SourceRecord]:
    t: FlattenValue[SourceRecord] = FlattenValue()
    t.configure(configs)
    return t


def value_record(schema: Schema | None, value: object) -> SourceRecord:
    return SourceRecord(None, None, "topic", 0, None, None, schema, value)


SUPPORTED = [
    ("int8", Schema.INT8_SCHEMA, 8),
    ("int16", Schema.INT16_SCHEMA, 16),
    ("int32", Schema.INT32_SCHEMA, 32),
    ("int64", Schema.INT64_SCHEMA, 64),
    ("float32", Schema.FLOAT32_SCHEMA, 32.0),
    ("float64", Schema.FLOAT64_SCHEMA, 64.0),
    ("boolean", Schema.BOOLEAN_SCHEMA, True),
    ("string", Schema.STRING_SCHEMA, "stringy"),
    ("bytes", Schema.BYTES_SCHEMA, b"bytes"),
]


def test_top_level_struct_required() -> None:
    with pytest.raises(DataException):
        value_xform().apply(value_record(Schema.INT32_SCHEMA, 42))


def test_top_level_map_required() -> None:
    with pytest.raises(DataException):
        value_xform().apply(value_record(None, 42))


def test_nested_struct() -> None:
    builder = SchemaBuilder.struct()
    for name, schema, _ in SUPPORTED:
        builder.field(name, schema)
    supported_schema = builder.build()
    one = SchemaBuilder.struct().field("B", supported_schema).build()
    two = SchemaBuilder.struct().field("A", one).build()
    supported = Struct(supported_schema)
    for name, _, value in SUPPORTED:
        supported.put(name, value)
    out = value_xform().apply(value_record(two, Struct(two).put("A", Struct(one).put("B", supported))))
    assert out is not None and out.value_schema is not None and out.value_schema.type is Type.STRUCT
    assert len(out.value.schema.fields) == 9
    for name, schema, value in SUPPORTED:
        assert out.value.get(f"A.B.{name}") == value
        assert out.value_schema.field(f"A.B.{name}").schema == schema  # type: ignore[union-attr]


def test_nested_map_with_delimiter() -> None:
    supported = {name: value for name, _, value in SUPPORTED}
    out = value_xform(delimiter="#").apply(value_record(None, {"A": {"B": supported}}))
    assert out is not None and out.value_schema is None
    assert out.value == {f"A#B#{name}": value for name, value in supported.items()}


def test_optional_field_struct() -> None:
    supported_schema = SchemaBuilder.struct().field("opt_int32", Schema.OPTIONAL_INT32_SCHEMA).build()
    one = SchemaBuilder.struct().field("B", supported_schema).build()
    value = Struct(one).put("B", Struct(supported_schema).put("opt_int32", None))
    out = value_xform().apply(value_record(one, value))
    assert out is not None and out.value_schema.type is Type.STRUCT  # type: ignore[union-attr]
    assert out.value.get("B.opt_int32") is None


def test_optional_struct() -> None:
    schema = SchemaBuilder.struct().optional().field("opt_int32", Schema.OPTIONAL_INT32_SCHEMA).build()
    out = value_xform().apply(value_record(schema, None))
    assert out is not None and out.value_schema.type is Type.STRUCT and out.value is None  # type: ignore[union-attr]


def test_optional_nested_struct() -> None:
    supported_schema = SchemaBuilder.struct().optional().field("opt_int32", Schema.OPTIONAL_INT32_SCHEMA).build()
    one = SchemaBuilder.struct().field("B", supported_schema).build()
    out = value_xform().apply(value_record(one, Struct(one).put("B", None)))
    assert out is not None and out.value_schema.type is Type.STRUCT  # type: ignore[union-attr]
    assert out.value.get("B.opt_int32") is None


def test_optional_field_map() -> None:
    out = value_xform().apply(value_record(None, {"B": {"opt_int32": None}}))
    assert out is not None and out.value_schema is None and out.value == {"B.opt_int32": None}


def test_key() -> None:
    t: FlattenKey[SourceRecord] = FlattenKey()
    t.configure({})
    out = t.apply(SourceRecord(None, None, "topic", None, None, {"A": {"B": 12}}, None, None))
    assert out is not None and out.key_schema is None and out.key == {"A.B": 12}


def test_schemaless_array() -> None:
    value = {"foo": ["bar", {"baz": {"lfg": "lfg"}}]}
    out = value_xform().apply(SourceRecord(None, None, "topic", None, None, None, None, value))
    assert out is not None and out.value == value


def test_array_with_schema() -> None:
    nested = SchemaBuilder.struct().field("lfg", Schema.STRING_SCHEMA).build()
    inner = SchemaBuilder.struct().field("baz", nested).build()
    schema = SchemaBuilder.struct().field("foo", SchemaBuilder.array(inner).doc("durk").build()).build()
    value = Struct(schema).put("foo", [Struct(inner).put("baz", Struct(nested).put("lfg", "lfg"))])
    out = value_xform().apply(SourceRecord(None, None, "topic", None, None, None, schema, value))
    assert out is not None and out.value == value and out.value_schema == schema


def test_optional_and_default_values_nested() -> None:
    # A child of an optional struct becomes optional; a parent struct's default supplies the
    # default of a child that has none. Kafka builds the self-referencing default with a
    # SchemaBuilder; here the built schema gets its default afterwards, to the same effect.
    schema = (
        SchemaBuilder.struct()
        .optional()
        .field("req_field", Schema.STRING_SCHEMA)
        .field("opt_field", SchemaBuilder.string().optional().default_value("child_default").build())
        .build()
    )
    schema.default_value = Struct(schema).put("req_field", "req_default")
    out = value_xform().apply(value_record(schema, Struct(schema)))
    assert out is not None and out.value_schema is not None
    assert out.value_schema.type is Type.STRUCT and len(out.value_schema.fields) == 2
    assert out.value_schema.field("req_field").schema == (  # type: ignore[union-attr]
        SchemaBuilder.string().optional().default_value("req_default").build()
    )
    assert out.value_schema.field("opt_field").schema == (  # type: ignore[union-attr]
        SchemaBuilder.string().optional().default_value("child_default").build()
    )


def test_tombstones_pass_through() -> None:
    out = value_xform().apply(value_record(None, None))
    assert out is not None and out.value is None and out.value_schema is None
    schema = SchemaBuilder.struct().name("name").version(1).doc("doc").field("magic", Schema.OPTIONAL_INT64_SCHEMA)
    built = schema.build()
    out = value_xform().apply(value_record(built, None))
    assert out is not None and out.value is None and out.value_schema == built


def test_map_with_null_fields_keeps_order() -> None:
    value = {
        "firstNull": None,
        "firstNonNull": "nonNull",
        "secondNull": None,
        "secondNonNull": "alsoNonNull",
        "thirdNonNull": None,
    }
    out = value_xform().apply(value_record(None, value))
    assert out is not None and list(out.value.items()) == list(value.items())


def test_struct_with_null_fields() -> None:
    names = ["firstNull", "firstNonNull", "secondNull", "secondNonNull", "thirdNonNull"]
    builder = SchemaBuilder.struct()
    for n in names:
        builder.field(n, Schema.OPTIONAL_STRING_SCHEMA)
    schema = builder.build()
    value = Struct(schema).put("firstNonNull", "nonNull").put("secondNonNull", "alsoNonNull")
    out = value_xform().apply(value_record(schema, value))
    assert out is not None and out.value == value


def test_map_field_in_schema_is_unsupported() -> None:
    schema = (
        SchemaBuilder.struct().field("m", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()).build()
    )
    with pytest.raises(DataException, match=r"does not support MAP for record with schemas \(for field m\)"):
        value_xform().apply(value_record(schema, Struct(schema).put("m", {"a": 1})))


def test_unsupported_schemaless_value() -> None:
    with pytest.raises(DataException, match="not supported by Connect's data API"):
        value_xform().apply(value_record(None, {"a": object()}))


leaf = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.booleans())
nested = st.recursive(leaf, lambda inner: st.dictionaries(st.sampled_from("xyz"), inner, max_size=3), max_leaves=8)


@given(st.dictionaries(st.sampled_from("abc"), nested, max_size=3))
def test_schemaless_leaves_survive_under_joined_names(value: dict[str, object]) -> None:
    def leaves(d: dict[str, object], prefix: str) -> dict[str, object]:
        out: dict[str, object] = {}
        for k, v in d.items():
            name = f"{prefix}_{k}" if prefix else k
            if isinstance(v, dict):
                out.update(leaves(v, name))
            else:
                out[name] = v
        return out

    out = value_xform(delimiter="_").apply(value_record(None, value))
    assert out is not None and out.value == leaves(value, "")

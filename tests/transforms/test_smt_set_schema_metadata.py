"""SetSchemaMetadata$Key / $Value, as Kafka's SetSchemaMetadataTest asserts it."""

import pytest

from cdc.api import ConfigException, DataException, Schema, SchemaBuilder, SinkRecord, Struct
from cdc.transforms.set_schema_metadata import SetSchemaMetadataKey, SetSchemaMetadataValue


def xform(**configs: object) -> SetSchemaMetadataValue[SinkRecord]:
    t: SetSchemaMetadataValue[SinkRecord] = SetSchemaMetadataValue()
    t.configure(configs)
    return t


def record(schema: Schema | None, value: object = None) -> SinkRecord:
    return SinkRecord("", 0, None, None, schema, value, 0)


def assert_matching_schema(value: Struct, schema: Schema) -> None:
    assert value.schema is schema
    for field in schema.fields:
        assert value.schema.field(field.name).index == field.index  # type: ignore[union-attr]
        assert value.schema.field(field.name).schema is field.schema  # type: ignore[union-attr]


def two_field_schema() -> Schema:
    return (
        SchemaBuilder.struct()
        .name("my.orig.SchemaDefn")
        .field("f1", Schema.STRING_SCHEMA)
        .field("f2", Schema.INT32_SCHEMA)
        .build()
    )


def test_schema_name_update() -> None:
    out = xform(**{"schema.name": "foo"}).apply(record(SchemaBuilder.struct().build()))
    assert out is not None and out.value_schema.name == "foo"  # type: ignore[union-attr]


def test_schema_version_update() -> None:
    out = xform(**{"schema.version": 42}).apply(record(SchemaBuilder.struct().build()))
    assert out is not None and out.value_schema.version == 42  # type: ignore[union-attr]


def test_schema_name_and_version_update() -> None:
    out = xform(**{"schema.name": "foo", "schema.version": "42"}).apply(record(SchemaBuilder.struct().build()))
    assert out is not None
    assert (out.value_schema.name, out.value_schema.version) == ("foo", 42)  # type: ignore[union-attr]


def test_schema_name_and_version_update_with_struct() -> None:
    schema = two_field_schema()
    value = Struct(schema).put("f1", "value1").put("f2", 1)
    out = xform(**{"schema.name": "foo", "schema.version": "42"}).apply(record(schema, value))
    assert out is not None and out.value_schema is not None
    assert (out.value_schema.name, out.value_schema.version) == ("foo", 42)
    assert_matching_schema(out.value, out.value_schema)
    assert out.value.to_dict() == {"f1": "value1", "f2": 1}


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, "default")])
def test_struct_with_null_optional_field(replace: bool, expected: str | None) -> None:
    schema = (
        SchemaBuilder.struct()
        .name("my.orig.SchemaDefn")
        .field("f1", SchemaBuilder.string().default_value("default").optional().build())
        .field("f2", Schema.INT32_SCHEMA)
        .build()
    )
    value = Struct(schema).put("f1", None).put("f2", 1)
    t = xform(**{"schema.name": "foo", "schema.version": "42", "replace.null.with.default": replace})
    out = t.apply(record(schema, value))
    assert out is not None and out.value_schema is not None
    assert (out.value_schema.name, out.value_schema.version) == ("foo", 42)
    assert_matching_schema(out.value, out.value_schema)
    assert out.value.get_without_default("f1") == expected


def test_value_schema_required() -> None:
    with pytest.raises(DataException):
        xform(**{"schema.name": "foo"}).apply(record(None, 42))


def test_ignore_record_with_null_value() -> None:
    original = record(None, None)
    out = xform(**{"schema.name": "foo"}).apply(original)
    assert out is not None and (out.key, out.key_schema, out.value, out.value_schema) == (None, None, None, None)


def test_update_schema_of_struct_non_struct_and_null() -> None:
    t = xform(**{"schema.name": "foo"})
    schema = two_field_schema()
    new_schema = (
        SchemaBuilder.struct()
        .name("my.updated.SchemaDefn")
        .field("f1", Schema.STRING_SCHEMA)
        .field("f2", Schema.INT32_SCHEMA)
        .build()
    )
    updated = t.update_schema_in(Struct(schema).put("f1", "value1").put("f2", 1), new_schema)
    assert_matching_schema(updated, new_schema)
    value = object()
    assert t.update_schema_in(value, Schema.INT32_SCHEMA) is value
    assert t.update_schema_in(None, Schema.INT32_SCHEMA) is None


def test_key_variant_keeps_map_and_array_parts() -> None:
    t: SetSchemaMetadataKey[SinkRecord] = SetSchemaMetadataKey()
    t.configure({"schema.name": "k"})
    map_schema = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).optional().build()
    out = t.apply(SinkRecord("", 0, map_schema, {"a": 1}, None, "v", 0))
    assert out is not None and out.key_schema is not None
    assert out.key_schema.name == "k" and out.key_schema.optional
    assert (out.key_schema.key_schema, out.key_schema.value_schema) == (Schema.STRING_SCHEMA, Schema.INT32_SCHEMA)
    assert out.key == {"a": 1} and out.value == "v"


def test_config_needs_name_or_version() -> None:
    with pytest.raises(ConfigException, match=r"schema\.name and/or schema\.version") as info:
        xform()
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigException, match=r"schema\.version"):
        xform(**{"schema.version": "forty-two"})

"""ExtractField$Key / $Value, as Kafka's ExtractFieldTest asserts it."""

import pytest

from cdc.api import ConfigException, DataException, Schema, SchemaBuilder, SinkRecord, Struct
from cdc.transforms.extract_field import ExtractFieldKey, ExtractFieldValue


def key_xform(field: str, **more: object) -> ExtractFieldKey[SinkRecord]:
    t: ExtractFieldKey[SinkRecord] = ExtractFieldKey()
    t.configure({"field": field, **more})
    return t


def key_record(key: object, schema: Schema | None = None) -> SinkRecord:
    return SinkRecord("test", 0, schema, key, None, None, 0)


def test_schemaless() -> None:
    out = key_xform("magic").apply(key_record({"magic": 42}))
    assert out is not None and out.key_schema is None and out.key == 42


def test_schemaless_and_nested_path() -> None:
    out = key_xform("magic.foo", **{"field.syntax.version": "v2"}).apply(key_record({"magic": {"foo": 42}}))
    assert out is not None and out.key_schema is None and out.key == 42


def test_null_schemaless() -> None:
    out = key_xform("magic").apply(key_record(None))
    assert out is not None and out.key_schema is None and out.key is None


def test_with_schema() -> None:
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    out = key_xform("magic").apply(key_record(Struct(schema).put("magic", 42), schema))
    assert out is not None and out.key_schema == Schema.INT32_SCHEMA and out.key == 42


def test_with_schema_and_nested_path() -> None:
    foo = SchemaBuilder.struct().field("foo", Schema.INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field("magic", foo).build()
    key = Struct(schema).put("magic", Struct(foo).put("foo", 42))
    out = key_xform("magic.foo", **{"field.syntax.version": "v2"}).apply(key_record(key, schema))
    assert out is not None and out.key_schema == Schema.INT32_SCHEMA and out.key == 42


def test_null_with_schema() -> None:
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).optional().build()
    out = key_xform("magic").apply(key_record(None, schema))
    assert out is not None and out.key_schema == Schema.INT32_SCHEMA and out.key is None


def test_non_existent_field_schemaless_gives_null() -> None:
    out = key_xform("nonexistent").apply(key_record({"magic": 42}))
    assert out is not None and out.key_schema is None and out.key is None


def test_non_existent_nested_field_schemaless_gives_null() -> None:
    xform = key_xform("magic.nonexistent", **{"field.syntax.version": "v2"})
    out = xform.apply(key_record({"magic": {"foo": 42}}))
    assert out is not None and out.key is None


def test_non_existent_field_with_schema_fails() -> None:
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    with pytest.raises(ValueError, match=r"^Unknown field: nonexistent$") as info:
        key_xform("nonexistent").apply(key_record(Struct(schema).put("magic", 42), schema))
    assert isinstance(info.value, DataException)


def test_non_existent_nested_field_with_schema_fails() -> None:
    foo = SchemaBuilder.struct().field("foo", Schema.INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field("magic", foo).build()
    key = Struct(schema).put("magic", Struct(foo).put("foo", 42))
    with pytest.raises(ValueError, match=r"^Unknown field: magic\.nonexistent$"):
        key_xform("magic.nonexistent", **{"field.syntax.version": "v2"}).apply(key_record(key, schema))


def test_v1_takes_the_dotted_name_literally() -> None:
    out = key_xform("magic.foo").apply(key_record({"magic.foo": 1, "magic": {"foo": 2}}))
    assert out is not None and out.key == 1


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, 42)])
def test_unset_optional_key_and_value(replace: bool, expected: int | None) -> None:
    schema = (
        SchemaBuilder.struct()
        .field("optional_with_default", SchemaBuilder.int32().optional().default_value(42))
        .build()
    )
    struct = Struct(schema).put("optional_with_default", None)
    out = key_xform("optional_with_default", **{"replace.null.with.default": replace}).apply(key_record(struct, schema))
    assert out is not None and out.key == expected
    value_xform: ExtractFieldValue[SinkRecord] = ExtractFieldValue()
    value_xform.configure({"field": "optional_with_default", "replace.null.with.default": replace})
    out = value_xform.apply(SinkRecord("test", 0, None, None, schema, struct, 0))
    assert out is not None and out.value == expected


def test_schemaless_non_map_is_rejected() -> None:
    with pytest.raises(
        DataException, match=r"Only Map objects supported in absence of schema for \[field extraction\]"
    ):
        key_xform("magic").apply(key_record(42))


def test_bad_config_names_the_key() -> None:
    with pytest.raises(ConfigException, match=r"field\.syntax\.version") as info:
        key_xform("a", **{"field.syntax.version": "v3"})
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigException, match='"field"'):
        ExtractFieldKey().configure({})  # type: ignore[var-annotated]

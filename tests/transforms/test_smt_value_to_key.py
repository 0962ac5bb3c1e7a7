"""ValueToKey, as Kafka's ValueToKeyTest asserts it."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import ConfigException, DataException, Schema, SchemaBuilder, SinkRecord, Struct
from cdc.transforms.value_to_key import ValueToKey


def xform(**configs: object) -> ValueToKey[SinkRecord]:
    t: ValueToKey[SinkRecord] = ValueToKey()
    t.configure(configs)
    return t


def test_schemaless() -> None:
    out = xform(fields="a,b").apply(SinkRecord("", 0, None, None, None, {"a": 1, "b": 2, "c": 3}, 0))
    assert out is not None and out.key_schema is None and out.key == {"a": 1, "b": 2}


def test_with_schema() -> None:
    value_schema = (
        SchemaBuilder.struct()
        .field("a", Schema.INT32_SCHEMA)
        .field("b", Schema.INT32_SCHEMA)
        .field("c", Schema.INT32_SCHEMA)
        .build()
    )
    value = Struct(value_schema).put("a", 1).put("b", 2).put("c", 3)
    out = xform(fields="a,b").apply(SinkRecord("", 0, None, None, value_schema, value, 0))
    expected_schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.INT32_SCHEMA).build()
    assert out is not None
    assert out.key_schema == expected_schema
    assert out.key == Struct(expected_schema).put("a", 1).put("b", 2)
    assert out.value is value


def test_non_existing_field() -> None:
    value_schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    record = SinkRecord("", 0, None, None, value_schema, Struct(value_schema).put("a", 1), 0)
    with pytest.raises(DataException, match=r"^Field does not exist: not_exist$"):
        xform(fields="not_exist").apply(record)


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, 42)])
def test_replace_null_with_default(replace: bool, expected: int | None) -> None:
    schema = (
        SchemaBuilder.struct()
        .field("optional_with_default", SchemaBuilder.int32().optional().default_value(42))
        .build()
    )
    value = Struct(schema).put("optional_with_default", None)
    t = xform(fields="optional_with_default", **{"replace.null.with.default": replace})
    out = t.apply(SinkRecord("", 0, None, None, schema, value, 0))
    assert out is not None and out.key.get_without_default("optional_with_default") == expected


def test_tombstone_is_rejected_like_kafka() -> None:
    with pytest.raises(DataException, match=r"Only Map objects supported in absence of schema"):
        xform(fields="a").apply(SinkRecord("", 0, None, None, None, None, 0))


def test_config_rejects_empty_fields() -> None:
    with pytest.raises(ConfigException, match="fields") as info:
        xform(fields="")
    assert "\n" not in str(info.value)


@given(st.dictionaries(st.sampled_from("abcdef"), st.integers()), st.lists(st.sampled_from("abcdef"), min_size=1))
def test_schemaless_key_has_exactly_the_listed_fields(value: dict[str, int], fields: list[str]) -> None:
    out = xform(fields=",".join(fields)).apply(SinkRecord("", 0, None, None, None, value, 0))
    assert out is not None and out.key == {f: value.get(f) for f in fields}

"""HoistField$Key / $Value, as Kafka's HoistFieldTest asserts it."""

import pytest

from cdc.api import ConfigException, Schema, SinkRecord, Struct, Type
from cdc.transforms.hoist_field import HoistFieldKey, HoistFieldValue


def key_xform() -> HoistFieldKey[SinkRecord]:
    t: HoistFieldKey[SinkRecord] = HoistFieldKey()
    t.configure({"field": "magic"})
    return t


def test_schemaless() -> None:
    out = key_xform().apply(SinkRecord("test", 0, None, 42, None, None, 0))
    assert out is not None and out.key_schema is None and out.key == {"magic": 42}


def test_with_schema() -> None:
    record = SinkRecord("test", 0, Schema.INT32_SCHEMA, 42, None, None, 0)
    out = key_xform().apply(record)
    assert out is not None and out.key_schema is not None
    assert out.key_schema.type is Type.STRUCT
    assert out.key_schema.field("magic").schema == record.key_schema  # type: ignore[union-attr]
    assert isinstance(out.key, Struct) and out.key.get("magic") == 42


def test_schemaless_map_is_mutable() -> None:
    out = key_xform().apply(SinkRecord("test", 0, None, 420, None, None, 0))
    assert out is not None
    out.key["k"] = "v"
    assert out.key == {"k": "v", "magic": 420}


def test_value_variant_and_schema_reuse() -> None:
    t: HoistFieldValue[SinkRecord] = HoistFieldValue()
    t.configure({"field": "line"})
    a = t.apply(SinkRecord("test", 0, None, "k", Schema.STRING_SCHEMA, "x", 0))
    b = t.apply(SinkRecord("test", 0, None, "k", Schema.STRING_SCHEMA, "y", 0))
    assert a is not None and b is not None
    assert a.key == "k" and a.value.get("line") == "x" and b.value.get("line") == "y"
    assert a.value_schema is b.value_schema


def test_missing_field_names_the_key() -> None:
    t: HoistFieldKey[SinkRecord] = HoistFieldKey()
    with pytest.raises(ConfigException, match='"field"'):
        t.configure({})

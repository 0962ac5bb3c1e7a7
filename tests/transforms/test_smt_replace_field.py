import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import ConfigException, DataException, Schema, SchemaBuilder, SinkRecord, Struct
from cdc.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue


def value_xform(**configs: str) -> ReplaceFieldValue:
    xform: ReplaceFieldValue = ReplaceFieldValue()
    xform.configure(configs)
    return xform


def sink(
    value: object, schema: Schema | None = None, key: object = None, key_schema: Schema | None = None
) -> SinkRecord:
    return SinkRecord("test", 0, key_schema, key, schema, value, 0)


def test_tombstone_passes_through() -> None:
    record = sink(None)
    assert value_xform(exclude="a").apply(record) is record


def test_schemaless() -> None:
    out = value_xform(exclude="dont", renames="abc:xyz,foo:bar").apply(
        sink({"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"})
    )
    assert out is not None and out.value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_include_renames_schemaless() -> None:
    out = value_xform(include="abc,foo", renames="abc:xyz,foo:bar").apply(
        sink({"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"})
    )
    assert out is not None and out.value == {"xyz": 42, "bar": True}


def test_exclude_wins_over_include() -> None:
    out = value_xform(include="a,b", exclude="b").apply(sink({"a": 1, "b": 2, "c": 3}))
    assert out is not None and out.value == {"a": 1}


def test_with_schema() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("n")
        .version(3)
        .field("dont", Schema.STRING_SCHEMA)
        .field("abc", Schema.INT32_SCHEMA)
        .field("foo", Schema.BOOLEAN_SCHEMA)
        .field("etc", Schema.STRING_SCHEMA)
        .build()
    )
    value = Struct(schema).put("dont", "whatever").put("abc", 42).put("foo", True).put("etc", "etc")
    xform = value_xform(include="abc,foo", renames="abc:xyz,foo:bar")
    out = xform.apply(sink(value, schema))
    assert out is not None
    assert [f.name for f in out.value_schema.fields] == ["xyz", "bar"]  # type: ignore[union-attr]
    assert (out.value_schema.name, out.value_schema.version) == ("n", 3)  # type: ignore[union-attr]
    assert out.value.to_dict() == {"xyz": 42, "bar": True}
    again = xform.apply(sink(value, schema))
    assert again is not None and again.value_schema is out.value_schema


def test_key_variant() -> None:
    key_schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("tenant", Schema.STRING_SCHEMA).build()
    xform: ReplaceFieldKey = ReplaceFieldKey()
    xform.configure({"exclude": "tenant", "renames": "id:pk"})
    out = xform.apply(sink("v", None, Struct(key_schema).put("id", 1).put("tenant", "t"), key_schema))
    assert out is not None and out.key.to_dict() == {"pk": 1} and out.value == "v"
    out2 = xform.apply(sink("v", None, {"id": 1, "tenant": "t"}))
    assert out2 is not None and out2.key == {"pk": 1}


def test_deprecated_aliases() -> None:
    assert value_xform(blacklist="b").apply(sink({"a": 1, "b": 2})).value == {"a": 1}  # type: ignore[union-attr]
    assert value_xform(whitelist="b").apply(sink({"a": 1, "b": 2})).value == {"b": 2}  # type: ignore[union-attr]
    # The current name wins when both are given.
    assert value_xform(exclude="a", blacklist="b").apply(sink({"a": 1, "b": 2})).value == {"b": 2}  # type: ignore[union-attr]


def test_replace_null_with_default() -> None:
    schema = SchemaBuilder.struct().field("d", SchemaBuilder.string().optional().default_value("x").build()).build()
    on = value_xform(renames="d:e").apply(sink(Struct(schema), schema))
    off = value_xform(renames="d:e", **{"replace.null.with.default": "false"}).apply(sink(Struct(schema), schema))
    assert on.value.get_without_default("e") == "x"  # type: ignore[union-attr]
    assert off.value.get_without_default("e") is None  # type: ignore[union-attr]


def test_rename_onto_existing_field_fails_like_kafka() -> None:
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="duplication b"):
        value_xform(renames="a:b").apply(sink(Struct(schema).put("a", 1).put("b", 2), schema))


def test_wrong_shape() -> None:
    with pytest.raises(DataException, match=r"Only Struct objects supported for \[field replacement\], found: str"):
        value_xform(exclude="a").apply(sink("x", Schema.STRING_SCHEMA))
    with pytest.raises(DataException, match=r"absence of schema for \[field replacement\], found: list"):
        value_xform(exclude="a").apply(sink([1]))


@pytest.mark.parametrize("renames", ["a", "a:b:c", "a:", ":b", "a:b,c"])
def test_bad_renames_name_the_key(renames: str) -> None:
    with pytest.raises(ConfigException, match="Invalid rename mapping") as info:
        value_xform(renames=renames)
    assert info.value.name == "renames"
    assert "old:new" in str(info.value)


names = st.text(alphabet="abcdefgh", min_size=1, max_size=3)


@given(
    fields=st.lists(names, unique=True, max_size=8),
    include=st.sets(names, max_size=5),
    exclude=st.sets(names, max_size=5),
    with_schema=st.booleans(),
)
def test_include_exclude_keeps_exactly_the_expected_fields(
    fields: list[str], include: set[str], exclude: set[str], with_schema: bool
) -> None:
    configs = {"include": ",".join(sorted(include)), "exclude": ",".join(sorted(exclude))}
    xform = value_xform(**configs)
    expected = [f for f in fields if f not in exclude and (not include or f in include)]
    if with_schema:
        builder = SchemaBuilder.struct()
        for f in fields:
            builder.field(f, Schema.INT32_SCHEMA)
        schema = builder.build()
        value = Struct(schema)
        for i, f in enumerate(fields):
            value.put(f, i)
        out = xform.apply(sink(value, schema))
        assert out is not None
        assert [f.name for f in out.value_schema.fields] == expected  # type: ignore[union-attr]
        assert out.value.to_dict() == {f: fields.index(f) for f in expected}
    else:
        out = xform.apply(sink({f: i for i, f in enumerate(fields)}))
        assert out is not None
        assert list(out.value) == expected  # order preserved too
        assert out.value == {f: fields.index(f) for f in expected}

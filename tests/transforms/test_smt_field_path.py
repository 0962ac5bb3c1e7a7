"""Kafka's field path notation (FieldPathNotationTest, SingleFieldPathTest) for field.syntax.version."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import ConfigException, Schema, SchemaBuilder, Struct
from cdc.transforms.field_path import FieldSyntaxVersion, SingleFieldPath, parse_v2

V1, V2 = FieldSyntaxVersion.V1, FieldSyntaxVersion.V2


@pytest.mark.parametrize("path", ["foo.bar.baz", "foo`bar`", "foo.`bar.baz`"])
def test_v1_is_a_single_step(path: str) -> None:
    assert SingleFieldPath(path, V1).steps == (path,)


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("..", ["", "", ""]),
        ("foo..", ["foo", "", ""]),
        (".bar.", ["", "bar", ""]),
        ("..baz", ["", "", "baz"]),
        ("", []),
        ("foobarbaz", ["foobarbaz"]),
        ("foo.bar.baz", ["foo", "bar", "baz"]),
        ("foo`bar`baz", ["foo`bar`baz"]),
        ("`foo.bar.baz`", ["foo.bar.baz"]),
        ("foo.`bar.baz`", ["foo", "bar.baz"]),
        ("`foo.bar`.baz", ["foo.bar", "baz"]),
        ("foo.`bar`.baz", ["foo", "bar", "baz"]),
        ("foo.``bar.baz`", ["foo", "`bar.baz"]),
        ("foo.`bar.baz``", ["foo", "bar.baz`"]),
        ("foo.`ba`r.baz`", ["foo", "ba`r.baz"]),
        ("foo.ba`r.baz", ["foo", "ba`r", "baz"]),
        ("foo.``bar``.baz", ["foo", "`bar`", "baz"]),
        ("``foo.bar.baz``", ["`foo.bar.baz`"]),
        ("foo.`bar\\`.baz`", ["foo", "bar`.baz"]),
        ("foo.`bar.`baz`", ["foo", "bar.`baz"]),
        ("foo.`bar\\`.`baz`", ["foo", "bar`.`baz"]),
        ("foo.`bar\\\\`.\\`baz`", ["foo", "bar\\`.\\`baz"]),
    ],
)
def test_v2_steps(path: str, steps: list[str]) -> None:
    assert parse_v2(path) == steps


@pytest.mark.parametrize(
    ("path", "position"), [("`foo.bar.baz", 0), ("foo.`bar.baz", 4), ("foo.bar.`baz", 8), ("foo.bar.`baz\\`", 8)]
)
def test_v2_incomplete_backticks(path: str, position: int) -> None:
    with pytest.raises(ConfigException) as info:
        parse_v2(path)
    assert str(info.value) == (
        f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at position "
        f"{position} to escape it"
    )


@given(st.lists(st.text(alphabet="abc`\\", min_size=1), min_size=1, max_size=4))
def test_v2_plain_dotted_names_round_trip(names: list[str]) -> None:
    # Names without dots or backticks at their start are split exactly at the dots.
    plain = [n.replace("`", "x") for n in names]
    assert parse_v2(".".join(plain)) == plain


def test_nested_struct_and_map_access() -> None:
    inner = SchemaBuilder.struct().field("baz", Schema.INT32_SCHEMA).build()
    outer = SchemaBuilder.struct().field("foo.bar", inner).build()
    value = Struct(outer).put("foo.bar", Struct(inner).put("baz", 7))
    path = SingleFieldPath("`foo.bar`.baz", V2)
    assert path.field_from(outer).schema == Schema.INT32_SCHEMA  # type: ignore[union-attr]
    assert path.value_from_struct(value) == 7
    assert path.value_from_map({"foo.bar": {"baz": 8}}) == 8
    assert SingleFieldPath("a.b", V2).value_from_map({"a": None}) is None
    assert SingleFieldPath("foo.bar.nope", V2).field_from(outer) is None

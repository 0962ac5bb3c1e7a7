"""io.debezium.transforms.HeaderToValue: Debezium's HeaderToValueTest cases re-expressed (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest

from cdc.api import DataException, Headers, Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.envelope import Envelope
from cdc_debezium.transforms.header_to_value import HeaderToValue
from tests.debezium_core.transforms.envelopes import assert_one_line_config_error, chain

VALUE_SCHEMA = (
    SchemaBuilder.struct()
    .name("mysql-server-1.inventory.product.Value")
    .optional()
    .field("id", Schema.INT64_SCHEMA)
    .field("price", Schema.FLOAT32_SCHEMA)
    .field("product", Schema.STRING_SCHEMA)
    .build()
)
STRINGS = SchemaBuilder.array(Schema.STRING_SCHEMA).build()


def h2v(headers: str, fields: str, operation: str = "copy") -> HeaderToValue[SourceRecord]:
    smt: HeaderToValue[SourceRecord] = HeaderToValue()
    smt.configure({"headers": headers, "fields": fields, "operation": operation})
    return smt


def product() -> Struct:
    return Struct(VALUE_SCHEMA).put("id", 101).put("price", 20.0).put("product", "a product")


def plain(headers: Headers) -> SourceRecord:
    return SourceRecord({}, {}, "topic", None, None, None, VALUE_SCHEMA, product(), None, headers)


def enveloped(headers: Headers) -> SourceRecord:
    env = Envelope.define("mysql-server-1.inventory.product.Envelope", VALUE_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA)
    value = env.make("c", None, product(), None)
    return SourceRecord({}, {}, "topic", None, None, None, env.schema, value, None, headers)


def value_of(rec: SourceRecord | None) -> Struct:
    assert rec is not None and isinstance(rec.value, Struct)
    rec.value.validate()
    return rec.value


def test_copies_defined_headers_into_fields() -> None:
    hs = Headers().add("h1", "this is a value from h1 header", Schema.STRING_SCHEMA)
    hs.add("h2", "this is a value from h2 header", Schema.STRING_SCHEMA).add("h3", "ignored", Schema.STRING_SCHEMA)
    out = h2v("h1,h2", "f1,f2").apply(plain(hs))
    got = value_of(out)
    assert (got.get("f1"), got.get("f2")) == ("this is a value from h1 header", "this is a value from h2 header")
    assert got.get("product") == "a product" and len(out.headers) == 3  # type: ignore[union-attr]


def test_spaces_around_names_are_trimmed_and_struct_headers_copied() -> None:
    hs = Headers().add("h1", ["v1", "v2"], STRINGS).add("h2", ["v1", "v2"], STRINGS)
    got = value_of(h2v(" h1 , h2 ", " f1 , f2 ").apply(plain(hs)))
    assert got.get("f1") == ["v1", "v2"] and got.get("f2") == ["v1", "v2"]


def test_move_removes_the_headers() -> None:
    hs = Headers().add("h1", ["v1", "v2"], STRINGS).add("h2", ["v1", "v2"], STRINGS).add("h3", ["v1", "v2"], STRINGS)
    hs.add("other", "kept", Schema.STRING_SCHEMA)
    out = h2v("h1,h2,h3", "f1,f2,f3", "move").apply(plain(hs))
    assert [value_of(out).get(f) for f in ("f1", "f2", "f3")] == [["v1", "v2"]] * 3
    assert [h.key for h in out.headers] == ["other"]  # type: ignore[union-attr]
    assert len(hs) == 4  # the input record's headers are untouched


def test_nested_fields_into_the_envelope() -> None:
    hs = Headers().add("h1", "from h1", Schema.STRING_SCHEMA).add("h2", "from h2", Schema.STRING_SCHEMA)
    got = value_of(h2v("h1,h2,h3", "f1,after.f2,source.f3").apply(enveloped(hs)))
    assert got.get("f1") == "from h1" and got.get("after").get("f2") == "from h2"
    assert got.get("after").get("product") == "a product" and got.get("op") == "c"


def test_missing_headers_leave_the_record_as_it_is() -> None:
    hs = Headers().add("h2", "from h2", Schema.STRING_SCHEMA)
    for smt in (h2v("h1,", "f1"), h2v("h1", "parent.f1")):
        rec = enveloped(hs)
        assert smt.apply(rec) is rec
    tomb = SourceRecord({}, {}, "topic", None, None, None, None, None, None, Headers().add("h1", "x"))
    assert h2v("h1", "f1").apply(tomb) is tomb


def test_missing_parent_structs_are_created() -> None:
    hs = Headers().add("Event_Type", "event_type_value", Schema.STRING_SCHEMA)
    hs.add("ce_type", "ce_type_value", Schema.STRING_SCHEMA).add("X-B3-TraceId", "trace_id_value", Schema.STRING_SCHEMA)
    got = value_of(h2v("Event_Type,ce_type,X-B3-TraceId", "headers.h1,headers.h2,headers.h3").apply(enveloped(hs)))
    assert got.get("headers").to_dict() == {"h1": "event_type_value", "h2": "ce_type_value", "h3": "trace_id_value"}
    deep = value_of(
        h2v("h1", "newParent.inner.newField").apply(enveloped(Headers().add("h1", "v", Schema.STRING_SCHEMA)))
    )
    assert deep.get("newParent").get("inner").get("newField") == "v"


def test_nesting_into_a_primitive_field_fails() -> None:
    with pytest.raises(DataException, match="product"):
        h2v("h1", "product.x").apply(plain(Headers().add("h1", "v", Schema.STRING_SCHEMA)))


def test_schemaless_header_values_get_a_schema() -> None:
    hs = Headers().add("n", 5).add("s", "x").add("b", True)
    got = value_of(h2v("n,s,b", "n,s,b").apply(plain(hs)))
    assert (got.get("n"), got.get("s"), got.get("b")) == (5, "x", True)
    assert got.schema.field("n").schema == Schema.OPTIONAL_INT64_SCHEMA  # type: ignore[union-attr]


def test_registered_name() -> None:
    c = chain(
        {
            "transforms": "h",
            "transforms.h.type": "io.debezium.transforms.HeaderToValue",
            "transforms.h.headers": "h1",
            "transforms.h.fields": "f1",
            "transforms.h.operation": "copy",
        }
    )
    assert c.apply(plain(Headers().add("h1", "v", Schema.STRING_SCHEMA))).value.get("f1") == "v"


@pytest.mark.parametrize(
    ("props", "key", "words"),
    [
        ({"headers": "h1", "fields": "f1", "operation": "invalidOp"}, "operation", "must be one of move, copy"),
        ({"headers": "h1", "operation": "copy"}, "fields", "fields"),
        ({"fields": "f1", "operation": "copy"}, "headers", "headers"),
        ({"headers": "h1,h2", "fields": "f1", "operation": "copy"}, "fields", "same number of elements"),
        ({"headers": "h1,h2", "fields": ",f2", "operation": "copy"}, "fields", "Empty string element"),
        ({"headers": "header one", "fields": "f1", "operation": "copy"}, "headers", "containing space"),
        ({"headers": "headerOne", "fields": "after.field one", "operation": "copy"}, "fields", "containing space"),
        ({"headers": "headerOne", "fields": "after. fieldOne", "operation": "copy"}, "fields", "containing space"),
    ],
)
def test_bad_config_is_one_line_naming_alias_and_key(props: dict[str, Any], key: str, words: str) -> None:
    config = {"transforms": "h2v", "transforms.h2v.type": "HeaderToValue"}
    config |= {f"transforms.h2v.{k}": v for k, v in props.items()}
    assert words in assert_one_line_config_error(config, f"transforms.h2v.{key}")

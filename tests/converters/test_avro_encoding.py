"""The AvroConverter's write path against its references: the generated struct writers against the
field loop they replace, and fastavro's compiled `write_data` (as avro_data.append_body calls it)
against fastavro's public `schemaless_writer`.

The schemas and values are the Avro property tests'; struct values also come with a null in a
random field (required ones included), so the errors are compared too.
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api.data import Schema, SchemaBuilder, Struct
from cdc.api.errors import DataException
from cdc.converters.avro import avro_data, from_connect
from cdc.converters.avro import converter as converter_module
from cdc.converters.avro.avro_data import AvroData
from cdc.converters.avro.names import NameRules
from tests.converters.avro_strategies import converter, mock_registry, schemas, struct_schema, values
from tests.support.examples import examples

_SETTINGS = settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@st.composite
def struct_and_value(draw: st.DrawFn) -> tuple[Schema, Any]:
    schema = draw(struct_schema(schemas(max_leaves=6)))
    value = draw(values(schema, nullable=False))
    if schema.fields and draw(st.booleans()):
        vals = list(value._values)
        vals[draw(st.integers(0, len(vals) - 1))] = None  # perhaps a required field: its error
        value = Struct.from_values(schema, vals)
    return schema, value


def _outcome(write: Any, value: Any) -> Any:
    try:
        return ("ok", write(value))
    except DataException as e:
        return ("error", str(e))


def _writers(schema: Schema) -> tuple[Any, Any]:
    conv = from_connect.Conversion(NameRules("none", "none", False), True, False, False)
    conv.convert(schema)
    entries = from_connect._entries(schema, conv)
    closure = from_connect._closure_struct(schema, entries)
    return from_connect._generated_struct(schema, entries, closure), closure


@_SETTINGS
@given(struct_and_value())
def test_property_generated_struct_writer_is_the_field_loop(case: tuple[Schema, Any]) -> None:
    schema, value = case
    generated, closure = _writers(schema)
    assert _outcome(generated, value) == _outcome(closure, value)


def test_generated_struct_writer_errors_are_the_field_loops() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("s.Row")
        .field("a", Schema.INT32_SCHEMA)
        .field("b", Schema.OPTIONAL_STRING_SCHEMA)
        .field("c", SchemaBuilder.string().default_value("x").build())
        .build()
    )
    generated, closure = _writers(schema)
    for value in (
        None,
        "not a struct",
        Struct.from_values(schema, [None, "b", None]),
        Struct.from_values(schema, [1, None, None]),
    ):
        assert _outcome(generated, value) == _outcome(closure, value)
    nulls = Struct.from_values(schema, [1, None, None])
    assert _outcome(generated, nulls) == ("ok", {"a": 1, "b": from_connect.NULL, "c": "x"})
    short = Struct.from_values(schema, [1, "b", "c"])
    short._values = [1]  # fewer values than fields: the field loop's own error
    with pytest.raises(IndexError):
        closure(short)
    with pytest.raises(IndexError):
        generated(short)


@_SETTINGS
@given(schemas(max_leaves=8).flatmap(lambda s: st.tuples(st.just(s), values(s, nullable=False))), st.booleans())
def test_property_append_body_writes_what_schemaless_writer_writes(case: tuple[Schema, Any], is_key: bool) -> None:
    schema, value = case
    writer = AvroData().writer(schema)
    datum = writer.write(value)
    expected = io.BytesIO()
    fastavro.schemaless_writer(expected, writer.codec, datum)
    assert avro_data.encode(writer.body, datum) == expected.getvalue()
    buf = bytearray(b"\x00")
    avro_data._append_via_schemaless_writer(buf, datum, writer.body.schema, writer.body.named, "", {})
    assert bytes(buf) == b"\x00" + expected.getvalue()
    # and the converter's bytes are Confluent's header and that body
    c = converter(mock_registry(), is_key)
    data = c.from_connect_data("enc-topic", schema, value)
    assert data is not None and data[0] == 0 and data[5:] == expected.getvalue()


def test_compiled_encoder_is_fastavros_and_the_fallback_writes_the_same(monkeypatch: Any) -> None:
    import fastavro._write as compiled

    assert avro_data.append_body is getattr(compiled, "write_data", None)
    schema = (
        SchemaBuilder.struct()
        .name("s.Row")
        .field("a", Schema.INT64_SCHEMA)
        .field("b", Schema.OPTIONAL_STRING_SCHEMA)
        .field("m", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.OPTIONAL_FLOAT64_SCHEMA).build())
        .build()
    )
    rows = [Struct.from_values(schema, [i, None if i % 2 else f"r{i}", {i: i / 3, -i: None}]) for i in range(5)]
    fast = converter(mock_registry())
    expected = fast.from_connect_batch(["enc-fallback"] * 5, [schema] * 5, rows)
    monkeypatch.setattr(converter_module, "append_body", avro_data._append_via_schemaless_writer)
    slow = converter(mock_registry())
    assert slow.from_connect_batch(["enc-fallback"] * 5, [schema] * 5, rows) == expected
    assert [slow.from_connect_data("enc-fallback", schema, r) for r in rows] == expected


def test_use_latest_version_writes_with_the_latest_schema_record_after_record() -> None:
    """A latest schema other than the record's: refused when strict, else the body is written with
    it under its id (parsed once per text, the same bytes for every record)."""
    registry = mock_registry()
    old = SchemaBuilder.struct().name("enc.latest.Value").version(1).field("x", Schema.INT32_SCHEMA).build()
    new = SchemaBuilder.struct().name("enc.latest.Value").version(2).field("x", Schema.INT32_SCHEMA).build()
    converter(registry).from_connect_data("enc-latest", old, Struct(old).put("x", 1))
    registered = converter(registry).from_connect_data("enc-latest", new, Struct(new).put("x", 1))
    assert registered is not None
    conf = {"auto.register.schemas": "false", "use.latest.version": "true"}
    strict = converter(registry, **conf)
    with pytest.raises(DataException, match=r"the latest schema of subject enc-latest-value \(version 2"):
        strict.from_connect_data("enc-latest", old, Struct(old).put("x", 1))
    loose = converter(registry, **conf, **{"latest.compatibility.strict": "false"})
    rows = [Struct(old).put("x", i) for i in (1, 2, 3)]
    expected = [converter(registry).from_connect_data("enc-latest", new, Struct(new).put("x", i)) for i in (1, 2, 3)]
    assert [loose.from_connect_data("enc-latest", old, r) for r in rows] == expected
    assert loose.from_connect_batch(["enc-latest"] * 3, [old] * 3, rows) == expected
    assert len(loose._latest_bodies) == 1

import datetime
import decimal

import pytest

from cdc.api import (
    ConfigException,
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Time,
    Timestamp,
)
from cdc.transforms.mask_field import MaskFieldKey, MaskFieldValue

SCHEMA = (
    SchemaBuilder.struct()
    .field("magic", Schema.INT32_SCHEMA)
    .field("bool", Schema.BOOLEAN_SCHEMA)
    .field("byte", Schema.INT8_SCHEMA)
    .field("short", Schema.INT16_SCHEMA)
    .field("int", Schema.INT32_SCHEMA)
    .field("long", Schema.INT64_SCHEMA)
    .field("float", Schema.FLOAT32_SCHEMA)
    .field("double", Schema.FLOAT64_SCHEMA)
    .field("string", Schema.STRING_SCHEMA)
    .field("date", Date.SCHEMA)
    .field("time", Time.SCHEMA)
    .field("timestamp", Timestamp.SCHEMA)
    .field("decimal", Decimal.schema(2))
    .field("array", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
    .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build())
    .field("bytes", Schema.OPTIONAL_BYTES_SCHEMA)
    .build()
)
NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)


def struct_value() -> Struct:
    return (
        Struct(SCHEMA)
        .put("magic", 42)
        .put("bool", True)
        .put("byte", 42)
        .put("short", 42)
        .put("int", 42)
        .put("long", 42)
        .put("float", 42.0)
        .put("double", 42.0)
        .put("string", "hmm")
        .put("date", NOW.date())
        .put("time", NOW.time())
        .put("timestamp", NOW)
        .put("decimal", decimal.Decimal("42.00"))
        .put("array", [1, 2, 3])
        .put("map", {"what": "what"})
    )


VALUES = {
    "magic": 42,
    "bool": True,
    "int": 42,
    "float": 42.0,
    "string": "55.121.20.20",
    "bigdec": decimal.Decimal("42.0"),
    "datetime": NOW,
    "date": NOW.date(),
    "time": NOW.time(),
    "list": [42],
    "map": {"key": "value"},
}


def xform(fields: list[str], replacement: str | None = None, cls: type = MaskFieldValue) -> MaskFieldValue:
    t = cls()
    configs: dict[str, object] = {"fields": ",".join(fields)}
    if replacement is not None:
        configs["replacement"] = replacement
    t.configure(configs)
    return t


def record(value: object, schema: Schema | None = None) -> SinkRecord:
    return SinkRecord("", 0, None, None, schema, value, 0)


def test_schemaless_default_masks() -> None:
    fields = [f for f in VALUES if f != "magic"]
    out = xform(fields).apply(record(VALUES))
    assert out is not None
    assert out.value == {
        "magic": 42,
        "bool": False,
        "int": 0,
        "float": 0.0,
        "string": "",
        "bigdec": decimal.Decimal(0),
        "datetime": datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC),
        "date": datetime.date(1970, 1, 1),
        "time": datetime.time(0),
        "list": [],
        "map": {},
    }
    assert VALUES["int"] == 42  # input untouched


def test_with_schema_default_masks() -> None:
    fields = [f.name for f in SCHEMA.fields if f.name not in ("magic", "bytes")]
    out = xform(fields).apply(record(struct_value(), SCHEMA))
    assert out is not None and out.value_schema is SCHEMA
    v = out.value
    assert v.get("magic") == 42
    assert (v.get("bool"), v.get("byte"), v.get("short"), v.get("int"), v.get("long")) == (False, 0, 0, 0, 0)
    assert (v.get("float"), v.get("double"), v.get("string")) == (0.0, 0.0, "")
    assert v.get("date") == datetime.date(1970, 1, 1)
    assert v.get("time") == datetime.time(0)
    assert v.get("timestamp") == datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    # Zero at the schema's scale, so the Decimal converter can still encode it.
    assert v.get("decimal").as_tuple().exponent == -2 and v.get("decimal") == 0
    assert Decimal.from_logical(SCHEMA.field("decimal").schema, v.get("decimal")) == b"\x00"  # type: ignore[union-attr]
    assert (v.get("array"), v.get("map")) == ([], {})
    v.validate()


def test_null_fields_stay_null_and_bytes_are_unmaskable() -> None:
    out = xform(["bytes"]).apply(record(struct_value(), SCHEMA))
    assert out is not None and out.value.get("bytes") is None
    with pytest.raises(DataException, match="Cannot mask value of type: bytes"):
        xform(["bytes"]).apply(record(struct_value().put("bytes", b"x"), SCHEMA))


def test_schemaless_absent_field_is_written_as_null_like_kafka() -> None:
    out = xform(["missing"]).apply(record({"a": 1}))
    assert out is not None and out.value == {"a": 1, "missing": None}


@pytest.mark.parametrize(
    ("field", "replacement", "expected"),
    [
        ("byte", "123", 123),
        ("short", "-123", -123),
        ("int", "123", 123),
        ("long", "123", 123),
        ("float", "123.0", 123.0),
        ("double", "1e3", 1000.0),
        ("string", "***", "***"),
        ("decimal", "123", decimal.Decimal("123.00")),
        ("decimal", "1.5", decimal.Decimal("1.50")),
    ],
)
def test_with_schema_and_replacement(field: str, replacement: str, expected: object) -> None:
    out = xform([field], replacement).apply(record(struct_value(), SCHEMA))
    assert out is not None
    got = out.value.get(field)
    assert got == expected and type(got) is type(expected)
    out.value.validate()


@pytest.mark.parametrize(
    ("field", "replacement", "expected"),
    [
        ("int", "123", 123),
        ("float", "123.0", 123.0),
        ("string", "123", "123"),
        ("bigdec", "123.0", decimal.Decimal("123.0")),
    ],
)
def test_schemaless_with_replacement(field: str, replacement: str, expected: object) -> None:
    out = xform([field], replacement).apply(record(VALUES))
    assert out is not None and out.value[field] == expected


@pytest.mark.parametrize("field", ["time", "timestamp", "date", "array", "map", "bool"])
def test_with_schema_unsupported_replacement_type(field: str) -> None:
    message = f"Cannot mask value of type .* with custom replacement \\(field '{field}'\\)"
    with pytest.raises(DataException, match=message):
        xform([field], "123").apply(record(struct_value(), SCHEMA))


@pytest.mark.parametrize("field", ["datetime", "date", "bool", "list", "map"])
def test_schemaless_unsupported_replacement_type(field: str) -> None:
    with pytest.raises(DataException, match="Cannot mask value of type"):
        xform([field], "123").apply(record(VALUES))


@pytest.mark.parametrize(
    ("field", "replacement", "fragment"),
    [
        ("byte", "foo", "to int8"),
        ("byte", "300", "out of range"),
        ("short", "1.5", "to int16"),
        ("int", "foo", "to int32"),
        ("long", "1_000", "to int64"),
        ("float", "foo", "to float"),
        ("double", "1_0", "to double"),
        ("decimal", "foo", "to decimal"),
        ("decimal", "1.234", "too many fraction digits"),
    ],
)
def test_replacement_type_mismatch_is_clear(field: str, replacement: str, fragment: str) -> None:
    with pytest.raises(DataException, match=fragment) as info:
        xform([field], replacement).apply(record(struct_value(), SCHEMA))
    assert f"masked field '{field}'" in str(info.value)


def test_schemaless_replacement_mismatch() -> None:
    with pytest.raises(DataException, match="Unable to convert replacement 'foo' to int"):
        xform(["string", "int"], "foo").apply(record(VALUES))


def test_key_variant() -> None:
    key_schema = SchemaBuilder.struct().field("ssn", Schema.STRING_SCHEMA).build()
    rec = SinkRecord("t", 0, key_schema, Struct(key_schema).put("ssn", "123"), None, "v", 0)
    out = xform(["ssn"], cls=MaskFieldKey).apply(rec)
    assert out is not None and out.key.get("ssn") == "" and out.value == "v"


def test_tombstone_passes_through() -> None:
    rec = record(None)
    assert xform(["a"]).apply(rec) is rec


def test_wrong_shape() -> None:
    with pytest.raises(DataException, match=r"Only Struct objects supported for \[mask fields\], found: int"):
        xform(["a"]).apply(record(1, Schema.INT32_SCHEMA))


@pytest.mark.parametrize(
    ("configs", "key", "fragment"),
    [
        ({}, "fields", "Missing required configuration"),
        ({"fields": ""}, "fields", "Empty list"),
        ({"fields": "a", "replacement": ""}, "replacement", "String must be non-empty"),
    ],
)
def test_config_errors(configs: dict[str, str], key: str, fragment: str) -> None:
    with pytest.raises(ConfigException, match=fragment) as info:
        MaskFieldValue().configure(configs)
    assert info.value.name == key


def test_replace_null_with_default() -> None:
    schema = SchemaBuilder.struct().field("n", SchemaBuilder.int32().optional().default_value(7).build()).build()
    on = xform(["n"]).apply(record(Struct(schema), schema))
    t = MaskFieldValue()
    t.configure({"fields": "n", "replace.null.with.default": "false"})
    off = t.apply(record(Struct(schema), schema))
    assert on.value.get_without_default("n") == 0  # type: ignore[union-attr]  # the default (7) got masked
    assert off.value.get_without_default("n") is None  # type: ignore[union-attr]


@pytest.mark.parametrize("replacement", ["NaN", "nan", "Infinity", "-inf", "+infinity"])
@pytest.mark.parametrize("field", ["float", "double", "decimal"])
def test_replacement_needs_java_number_syntax(field: str, replacement: str) -> None:
    # Kafka parses numeric replacements with `new BigDecimal(s)` (Values.asDouble), which
    # rejects the NaN/Infinity spellings that Python's float() accepts.
    with pytest.raises(DataException, match=f"Unable to convert replacement .* for masked field '{field}'"):
        xform([field], replacement).apply(record(struct_value(), SCHEMA))


@pytest.mark.parametrize("replacement", ["nan", "inf"])
def test_schemaless_float_replacement_needs_java_number_syntax(replacement: str) -> None:
    with pytest.raises(DataException, match="Unable to convert replacement"):
        xform(["float"], replacement).apply(record(VALUES))


@pytest.mark.parametrize(("replacement", "expected"), [("1.", 1.0), (".5", 0.5), ("-2E3", -2000.0), ("+1e-1", 0.1)])
def test_replacement_java_number_forms(replacement: str, expected: float) -> None:
    out = xform(["double"], replacement).apply(record(struct_value(), SCHEMA))
    assert out is not None and out.value.get("double") == expected

"""JsonConverter errors and configuration: Kafka's messages, DataException everywhere."""

from __future__ import annotations

import decimal
import re
from typing import Any

import pytest

from cdc.api.config import ConfigType
from cdc.api.data import Decimal, Schema, SchemaBuilder, Struct
from cdc.api.errors import ConfigException, DataException
from cdc.converters import JsonConverter
from cdc.converters.json import ENVELOPE_ADVICE

TOPIC = "orders-topic"


def converter(**configs: Any) -> JsonConverter:
    c = JsonConverter()
    c.configure({k.replace("_", "."): v for k, v in configs.items()}, False)
    return c


ADVICE = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional'
    " fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter"
    " configuration."
)


@pytest.mark.parametrize(
    "data",
    [b'{"a":1}', b"true", b"[1,2]", b'{"schema":null}', b'{"schema":null,"payload":1,"extra":2}', b""],
)
def test_missing_envelope_gives_kafkas_advice(data: bytes) -> None:
    with pytest.raises(DataException) as e:
        converter().to_connect_data(TOPIC, data)
    assert str(e.value) == ADVICE == ENVELOPE_ADVICE


@pytest.mark.parametrize(
    "data", [b"{not json", b'{"schema":{"type":"int32"},"payload":NaN}', b"\xff\xfe\xfa", b'{"schema":']
)
@pytest.mark.parametrize("schemas_enable", [True, False])
def test_bad_json_names_the_topic(data: bytes, schemas_enable: bool) -> None:
    with pytest.raises(DataException, match="failed due to serialization error of topic orders-topic"):
        converter(schemas_enable=schemas_enable).to_connect_data(TOPIC, data)


def test_trailing_content_after_the_value_is_ignored_like_jackson() -> None:
    assert converter(schemas_enable=False).to_connect_data(TOPIC, b"1 2").value == 1


@pytest.mark.parametrize(
    ("schema_json", "message"),
    [
        ('{"optional":true}', "Schema must contain 'type' field"),
        ('{"type":"uint8"}', "Unknown schema type: uint8"),
        ('{"type":"array"}', "Array schema did not specify the element type"),
        ('{"type":"map","values":{"type":"int8"}}', "Map schema did not specify the key type"),
        ('{"type":"map","keys":{"type":"int8"}}', "Map schema did not specify the value type"),
        ('{"type":"struct","fields":{}}', 'Struct schema\'s "fields" argument is not an array.'),
        ('{"type":"struct","fields":[{"type":"int8"}]}', "Struct schema's field name not specified properly"),
        ('{"type":"int8","parameters":{"a":1}}', "Schema parameters must have string values."),
    ],
)
def test_bad_schemas_use_kafkas_messages(schema_json: str, message: str) -> None:
    data = ('{"schema":' + schema_json + ',"payload":null}').encode()
    with pytest.raises(DataException, match=re.escape(message)):
        converter().to_connect_data(TOPIC, data)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ('{"type":"int32"}', "Invalid null value for required INT32 field"),
        (
            '{"type":"struct","fields":[{"type":"int8","field":"a"}]}',
            "Structs should be encoded as JSON objects, but found ARRAY",
        ),
        (
            '{"type":"map","keys":{"type":"string"},"values":{"type":"int8"}}',
            "Maps with string fields should be encoded as JSON objects, but found ARRAY",
        ),
        (
            '{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}}',
            "Found invalid map entry, expected length 2 but found :1",
        ),
        ('{"type":"int8"}', "INT8"),
        ('{"type":"string"}', "STRING"),
        ('{"type":"bytes"}', "Invalid bytes field"),
        (
            '{"type":"int32","name":"org.apache.kafka.connect.data.Date"}',
            "Invalid type for Date, underlying representation should be integer but was STRING",
        ),
    ],
)
def test_payloads_that_do_not_fit_the_schema(payload: str, message: str) -> None:
    values = {
        "Invalid null": "null",
        "Structs": "[1]",
        "Maps with": "[[1,2]]",
        "Found invalid": "[[1]]",
        "INT8": "300",
        "STRING": "5",
        "Invalid bytes": '"@@@"',
        "Invalid type for Date": '"2024-01-01"',
    }
    body = next(v for k, v in values.items() if message.startswith(k))
    data = ('{"schema":' + payload + ',"payload":' + body + "}").encode()
    with pytest.raises(DataException, match=re.escape(message)):
        converter().to_connect_data(TOPIC, data)


def test_required_null_cannot_be_written() -> None:
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="null value for field that is required and has no default value"):
        converter().from_connect_data(TOPIC, schema, Struct(schema))
    with pytest.raises(DataException, match="required and has no default"):
        converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, None)


def test_replace_null_with_default_false_makes_required_default_fields_fail() -> None:
    # KIP-581: without replacement the default no longer saves a required field.
    schema = SchemaBuilder.struct().field("a", SchemaBuilder.int32().default_value(7).build()).build()
    assert converter().from_connect_data(TOPIC, schema, Struct(schema)).endswith(b'"payload":{"a":7}}')
    with pytest.raises(DataException, match="required and has no default"):
        converter(replace_null_with_default=False).from_connect_data(TOPIC, schema, Struct(schema))


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        # JsonConverterTest.mismatchSchemaJson
        (Schema.FLOAT64_SCHEMA, True, "Invalid type for FLOAT64"),
        (Schema.INT8_SCHEMA, 128, "Invalid type for INT8"),
        (Schema.STRING_SCHEMA, 5, "Invalid type for STRING"),
        (Schema.BYTES_SCHEMA, "x", "Invalid type for bytes type"),
        (SchemaBuilder.struct().build(), {"a": 1}, "Mismatching schema."),
        (Decimal.schema(2), decimal.Decimal("1.5"), "mismatching scale"),
        (Decimal.schema(2), 1.5, "Invalid type for Decimal"),
        # JsonConverterTest.decimalToJsonWithoutSchema
        (None, decimal.Decimal("1.56"), "does not have corresponding schema type"),
        (None, Struct(SchemaBuilder.struct().build()), "Mismatching schema."),
        (None, 2**63, "does not fit int64"),
    ],
)
def test_values_that_do_not_fit_the_schema(schema: Schema | None, value: Any, message: str) -> None:
    with pytest.raises(DataException, match=re.escape(message)):
        converter().from_connect_data(TOPIC, schema, value)


def test_struct_of_an_equal_but_distinct_schema_is_accepted() -> None:
    def build() -> Schema:
        return SchemaBuilder.struct().name("s").field("a", Schema.INT8_SCHEMA).build()

    assert converter().from_connect_data(TOPIC, build(), Struct(build()).put("a", 1)) is not None
    other = SchemaBuilder.struct().name("t").field("a", Schema.INT8_SCHEMA).build()
    with pytest.raises(DataException, match=re.escape("Mismatching schema.")):
        converter().from_connect_data(TOPIC, build(), Struct(other).put("a", 1))


def test_lone_surrogate_is_a_serialization_error_naming_the_topic() -> None:
    with pytest.raises(DataException, match="serialization error of topic orders-topic"):
        converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, "\ud800")


def test_config_definition_matches_kafka() -> None:
    keys = JsonConverter().config().config_keys
    assert keys["schemas.enable"].type is ConfigType.BOOLEAN and keys["schemas.enable"].default_value is True
    assert keys["schemas.cache.size"].default_value == 1000
    assert keys["decimal.format"].default_value == "BASE64"
    assert keys["replace.null.with.default"].default_value is True
    assert not keys["converter.type"].has_default


def test_invalid_configs_are_rejected() -> None:
    with pytest.raises(ConfigException, match=re.escape("decimal.format")):
        converter(decimal_format="HEX")
    with pytest.raises(ConfigException, match=re.escape("schemas.enable")):
        converter(schemas_enable="maybe")
    with pytest.raises(ConfigException, match=re.escape("converter.type")):
        JsonConverter().configure({})  # header use must say which side it is, as in Kafka


def test_decimal_format_is_case_insensitive() -> None:
    c = converter(decimal_format="numeric")
    assert c.from_connect_data(TOPIC, Decimal.schema(1), decimal.Decimal("2.5")).endswith(b'"payload":2.5}')

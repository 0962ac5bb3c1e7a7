"""The Kafka SMTs added for issue 23 through the real plugin registry and transformation chain:
Kafka class names and short names resolve, and bad config is one line naming the alias's key."""

from typing import Any

import pytest

from cdc.api import ConfigException, Schema, SchemaBuilder, SourceRecord, Struct
from cdc.runtime.plugins import PluginKind, PluginRegistry
from cdc.runtime.validation import ConnectorValidator
from cdc.transforms import build_transformation_chain

K = "org.apache.kafka.connect.transforms."
NEW = {
    "Cast$Key": "CastKey",
    "Cast$Value": "CastValue",
    "ExtractField$Key": "ExtractFieldKey",
    "ExtractField$Value": "ExtractFieldValue",
    "Flatten$Key": "FlattenKey",
    "Flatten$Value": "FlattenValue",
    "HoistField$Key": "HoistFieldKey",
    "HoistField$Value": "HoistFieldValue",
    "ValueToKey": "ValueToKey",
    "TimestampConverter$Key": "TimestampConverterKey",
    "TimestampConverter$Value": "TimestampConverterValue",
    "TimestampRouter": "TimestampRouter",
    "SetSchemaMetadata$Key": "SetSchemaMetadataKey",
    "SetSchemaMetadata$Value": "SetSchemaMetadataValue",
    "HeaderFrom$Key": "HeaderFromKey",
    "HeaderFrom$Value": "HeaderFromValue",
    "InsertHeader": "InsertHeader",
    "DropHeaders": "DropHeaders",
}


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    return PluginRegistry.discover()


@pytest.mark.parametrize(("kafka", "short"), sorted(NEW.items()))
def test_kafka_class_name_and_short_name_resolve(registry: PluginRegistry, kafka: str, short: str) -> None:
    by_class = registry.resolve(K + kafka, [PluginKind.TRANSFORMATION])
    assert by_class.cls.__name__ == short and by_class.cls.__module__.startswith("cdc.transforms.")
    assert registry.resolve(short, [PluginKind.TRANSFORMATION]).cls is by_class.cls


BAD = [
    ("Cast$Value", {"spec": "foo:bytes"}, "spec"),
    ("Cast$Key", {"spec": ""}, "spec"),
    ("ExtractField$Value", {}, "field"),
    ("ExtractField$Value", {"field": "`a.b", "field.syntax.version": "V2"}, "field"),
    ("ExtractField$Key", {"field": "a", "field.syntax.version": "V9"}, "field.syntax.version"),
    ("HoistField$Value", {}, "field"),
    ("ValueToKey", {"fields": ""}, "fields"),
    ("TimestampConverter$Value", {"target.type": "epoch"}, "target.type"),
    ("TimestampConverter$Value", {"target.type": "string"}, "format"),
    ("TimestampConverter$Key", {"target.type": "unix", "unix.precision": "days"}, "unix.precision"),
    ("TimestampRouter", {"timestamp.format": "yyyy-qq"}, "timestamp.format"),
    ("SetSchemaMetadata$Value", {}, "schema.name"),
    ("SetSchemaMetadata$Value", {"schema.version": "v1"}, "schema.version"),
    ("HeaderFrom$Value", {"fields": "a,b", "headers": "h", "operation": "copy"}, "headers"),
    ("HeaderFrom$Key", {"fields": "a", "headers": "h", "operation": "cut"}, "operation"),
    ("InsertHeader", {"header": "h"}, "value.literal"),
    ("DropHeaders", {"headers": ""}, "headers"),
]


@pytest.mark.parametrize(("kafka", "props", "key"), BAD)
def test_bad_config_is_one_line_naming_alias_and_key(
    registry: PluginRegistry, kafka: str, props: dict[str, Any], key: str
) -> None:
    config = {"transforms": "t", "transforms.t.type": K + kafka}
    config.update({f"transforms.t.{k}": v for k, v in props.items()})
    with pytest.raises(ConfigException) as info:
        build_transformation_chain(config, ConnectorValidator(registry).resolve_for_chain)
    message = str(info.value)
    assert info.value.name == f"transforms.t.{key}", message
    assert f"transforms.t.{key}" in message and "\n" not in message


def test_a_chain_of_new_smts(registry: PluginRegistry) -> None:
    """ValueToKey + ExtractField$Key + Cast$Value + TimestampRouter + InsertHeader, as a connector config lists them."""
    config = {
        "transforms": "key,id,cast,route,hdr",
        "transforms.key.type": K + "ValueToKey",
        "transforms.key.fields": "id",
        "transforms.id.type": K + "ExtractField$Key",
        "transforms.id.field": "id",
        "transforms.cast.type": "CastValue",
        "transforms.cast.spec": "amount:float64",
        "transforms.route.type": "TimestampRouter",
        "transforms.route.topic.format": "${topic}_${timestamp}",
        "transforms.route.timestamp.format": "yyyy_MM",
        "transforms.hdr.type": K + "InsertHeader",
        "transforms.hdr.header": "origin",
        "transforms.hdr.value.literal": "cdc",
    }
    chain = build_transformation_chain(config, ConnectorValidator(registry).resolve_for_chain)
    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("amount", Schema.INT64_SCHEMA).build()
    record = SourceRecord(
        {}, {}, "orders", 0, None, None, schema, Struct(schema).put("id", 7).put("amount", 5), 1_700_000_000_000
    )
    out = chain.apply(record)
    assert out is not None
    assert out.topic == "orders_2023_11"
    assert out.key_schema == Schema.INT32_SCHEMA and out.key == 7
    assert out.value.get("amount") == 5.0 and out.value_schema.field("amount").schema == Schema.FLOAT64_SCHEMA  # type: ignore[union-attr]
    assert [(h.key, h.value) for h in out.headers] == [("origin", "cdc")]

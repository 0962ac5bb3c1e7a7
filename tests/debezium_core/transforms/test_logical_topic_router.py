"""io.debezium.transforms.ByLogicalTableRouter / ToLogicalTopicRouter: Debezium's ByLogicalTableRouterTest
and ToLogicalTopicRouterTest cases and the topic-routing documentation's example (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import ConfigException, Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.envelope import Envelope
from cdc_debezium.transforms.logical_topic_router import ByLogicalTableRouter, ToLogicalTopicRouter
from tests.debezium_core.transforms.envelopes import assert_one_line_config_error, chain, heartbeat, source
from tests.support.examples import examples

SHARDS = {"topic.regex": "(.*)customers_shard(.*)", "topic.replacement": "$1customers_all_shards"}


def by_table(**props: Any) -> ByLogicalTableRouter[SourceRecord]:
    smt: ByLogicalTableRouter[SourceRecord] = ByLogicalTableRouter()
    smt.configure(props)
    return smt


def key_record(topic: str, id: int = 123, value: Any = None, value_schema: Schema | None = None) -> SourceRecord:
    key_schema = SchemaBuilder.struct().name(f"{topic}.Key").field("id", Schema.INT64_SCHEMA).build()
    return SourceRecord({}, {}, topic, None, key_schema, Struct(key_schema).put("id", id), value_schema, value)


def applied(smt: Any, rec: SourceRecord) -> SourceRecord:
    out = smt.apply(rec)
    assert out is not None
    return out


@pytest.mark.parametrize(
    ("mode", "key_schema_name"),
    [
        ("avro", "mysql_server_1.inventory.customers_all_shards.Key"),
        ("none", "mysql-server-1.inventory.customers_all_shards.Key"),
    ],
)
def test_key_replacement_with_schema_name_adjustment(mode: str, key_schema_name: str) -> None:
    smt = by_table(
        **SHARDS,
        **{
            "key.field.name": "shard_id",
            "key.field.regex": "(.*)customers_shard_(.*)",
            "key.field.replacement": "$2",
            "schema.name.adjustment.mode": mode,
        },
    )
    for topic, id, shard in (
        ("mysql-server-1.inventory.customers_shard_1", 123, "1"),
        ("mysql-server-1.inventory.customers_shard_2", 123, "2"),
        ("mysql-server-1.inventory.customers_shard_2", 456, "2"),
    ):
        out = applied(smt, key_record(topic, id))
        assert out.topic == "mysql-server-1.inventory.customers_all_shards"
        assert out.key_schema is not None and out.key_schema.name == key_schema_name
        assert [f.name for f in out.key_schema.fields] == ["id", "shard_id"]
        assert out.key.to_dict() == {"id": id, "shard_id": shard}


def test_heartbeat_topic_replacement_keeps_a_null_value() -> None:
    smt = by_table(
        **{
            "topic.regex": "__debezium-heartbeat(.*)",
            "topic.replacement": "debezium_heartbeat",
            "key.field.name": "orig",
        }
    )
    hb = heartbeat()
    out = applied(smt, hb)
    assert out.topic == "debezium_heartbeat" and out.key_schema.name == "debezium_heartbeat.Key"  # type: ignore[union-attr]
    assert out.key.to_dict() == {"serverName": "dummy", "orig": "__debezium-heartbeat.dummy"}
    assert out.value is hb.value  # not a change event: the value is kept
    tomb = SourceRecord({}, {}, "__debezium-heartbeat.x", None, hb.key_schema, hb.key, None, None)
    out = applied(smt, tomb)
    assert out.value is None and out.key.get("orig") == "__debezium-heartbeat.x"


def test_null_key_stays_null() -> None:
    smt = by_table(**SHARDS)
    out = applied(smt, SourceRecord({}, {}, "mysql-server-1.inventory.customers_shard_1", None, None, None, None, None))
    assert out.topic == "mysql-server-1.inventory.customers_all_shards"
    assert out.key is None and out.key_schema is None


def test_namespace_replacement_without_key_change() -> None:
    smt = by_table(
        **{
            "topic.regex": "(.*).dbz_shard_\\d+.(.*)",
            "topic.replacement": "dbz_core.$2",
            "key.enforce.uniqueness": "false",
        }
    )
    for topic in ("s21.dbz_shard_21.address", "s22.dbz_shard_22.address"):
        out = applied(smt, key_record(topic))
        assert out.topic == "dbz_core.address" and out.key_schema.name == "dbz_core.address.Key"  # type: ignore[union-attr]
        assert out.key.to_dict() == {"id": 123}


def test_schema_change_event_is_rerouted_with_its_value() -> None:
    smt = by_table(**{"topic.regex": "(.*)", "topic.replacement": "$1_rerouted"})
    value_schema = (
        SchemaBuilder.struct()
        .name("io.debezium.connector.mysql.SchemaChangeValue")
        .field("databaseName", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    key_schema = (
        SchemaBuilder.struct()
        .name("io.debezium.connector.mysql.SchemaChangeKey")
        .field("databaseName", Schema.STRING_SCHEMA)
        .build()
    )
    value = Struct(value_schema).put("databaseName", "my-db")
    rec = SourceRecord(
        None,
        {"offset": "1"},
        "schema_changes",
        0,
        key_schema,
        Struct(key_schema).put("databaseName", "my-db"),
        value_schema,
        value,
    )
    out = applied(smt, rec)
    assert out.topic == "schema_changes_rerouted" and out.value is value and out.kafka_partition == 0


def test_change_event_envelope_is_renamed_and_nulls_with_defaults_preserved() -> None:
    smt = by_table(
        **{"topic.regex": "(.+)\\.(.+)\\.(.+)", "topic.replacement": "$1.$3", "key.enforce.uniqueness": "false"}
    )
    flag = SchemaBuilder.int16().optional().default_value(0).build()
    key_schema = (
        SchemaBuilder.struct()
        .name("shard_1.inventory.customers.Key")
        .field("id", Schema.INT64_SCHEMA)
        .field("flag", flag)
        .build()
    )
    row_schema = (
        SchemaBuilder.struct()
        .name("shard_1.inventory.customers.Value")
        .optional()
        .field("id", Schema.INT64_SCHEMA)
        .field("flag", flag)
        .build()
    )
    env = Envelope.define("shard_1.inventory.customers.Envelope", row_schema, source().schema)
    row = Struct(row_schema).put("id", 1)
    rec = SourceRecord(
        None,
        None,
        "shard_1.inventory.customers",
        None,
        key_schema,
        Struct(key_schema).put("id", 1),
        env.schema,
        env.make("u", row, row, source()),
    )
    out = applied(smt, rec)
    assert out.topic == "shard_1.customers"
    assert out.value_schema is not None and out.value_schema.name == "shard_1.customers.Envelope"
    value = out.value
    assert isinstance(value, Struct)
    for part in ("before", "after"):
        assert value.get(part).schema.name == "shard_1.customers.Value"
        assert value.get(part).get_without_default("flag") is None
    assert out.key.get_without_default("flag") is None  # type: ignore[union-attr]
    assert value.get("op") == "u" and value.get("source") == source()
    value.validate()


@pytest.mark.parametrize(
    ("cls", "default"),
    [(ByLogicalTableRouter, "__dbz__physicalTableIdentifier"), (ToLogicalTopicRouter, "__dbz__sourceIdentifier")],
)
def test_default_and_explicit_key_field_name(cls: type, default: str) -> None:
    for props, name in ((SHARDS, default), ({**SHARDS, "key.field.name": "custom_source_id"}, "custom_source_id")):
        smt = cls()
        smt.configure(props)
        out = applied(smt, key_record("server1.inventory.customers_shard_1", 1))
        assert [f.name for f in out.key_schema.fields] == ["id", name]  # type: ignore[union-attr]
        assert out.key.get(name) == "server1.inventory.customers_shard_1"


def test_unmatched_topic_and_empty_result_pass_through() -> None:
    smt = by_table(**SHARDS)
    rec = key_record("other.topic")
    assert smt.apply(rec) is rec
    empty = by_table(**{"topic.regex": "drop_(.*)", "topic.replacement": "$1"})
    rec = key_record("drop_")
    assert empty.apply(rec) is rec


def test_legacy_cache_size_key_is_accepted() -> None:
    by_table(**SHARDS, **{"logical.table.cache.size": "4"})
    with pytest.raises(ConfigException):
        by_table(**SHARDS, **{"logical.table.cache.size": "zero"})


@settings(max_examples=examples(50), deadline=None)
@given(shards=st.lists(st.tuples(st.integers(1, 30), st.integers(1, 5)), min_size=1, max_size=20))
def test_keys_stay_unique_across_shards(shards: list[tuple[int, int]]) -> None:
    """Same primary key in different shards: distinct keys after routing, equal keys within a shard."""
    smt = by_table(**SHARDS)
    keys = {}
    for shard, id in shards:
        out = applied(smt, key_record(f"db.inv.customers_shard_{shard}", id))
        keys.setdefault((shard, id), set()).add(tuple(out.key.to_dict().items()))
    assert all(len(k) == 1 for k in keys.values())
    assert len({next(iter(k)) for k in keys.values()}) == len(keys)


def test_registered_names() -> None:
    for name in (
        "io.debezium.transforms.ByLogicalTableRouter",
        "io.debezium.transforms.ToLogicalTopicRouter",
        "ByLogicalTableRouter",
    ):
        c = chain({"transforms": "r", "transforms.r.type": name, **{f"transforms.r.{k}": v for k, v in SHARDS.items()}})
        assert c.apply(key_record("a.customers_shard_1")).topic == "a.customers_all_shards"


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"topic.regex": "someValidRegex(.*)"}, "topic.replacement"),
        ({"topic.regex": "someValidRegex(.*)", "topic.replacement": ""}, "topic.replacement"),
        ({"topic.replacement": "$1"}, "topic.regex"),
        ({"topic.regex": "(unclosed", "topic.replacement": "$1"}, "topic.regex"),
        ({"topic.regex": "(.*)", "topic.replacement": "$2"}, "topic.replacement"),
        (
            {**SHARDS, "key.field.regex": "If this is set, key.field.replacement must be non-empty"},
            "key.field.replacement",
        ),
        ({**SHARDS, "key.field.regex": "(.*)", "key.field.replacement": ""}, "key.field.replacement"),
        ({**SHARDS, "key.field.regex": "[", "key.field.replacement": "$1"}, "key.field.regex"),
        ({**SHARDS, "schema.name.adjustment.mode": "avro2"}, "schema.name.adjustment.mode"),
    ],
)
def test_bad_config_is_one_line_naming_alias_and_key(props: dict[str, str], key: str) -> None:
    config = {"transforms": "reroute", "transforms.reroute.type": "ByLogicalTableRouter"}
    config |= {f"transforms.reroute.{k}": v for k, v in props.items()}
    message = assert_one_line_config_error(config, f"transforms.reroute.{key}")
    assert "reroute" in message

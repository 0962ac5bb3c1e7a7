from collections.abc import Mapping
from typing import Any

import pytest

from cdc.api import ConfigDef, ConfigException, ConfigType, SourceRecord, Transformation
from cdc.transforms import (
    Filter,
    HasHeaderKey,
    InsertField,
    InsertFieldKey,
    InsertFieldValue,
    MaskFieldValue,
    RecordIsTombstone,
    RegexRouter,
    ReplaceFieldValue,
    TopicNameMatches,
    TransformationChain,
    build_transformation_chain,
    transformation_config_def,
    validate_transformations,
)

K = "org.apache.kafka.connect.transforms."
CLASSES: dict[str, type] = {
    K + "RegexRouter": RegexRouter,
    K + "InsertField$Key": InsertFieldKey,
    K + "InsertField$Value": InsertFieldValue,
    K + "ReplaceField$Value": ReplaceFieldValue,
    K + "MaskField$Value": MaskFieldValue,
    K + "Filter": Filter,
    K + "predicates.TopicNameMatches": TopicNameMatches,
    K + "predicates.RecordIsTombstone": RecordIsTombstone,
    K + "predicates.HasHeaderKey": HasHeaderKey,
    "abstract.InsertField": InsertField,
    "not.a.Transform": dict,
}
closed: list[str] = []


class Closing(Transformation[Any]):
    """Records close() calls so the builder's cleanup can be checked."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.tag = configs.get("tag", "?")
        if configs.get("fail"):
            raise ConfigException(f"Invalid value {configs['fail']} for configuration fail: told to", "fail")

    def apply(self, record: Any) -> Any:
        return record

    def config(self) -> ConfigDef:
        return ConfigDef().define("tag", ConfigType.STRING, "?").define("fail", ConfigType.STRING, None)

    def close(self) -> None:
        closed.append(self.tag)


CLASSES["test.Closing"] = Closing


def resolve(kind: str, name: str) -> type:
    if name not in CLASSES:
        raise LookupError(f"no {kind} plugin called {name}")
    return CLASSES[name]


def rec(topic: str = "orders", value: object = None, key: object = None) -> SourceRecord:
    return SourceRecord({"server": "s"}, {"pos": 1}, topic, 0, None, key, None, value)


def test_empty_config_is_an_identity_chain() -> None:
    chain = build_transformation_chain({}, resolve)
    r = rec(value={"a": 1})
    assert chain.stages == () and chain.apply(r) is r


def test_stages_apply_in_order_with_prefix_stripped_configs() -> None:
    chain = build_transformation_chain(
        {
            "transforms": "route, insert",
            "transforms.route.type": K + "RegexRouter",
            "transforms.route.regex": "(.*)",
            "transforms.route.replacement": "copy-$1",
            "transforms.insert.type": K + "InsertField$Value",
            "transforms.insert.topic.field": "topic",
        },
        resolve,
    )
    assert [s.alias for s in chain.stages] == ["route", "insert"]
    out = chain.apply(rec(value={"a": 1}))
    assert out is not None and out.topic == "copy-orders"
    assert out.value == {"a": 1, "topic": "copy-orders"}  # insert saw the routed topic
    assert out.source_offset == {"pos": 1}


def test_a_dropped_record_stops_the_chain() -> None:
    chain = build_transformation_chain(
        {
            "transforms": "drop,insert",
            "transforms.drop.type": K + "Filter",
            "transforms.insert.type": K + "InsertField$Value",
            "transforms.insert.topic.field": "topic",
        },
        resolve,
    )
    assert chain.apply(rec(value="not a map")) is None  # InsertField would have raised


TOMBSTONE_FILTER = {
    "transforms": "dropTombstones",
    "transforms.dropTombstones.type": K + "Filter",
    "transforms.dropTombstones.predicate": "isTombstone",
    "predicates": "isTombstone",
    "predicates.isTombstone.type": K + "predicates.RecordIsTombstone",
}


def test_predicate_gates_the_transform() -> None:
    chain = build_transformation_chain(TOMBSTONE_FILTER, resolve)
    assert chain.apply(rec(value=None)) is None
    live = rec(value={"a": 1})
    assert chain.apply(live) is live


def test_negate_inverts_the_predicate() -> None:
    chain = build_transformation_chain({**TOMBSTONE_FILTER, "transforms.dropTombstones.negate": "true"}, resolve)
    tombstone = rec(value=None)
    assert chain.apply(tombstone) is tombstone
    assert chain.apply(rec(value={"a": 1})) is None


def test_topic_predicate_with_configs_and_negate_false() -> None:
    chain = build_transformation_chain(
        {
            "transforms": "onlyOrders",
            "transforms.onlyOrders.type": K + "Filter",
            "transforms.onlyOrders.predicate": "notOrders",
            "transforms.onlyOrders.negate": "false",
            "predicates": "notOrders",
            "predicates.notOrders.type": K + "predicates.TopicNameMatches",
            "predicates.notOrders.pattern": "(?!orders$).*",
        },
        resolve,
    )
    assert chain.apply(rec("orders", {"a": 1})) is not None
    assert chain.apply(rec("customers", {"a": 1})) is None


def test_each_stage_gets_its_own_predicate_instance() -> None:
    chain = build_transformation_chain(
        {
            "transforms": "a,b",
            "transforms.a.type": K + "Filter",
            "transforms.a.predicate": "p",
            "transforms.b.type": K + "Filter",
            "transforms.b.predicate": "p",
            "predicates": "p",
            "predicates.p.type": K + "predicates.RecordIsTombstone",
        },
        resolve,
    )
    assert chain.stages[0].predicate is not chain.stages[1].predicate


def test_chain_from_plain_transformations_and_close() -> None:
    closed.clear()
    a, b = Closing(), Closing()
    a.configure({"tag": "a"})
    b.configure({"tag": "b"})
    chain: TransformationChain[Any] = TransformationChain([a, b])
    r = rec()
    assert chain.apply(r) is r
    chain.close()
    assert closed == ["a", "b"]


def test_already_built_stages_are_closed_when_a_later_one_fails() -> None:
    closed.clear()
    with pytest.raises(ConfigException) as info:
        build_transformation_chain(
            {
                "transforms": "ok,bad",
                "transforms.ok.type": "test.Closing",
                "transforms.ok.tag": "ok",
                "transforms.bad.type": "test.Closing",
                "transforms.bad.tag": "bad",
                "transforms.bad.fail": "yes",
            },
            resolve,
        )
    assert info.value.name == "transforms.bad.fail"
    assert str(info.value) == "Invalid value yes for configuration transforms.bad.fail: told to"
    assert closed == ["bad", "ok"]


@pytest.mark.parametrize(
    ("extra", "key", "fragment"),
    [
        # alias listed twice
        ({"transforms": "a,a"}, "transforms", "Invalid value [a, a] for configuration transforms: Duplicate alias"),
        ({"transforms": "a,,b"}, "transforms", "empty transformation alias"),
        (
            {"predicates": "p,p", "predicates.p.type": K + "predicates.RecordIsTombstone"},
            "predicates",
            "Duplicate alias",
        ),
        # type missing / unknown / wrong kind / abstract
        ({"transforms.a.type": None}, "transforms.a.type", 'Missing required configuration "transforms.a.type"'),
        ({"transforms.a.type": "com.example.Nope"}, "transforms.a.type", "Class com.example.Nope could not be found"),
        ({"transforms.a.type": K + "InsertField"}, "transforms.a.type", "Did you mean " + K + "InsertField$Key or"),
        ({"transforms.a.type": "not.a.Transform"}, "transforms.a.type", "Not a Transformation"),
        ({"transforms.a.type": "abstract.InsertField"}, "transforms.a.type", "abstract and cannot be created"),
        ({"transforms.a.type": K + "predicates.HasHeaderKey"}, "transforms.a.type", "Not a Transformation"),
        # predicate references
        ({"transforms.a.predicate": "p"}, "transforms.a.predicate", "predicate 'p' is not defined"),
        ({"transforms.a.negate": "true"}, "transforms.a.negate", "no config 'transforms.a.predicate'"),
        (
            {
                "transforms.a.predicate": "p",
                "transforms.a.negate": "yes",
                "predicates": "p",
                "predicates.p.type": K + "predicates.RecordIsTombstone",
            },
            "transforms.a.negate",
            "true or false",
        ),
        ({"predicates": "p"}, "predicates.p.type", 'Missing required configuration "predicates.p.type"'),
        # the transform's / predicate's own config errors, with the prefix on the key
        (
            {"transforms.a.type": K + "RegexRouter", "transforms.a.regex": "("},
            "transforms.a.regex",
            "Invalid value ( for configuration transforms.a.regex:",
        ),
        (
            {"transforms.a.type": K + "RegexRouter", "transforms.a.regex": "x"},
            "transforms.a.replacement",
            'Missing required configuration "transforms.a.replacement"',
        ),
        ({"transforms.a.type": K + "InsertField$Value"}, "transforms.a.type", "No field insertion configured"),
        (
            {"predicates": "p", "predicates.p.type": K + "predicates.TopicNameMatches"},
            "predicates.p.pattern",
            'Missing required configuration "predicates.p.pattern"',
        ),
    ],
)
def test_config_errors_name_the_exact_key(extra: dict[str, Any], key: str, fragment: str) -> None:
    config = {"transforms": "a", "transforms.a.type": K + "Filter", **extra}
    config = {k: v for k, v in config.items() if v is not None}
    with pytest.raises(ConfigException) as info:
        build_transformation_chain(config, resolve)
    assert info.value.name == key
    assert fragment in str(info.value)


def test_unlisted_alias_keys_are_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    chain = build_transformation_chain({"transforms.x.type": K + "Filter"}, resolve)
    assert chain.stages == ()
    assert "transforms.x.type" in caplog.text


# -- validation (ConnectorConfig.enrich) ------------------------------------------------------
def test_config_def_embeds_prefixed_plugin_keys() -> None:
    definition = transformation_config_def(
        {
            "transforms": "route,bad",
            "transforms.route.type": K + "RegexRouter",
            "transforms.bad.type": "com.example.Nope",
            "predicates": "p",
            "predicates.p.type": K + "predicates.HasHeaderKey",
        },
        resolve,
    )
    names = definition.names()
    assert {
        "transforms",
        "predicates",
        "transforms.route.type",
        "transforms.route.predicate",
        "transforms.route.negate",
        "transforms.route.regex",
        "transforms.route.replacement",
        "transforms.bad.type",
        "transforms.bad.predicate",
        "transforms.bad.negate",
        "predicates.p.type",
        "predicates.p.name",
    } == names
    assert definition.config_keys["transforms.route.regex"].group == "Transforms: route"


def test_validate_reports_errors_per_key() -> None:
    config = {
        "transforms": "route,insert,bad,neg",
        "transforms.route.type": K + "RegexRouter",
        "transforms.route.regex": "(",
        "transforms.insert.type": K + "InsertField$Value",
        "transforms.bad.type": "com.example.Nope",
        "transforms.bad.predicate": "missing",
        "transforms.neg.type": K + "Filter",
        "transforms.neg.negate": "true",
        "predicates": "p",
        "predicates.p.type": K + "predicates.TopicNameMatches",
    }
    values = {cv.name: cv for cv in validate_transformations(config, resolve)}
    errors = {name: cv.errors for name, cv in values.items() if cv.errors}
    assert set(errors) == {
        "transforms.route.regex",
        "transforms.route.replacement",
        "transforms.insert.type",  # from configure(): nothing to insert
        "transforms.bad.type",
        "transforms.bad.predicate",
        "transforms.neg.negate",
        "predicates.p.pattern",
    }
    assert "could not be found" in errors["transforms.bad.type"][0]
    assert "No field insertion configured" in errors["transforms.insert.type"][0]
    assert "predicate 'missing' is not defined" in errors["transforms.bad.predicate"][0]


def test_validate_clean_config_has_no_errors() -> None:
    values = validate_transformations(TOMBSTONE_FILTER, resolve)
    assert all(not cv.errors for cv in values)
    assert {"transforms.dropTombstones.type", "predicates.isTombstone.type"} <= {cv.name for cv in values}


def test_validate_duplicate_alias() -> None:
    config = {"transforms": "a,a", "transforms.a.type": K + "Filter"}
    values = {cv.name: cv for cv in validate_transformations(config, resolve)}
    expected = "Invalid value [a, a] for configuration transforms: Duplicate alias"
    assert values["transforms"].errors[0].startswith(expected)

import pytest

from cdc.api import ConfigException, SinkRecord, SourceRecord
from cdc.transforms.filter import Filter
from cdc.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches


def rec(topic: str = "t", value: object = "v") -> SourceRecord:
    return SourceRecord(None, None, topic, 0, None, "k", None, value)


def test_filter_drops_everything() -> None:
    assert Filter().apply(rec()) is None
    assert Filter().apply(SinkRecord("t", 0, None, None, None, None, 0)) is None
    assert Filter().config().names() == set()


def test_topic_name_matches_is_a_full_match() -> None:
    p = TopicNameMatches()
    p.configure({"pattern": r"my-prefix-.*"})
    assert p.test(rec("my-prefix-orders"))
    assert not p.test(rec("x-my-prefix-orders"))
    p.configure({"pattern": "orders"})
    assert not p.test(rec("orders-2"))  # find() would say yes; Kafka uses matches()


def test_topic_name_matches_java_named_groups() -> None:
    p = TopicNameMatches()
    p.configure({"pattern": r"(?<db>\w+)\.orders"})
    assert p.test(rec("shop.orders"))


@pytest.mark.parametrize(
    ("configs", "fragment"),
    [
        ({}, "Missing required configuration"),
        ({"pattern": ""}, "may not be empty"),
        ({"pattern": "("}, "Java-compatible"),
    ],
)
def test_topic_name_matches_config_errors(configs: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigException, match=fragment) as info:
        TopicNameMatches().configure(configs)
    assert info.value.name == "pattern"


def test_record_is_tombstone() -> None:
    p = RecordIsTombstone()
    p.configure({})
    assert p.test(rec(value=None))
    assert not p.test(rec(value={}))


def test_has_header_key() -> None:
    p = HasHeaderKey()
    p.configure({"name": "__debezium.newkey"})
    r = rec()
    assert not p.test(r)
    r.headers.add("__debezium.newkey", None)  # a null-valued header still counts
    assert p.test(r)
    with pytest.raises(ConfigException) as info:
        HasHeaderKey().configure({"name": ""})
    assert info.value.name == "name"

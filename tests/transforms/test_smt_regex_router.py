import pytest

from cdc.api import ConfigException, SinkRecord, SourceRecord
from cdc.transforms.regex_router import RegexRouter


def route(regex: str, replacement: str, topic: str) -> str:
    router: RegexRouter = RegexRouter()
    router.configure({"regex": regex, "replacement": replacement})
    out = router.apply(SinkRecord(topic, 0, None, None, None, None, 0))
    assert out is not None
    return out.topic


@pytest.mark.parametrize(
    ("regex", "replacement", "topic", "expected"),
    [
        ("foo", "bar", "foo", "bar"),  # static replacement
        ("foo", "bar", "orig", "orig"),  # no match leaves the topic alone
        ("(.*)", "$1", "orig", "orig"),
        ("(.*)", "prefix-$1", "orig", "prefix-orig"),
        ("(.*)", "$1-suffix", "orig", "orig-suffix"),
        (r"(.*)-(\d\d\d\d\d\d\d\d)", "$1", "index-20160117", "index"),
        (r"dbserver1\.inventory\.(.*)", "cdc.$1", "dbserver1.inventory.orders", "cdc.orders"),
        ("(?<db>[^.]+)\\.(?<table>.+)", "${table}_from_${db}", "shop.orders", "orders_from_shop"),
        ("(a)(b)?", "$1[$2]", "a", "a[]"),  # an unmatched group expands to nothing, as in Java
        ("(x)", "$12", "x", "x2"),  # Java: only one group, so "$12" is group 1 then "2"
        ("(x)", r"\$1", "x", "$1"),  # backslash escapes the dollar
        ("a|ab", "X", "ab", "Xb"),  # matches() gates, replaceFirst() then takes the first find()
        (r"(\p{Lower}+)\.\P{Digit}+", "$1", "shop.orders", "shop"),  # Java POSIX classes
    ],
)
def test_routes_like_kafka(regex: str, replacement: str, topic: str, expected: str) -> None:
    assert route(regex, replacement, topic) == expected


def test_requires_a_full_match() -> None:
    # Matcher.matches(), not find(): a partial match leaves the topic as is.
    assert route("orders", "x", "shop.orders") == "shop.orders"


def test_keeps_other_record_parts_and_source_offsets() -> None:
    router: RegexRouter = RegexRouter()
    router.configure({"regex": "(.*)", "replacement": "copy-$1"})
    rec = SourceRecord({"server": "s"}, {"pos": 4}, "t", 2, None, "k", None, "v", 99)
    rec.headers.add("h", 1)
    out = router.apply(rec)
    assert isinstance(out, SourceRecord)
    assert (out.topic, out.kafka_partition, out.key, out.value, out.timestamp) == ("copy-t", 2, "k", "v", 99)
    assert out.source_offset == {"pos": 4}
    assert "h" in out.headers


@pytest.mark.parametrize(
    ("configs", "key", "fragment"),
    [
        ({"replacement": "x"}, "regex", "Missing required configuration"),
        ({"regex": "x"}, "replacement", "Missing required configuration"),
        ({"regex": "(", "replacement": "x"}, "regex", "Java-compatible regular expression"),
        ({"regex": "(x)", "replacement": "$2"}, "replacement", "No group 2"),
        ({"regex": "(x)", "replacement": "$"}, "replacement", "write \\$ for a literal dollar sign"),
        ({"regex": "(x)", "replacement": "${nope}"}, "replacement", "No group with name {nope}"),
        ({"regex": "(x)", "replacement": "a\\"}, "replacement", "character to be escaped is missing"),
    ],
)
def test_config_errors_name_the_key(configs: dict[str, str], key: str, fragment: str) -> None:
    with pytest.raises(ConfigException) as info:
        RegexRouter().configure(configs)
    assert info.value.name == key
    assert fragment in str(info.value)

"""InsertHeader, as Kafka's InsertHeaderTest asserts it."""

import pytest

from cdc.api import ConfigException, Headers, Schema, SourceRecord
from cdc.transforms.insert_header import InsertHeader


def xform(header: str | None, literal: str | None) -> InsertHeader[SourceRecord]:
    t: InsertHeader[SourceRecord] = InsertHeader()
    t.configure({"header": header, "value.literal": literal})
    return t


def source(headers: Headers) -> SourceRecord:
    return SourceRecord({"foo": "bar"}, {"baz": "quxx"}, "topic", 0, None, "key", None, "value", 0, headers)


def existing(value: str = "existing-value", key: str = "existing") -> Headers:
    return Headers().add(key, value, Schema.STRING_SCHEMA)


def check_non_headers(original: SourceRecord, out: SourceRecord) -> None:
    assert (out.source_partition, out.source_offset, out.topic, out.kafka_partition, out.timestamp) == (
        original.source_partition,
        original.source_offset,
        original.topic,
        original.kafka_partition,
        original.timestamp,
    )
    assert (out.key_schema, out.key, out.value_schema, out.value) == (
        original.key_schema,
        original.key,
        original.value_schema,
        original.value,
    )


def test_insertion_with_existing_other_header() -> None:
    original = source(existing())
    out = xform("inserted", "inserted-value").apply(original)
    assert out is not None
    check_non_headers(original, out)
    assert out.headers == existing().add("inserted", "inserted-value", Schema.STRING_SCHEMA)
    assert len(original.headers) == 1


def test_insertion_with_existing_same_header() -> None:
    out = xform("existing", "inserted-value").apply(source(existing("preexisting-value")))
    assert out is not None
    assert out.headers == existing("preexisting-value").add("existing", "inserted-value", Schema.STRING_SCHEMA)


def test_insertion_with_byte_header() -> None:
    out = xform("inserted", "1").apply(source(existing()))
    assert out is not None
    assert out.headers == existing().add("inserted", 1, Schema.INT8_SCHEMA)


def test_literal_parsed_like_values_parse_string() -> None:
    out = xform("flag", "true").apply(source(Headers()))
    assert out is not None and next(iter(out.headers))[1:] == (True, Schema.BOOLEAN_SCHEMA)


@pytest.mark.parametrize(("header", "literal", "key"), [(None, "1", "header"), ("inserted", None, "value.literal")])
def test_config_rejects_null(header: str | None, literal: str | None, key: str) -> None:
    with pytest.raises(ConfigException, match=f"configuration {key}: entry must be non null") as info:
        xform(header, literal)
    assert "\n" not in str(info.value)


def test_config_requires_both_keys() -> None:
    t: InsertHeader[SourceRecord] = InsertHeader()
    with pytest.raises(ConfigException, match=r'"value\.literal"'):
        t.configure({"header": "h"})

"""DropHeaders, as Kafka's DropHeadersTest asserts it."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import ConfigException, Headers, Schema, SourceRecord
from cdc.transforms.drop_headers import DropHeaders


def xform(*headers: str) -> DropHeaders[SourceRecord]:
    t: DropHeaders[SourceRecord] = DropHeaders()
    t.configure({"headers": list(headers)})
    return t


def source(headers: Headers) -> SourceRecord:
    return SourceRecord({"foo": "bar"}, {"baz": "quxx"}, "topic", 0, None, "key", None, "value", 0, headers)


def assert_non_headers(original: SourceRecord, out: SourceRecord) -> None:
    assert (out.source_partition, out.source_offset, out.topic, out.kafka_partition) == (
        original.source_partition,
        original.source_offset,
        original.topic,
        original.kafka_partition,
    )
    assert (out.key_schema, out.key, out.value_schema, out.value, out.timestamp) == (
        original.key_schema,
        original.key,
        original.value_schema,
        original.value,
        original.timestamp,
    )


def expected() -> Headers:
    return Headers().add("existing", "existing-value", Schema.STRING_SCHEMA)


def test_drop_existing_header() -> None:
    headers = expected().add("to-drop", "existing-value", Schema.STRING_SCHEMA)
    original = source(headers)
    out = xform("to-drop").apply(original)
    assert out is not None
    assert_non_headers(original, out)
    assert out.headers == expected()
    assert len(original.headers) == 2  # the input record is left alone


def test_drop_existing_header_with_multiple_values() -> None:
    headers = expected().add("to-drop", "existing-value", Schema.STRING_SCHEMA)
    headers.add("to-drop", "existing-other-value", Schema.STRING_SCHEMA)
    out = xform("to-drop").apply(source(headers))
    assert out is not None and out.headers == expected()


def test_drop_non_existing_header() -> None:
    original = source(expected())
    out = xform("to-drop").apply(original)
    assert out is not None
    assert_non_headers(original, out)
    assert out.headers == expected()


def test_config_rejects_empty_list() -> None:
    with pytest.raises(ConfigException, match="headers") as info:
        xform()
    assert "\n" not in str(info.value)


def test_config_requires_headers() -> None:
    t: DropHeaders[SourceRecord] = DropHeaders()
    with pytest.raises(ConfigException, match='"headers"'):
        t.configure({})


@given(
    keys=st.lists(st.sampled_from("abcde"), max_size=12),
    drop=st.sets(st.sampled_from("abcde"), min_size=1),
)
def test_keeps_exactly_the_other_headers_in_order(keys: list[str], drop: set[str]) -> None:
    headers = Headers()
    for i, k in enumerate(keys):
        headers.add(k, i)
    out = xform(*sorted(drop)).apply(source(headers))
    assert out is not None
    assert [(h.key, h.value) for h in out.headers] == [(k, i) for i, k in enumerate(keys) if k not in drop]

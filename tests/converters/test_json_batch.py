"""JsonConverter.from_connect_batch: the whole poll batch at once, byte-identical to from_connect_data.

The schemas and values are the round-trip property test's (nested structs, maps, arrays, nulls,
defaults, decimals in both formats, bytes, unicode with control characters); a batch mixes a few
schemas, schemaless values and tombstones, with schema objects repeated as a connector repeats them.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api.data import Schema, SchemaBuilder, Struct
from cdc.api.errors import DataException
from cdc.converters import JsonConverter
from tests.converters.test_json_roundtrip import CONFIGS, SAFE_TEXT, schema_and_value, schemaless_values
from tests.support.examples import examples

TOPIC = "topic"

# One item of a batch: (schema, value); schemaless values and tombstones among the schema'd ones.
ITEMS = st.one_of(
    schema_and_value,
    schemaless_values.map(lambda v: (None, v)),
    st.just((None, None)),
)


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[Schema | None, Any]]:
    """A batch drawing from a small pool, so one schema object comes back in runs and interleaved."""
    pool = draw(st.lists(ITEMS, min_size=1, max_size=4))
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=0, max_size=12))
    return [pool[i] for i in picks]


def _converter(configs: dict[str, Any], schemas_enable: bool, is_key: bool) -> JsonConverter:
    c = JsonConverter()
    c.configure({**configs, "schemas.enable": schemas_enable}, is_key)
    return c


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches(), CONFIGS, st.booleans(), st.booleans())
def test_property_batch_is_byte_identical_to_one_record_at_a_time(
    batch: list[tuple[Schema | None, Any]], configs: dict[str, Any], schemas_enable: bool, is_key: bool
) -> None:
    one = _converter(configs, schemas_enable, is_key)
    expected = [one.from_connect_data(TOPIC, s, v) for s, v in batch]
    many = _converter(configs, schemas_enable, is_key)
    got = many.from_connect_batch([TOPIC] * len(batch), [s for s, _ in batch], [v for _, v in batch])
    assert got == expected
    # Again with the writers cached (the second batch of a task).
    assert many.from_connect_batch([TOPIC] * len(batch), [s for s, _ in batch], [v for _, v in batch]) == expected


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(SAFE_TEXT, max_size=6), st.integers(0, 6))
def test_property_a_lone_surrogate_fails_the_batch_and_the_record_alike(texts: list[str], at: int) -> None:
    """The batch raises (the runtime then converts record by record, which names the record)."""
    values = list(texts)
    values.insert(min(at, len(values)), "bad \udc80 text")
    c = _converter({}, True, False)
    with pytest.raises(UnicodeEncodeError):
        c.from_connect_batch([TOPIC] * len(values), [Schema.STRING_SCHEMA] * len(values), values)
    with pytest.raises(DataException, match=f"topic {TOPIC}"):
        for v in values:
            c.from_connect_data(TOPIC, Schema.STRING_SCHEMA, v)


def test_a_required_null_fails_the_batch_with_the_records_own_error() -> None:
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    good = Struct(schema).put("a", 1)
    c = _converter({}, True, False)
    with pytest.raises(DataException, match="null value for field that is required"):
        c.from_connect_batch([TOPIC] * 3, [schema] * 3, [good, Struct(schema), good])


def test_a_subclass_overriding_from_connect_data_is_honoured() -> None:
    class Upper(JsonConverter):
        def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
            data = super().from_connect_data(topic, schema, value, headers)
            return None if data is None else data.upper()

    c = Upper()
    c.configure({"schemas.enable": False}, False)
    assert c.from_connect_batch([TOPIC, TOPIC], [None, Schema.STRING_SCHEMA], ["a", "b"]) == [b'"A"', b'"B"']


def test_topics_and_values_must_line_up() -> None:
    c = _converter({}, True, False)
    with pytest.raises(ValueError):
        c.from_connect_batch([TOPIC], [None, None], ["a", "b"])

"""AvroConverter.from_connect_batch: the whole poll batch at once, byte-identical to from_connect_data.

The schemas and values are the Avro property tests' (nested structs, maps, arrays, nulls, defaults,
Kafka's logical types and Debezium's named ones); a batch mixes a few schemas over a few topics and
tombstones, with schema objects repeated in runs and interleaved as a connector hands them out.
Each side has its own converter on its own mock registry, so the registry ids are assigned in the
same order and the bytes (magic byte, id, body) must match exactly.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api.data import Schema, SchemaBuilder, Struct
from cdc.api.errors import DataException
from cdc.converters.avro import AvroConverter
from tests.converters.avro_strategies import converter, schemas, values
from tests.support.examples import examples

_scopes = itertools.count(1)


def _fresh(is_key: bool = False, **configs: Any) -> AvroConverter:
    """A converter on its own empty mock registry (confluent-kafka's mock is shared per URL scope)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    registry = SchemaRegistryClient.new_client({"url": f"mock://avro-batch-{next(_scopes)}"})
    return converter(registry, is_key, **configs)


@st.composite
def item(draw: st.DrawFn) -> tuple[Schema, list[Any]]:
    schema = draw(schemas(max_leaves=8))
    return schema, draw(st.lists(values(schema, nullable=False), min_size=1, max_size=3))


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[str, Schema | None, Any]]:
    """(topic, schema, value) from a small pool: one schema object comes back in runs and
    interleaved, sometimes on another topic (another subject), with tombstones among them."""
    pool = draw(st.lists(item(), min_size=1, max_size=3))
    topics = ["t1", "t2"]
    out: list[tuple[str, Schema | None, Any]] = []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 9)) == 0:
            out.append((draw(st.sampled_from(topics)), None, None))
            continue
        schema, vals = pool[draw(st.integers(0, len(pool) - 1))]
        run = draw(st.integers(1, 3))
        topic = draw(st.sampled_from(topics))
        out.extend((topic, schema, vals[draw(st.integers(0, len(vals) - 1))]) for _ in range(run))
    return out


def _columns(batch: list[tuple[str, Schema | None, Any]]) -> tuple[list[str], list[Schema | None], list[Any]]:
    return [t for t, _, _ in batch], [s for _, s, _ in batch], [v for _, _, v in batch]


@settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(batches(), st.booleans(), st.sampled_from(["TopicNameStrategy", "TopicRecordNameStrategy"]))
def test_property_batch_is_byte_identical_to_one_record_at_a_time(
    batch: list[tuple[str, Schema | None, Any]], is_key: bool, strategy: str
) -> None:
    configs = {"value.subject.name.strategy": strategy, "key.subject.name.strategy": strategy}
    one = _fresh(is_key, **configs)
    expected = [one.from_connect_data(t, s, v) for t, s, v in batch]
    many = _fresh(is_key, **configs)
    got = many.from_connect_batch(*_columns(batch))
    assert got == expected
    assert all(type(b) is bytes for b in got if b is not None)
    # Again with the writers and ids cached (the second batch of a task).
    assert many.from_connect_batch(*_columns(batch)) == expected


def _struct_schema() -> Schema:
    return SchemaBuilder.struct().name("shop.Row").field("a", Schema.INT32_SCHEMA).build()


def test_a_required_null_fails_the_batch_with_the_records_own_error() -> None:
    schema = _struct_schema()
    good = Struct(schema).put("a", 1)
    c = _fresh()
    with pytest.raises(DataException, match=r"field 'a' of shop.Row is required but null \(topic t\)"):
        c.from_connect_batch(["t"] * 3, [schema] * 3, [good, Struct(schema), good])


def test_a_schemaless_value_fails_the_batch_as_it_fails_one_record() -> None:
    c = _fresh()
    with pytest.raises(DataException, match="has no schema"):
        c.from_connect_batch(["t", "t"], [Schema.STRING_SCHEMA, None], ["a", "b"])


def test_a_subclass_overriding_from_connect_data_is_honoured() -> None:
    class Tagged(AvroConverter):
        def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
            data = super().from_connect_data(topic, schema, value, headers)
            return None if data is None else data + b"!"

    c = Tagged()
    c.use_registry(_fresh().registry())
    c.configure({}, False)
    got = c.from_connect_batch(["t", "t"], [Schema.STRING_SCHEMA, None], ["x", None])
    assert got[1] is None and got[0] is not None and got[0].endswith(b"!")


def test_topics_schemas_and_values_must_line_up() -> None:
    c = _fresh()
    with pytest.raises(ValueError):
        c.from_connect_batch(["t"], [None, None], ["a", "b"])

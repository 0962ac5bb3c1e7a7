"""io.debezium.transforms.partitions.PartitionRouting: Debezium's PartitionRoutingTest cases (the same
partitions as Debezium computes, Java and murmur hashes) re-expressed (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.envelope import Envelope
from cdc_debezium.transforms.partition_routing import PartitionRouting, java_hash, murmur3_x64_32
from tests.debezium_core.transforms.envelopes import assert_one_line_config_error, chain, heartbeat, tombstone
from tests.support.examples import examples

VALUE_SCHEMA = (
    SchemaBuilder.struct()
    .name("server1.inventory.product.Value")
    .optional()
    .field("id", Schema.INT64_SCHEMA)
    .field("price", Schema.FLOAT32_SCHEMA)
    .field("product", Schema.OPTIONAL_STRING_SCHEMA)
    .build()
)
SOURCE = (
    SchemaBuilder.struct()
    .name("source")
    .field("connector", Schema.STRING_SCHEMA)
    .field("db", Schema.STRING_SCHEMA)
    .field("table", Schema.STRING_SCHEMA)
    .build()
)
ENVELOPE = Envelope.define("server1.inventory.product.Envelope", VALUE_SCHEMA, SOURCE)


def routing(fields: str, partitions: int, **extra: str) -> PartitionRouting[SourceRecord]:
    smt: PartitionRouting[SourceRecord] = PartitionRouting()
    smt.configure({"partition.payload.fields": fields, "partition.topic.num": str(partitions), **extra})
    return smt


def product(id: int = 1, price: float = 1.0, name: str | None = "APPLE") -> Struct:
    return Struct(VALUE_SCHEMA).put("id", id).put("price", price).put("product", name)


def event(row: Struct, op: str = "c") -> SourceRecord:
    src = Struct(SOURCE).put("connector", "mysql").put("db", "inventory").put("table", "products")
    before, after = {"c": (None, row), "u": (row, row), "d": (row, None), "t": (None, None)}[op]
    return SourceRecord(
        {}, {}, "prefix.inventory.products", None, None, None, ENVELOPE.schema, ENVELOPE.make(op, before, after, src)
    )


def partition_of(smt: PartitionRouting[SourceRecord], rec: SourceRecord) -> int | None:
    out = smt.apply(rec)
    assert out is not None
    return out.kafka_partition


@pytest.mark.parametrize("fields", ["change . product", "after.product", "change.product"])
def test_partition_by_product(fields: str) -> None:
    assert partition_of(routing(fields, 2), event(product())) == 0


def test_change_means_before_for_deletes() -> None:
    assert partition_of(routing("change.product", 2), event(product(), "d")) == 0


def test_missing_fields_are_ignored() -> None:
    for fields, row in (("after.not_existing", product()), ("change.product", product(name=None))):
        rec = event(row)
        assert routing(fields, 2).apply(rec) is rec


def test_only_existing_fields_are_hashed() -> None:
    assert partition_of(routing("after.not_existing,change.product", 3), event(product(name="orange"))) == 1


def test_truncate_tombstones_and_non_envelopes_pass_through() -> None:
    smt = routing("change.product", 2)
    for rec in (event(product(), "t"), tombstone(), heartbeat()):
        assert smt.apply(rec) is rec


def test_top_level_field() -> None:
    smt = routing("op", 2)
    one, two = partition_of(smt, event(product(name="APPLE"))), partition_of(smt, event(product(name="ORANGE")))
    assert one == two
    updated = event(product(name="ORANGE"), "u")
    assert smt.apply(updated) != updated


def test_java_hash_by_default_and_murmur_when_asked() -> None:
    rec = event(product(1, 1.0, "orange"))
    assert partition_of(routing("change.id, change.product", 100), rec) == 39
    assert partition_of(routing("change.id, change.product", 100, **{"partition.hash.function": "murmur"}), rec) == 65


def test_java_hash_codes() -> None:
    # values any JVM prints for "".hashCode(), "orange".hashCode(), Long.hashCode(-1), Boolean.hashCode(true)
    assert java_hash("", None) == 0
    assert java_hash("orange", None) == -1008851410
    assert java_hash(-1, Schema.INT64_SCHEMA) == 0
    assert java_hash(True, None) == 1231
    assert java_hash(2**31, Schema.INT64_SCHEMA) == -2147483648  # (int) (v ^ v >>> 32)
    assert java_hash(1.0, Schema.FLOAT32_SCHEMA) == 1065353216  # Float.floatToIntBits(1.0f)


@settings(max_examples=examples(100), deadline=None)
@given(name=st.text(max_size=40), id=st.integers(-(2**63), 2**63 - 1), n=st.integers(1, 64))
def test_partition_is_stable_and_in_range(name: str, id: int, n: int) -> None:
    for fn in ("java", "murmur"):
        smt = routing("change.id,change.product", n, **{"partition.hash.function": fn})
        first = partition_of(smt, event(product(id=id, name=name)))
        assert first is not None and 0 <= first < n
        assert partition_of(smt, event(product(id=id, name=name), "u")) == first
    assert -(2**31) <= murmur3_x64_32(name.encode("utf-8", "replace")) < 2**31


def test_registered_name() -> None:
    c = chain(
        {
            "transforms": "p",
            "transforms.p.type": "io.debezium.transforms.partitions.PartitionRouting",
            "transforms.p.partition.payload.fields": "change.product",
            "transforms.p.partition.topic.num": "2",
        }
    )
    assert c.apply(event(product())).kafka_partition == 0


@pytest.mark.parametrize(
    ("props", "key", "words"),
    [
        ({"partition.topic.num": "2"}, "partition.payload.fields", ""),
        ({"partition.payload.fields": "a"}, "partition.topic.num", ""),
        (
            {"partition.payload.fields": ",source.table", "partition.topic.num": "2"},
            "partition.payload.fields",
            "Empty",
        ),
        ({"partition.payload.fields": "a", "partition.topic.num": "0"}, "partition.topic.num", "positive"),
        (
            {"partition.payload.fields": "a", "partition.topic.num": "2", "partition.hash.function": "md5"},
            "partition.hash.function",
            "murmur",
        ),
    ],
)
def test_bad_config_is_one_line_naming_alias_and_key(props: dict[str, Any], key: str, words: str) -> None:
    config = {"transforms": "part", "transforms.part.type": "PartitionRouting"}
    config |= {f"transforms.part.{k}": v for k, v in props.items()}
    assert words in assert_one_line_config_error(config, f"transforms.part.{key}")

"""Schema identity on the MySQL streaming path (issue 21): records of one table version share their
schema objects, and converters do no deep schema comparison per record.

A profile of `cdc run` had the connector thread in `Schema.__eq__`. The mechanism reproduced here:
a DDL naming a table (even one that changes nothing the schemas carry, such as a table comment)
rebuilt its key, value and envelope schemas as new, equal objects; JsonConverter's schema cache
then handed back the encoder compiled for the old objects, whose struct check compared the
schemas field by field on every record. Counted, never timed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from cdc.api import Schema, SchemaBuilder, SourceRecord, Struct
from cdc.api.data import schema as schema_module
from cdc.converters.json import JsonConverter
from tests.mysql.harness import TaskRunner, connector_props, execute

COLUMNS = (
    "id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(32), c DOUBLE, d DATETIME(3), e BIGINT, "
    "f DECIMAL(10,2), g DATE, h TINYINT, i TEXT"
)


class EqCounter:
    """Counts `Schema.__eq__` calls between distinct objects, and deep walks (`Field.__eq__` calls)."""

    def __init__(self) -> None:
        self.distinct = 0
        self.field_walks = 0
        self.on = False


@pytest.fixture
def eq_counter(monkeypatch: pytest.MonkeyPatch) -> Iterator[EqCounter]:
    counter = EqCounter()
    schema_eq, field_eq = schema_module.Schema.__eq__, schema_module.Field.__eq__

    def counting_schema_eq(self: Schema, other: object) -> bool:
        if counter.on and self is not other:
            counter.distinct += 1
        return schema_eq(self, other)

    def counting_field_eq(self: schema_module.Field, other: object) -> bool:
        if counter.on:
            counter.field_walks += 1
        return field_eq(self, other)

    monkeypatch.setattr(schema_module.Schema, "__eq__", counting_schema_eq)
    monkeypatch.setattr(schema_module.Field, "__eq__", counting_field_eq)
    yield counter


def _row(rng: random.Random, i: int) -> str:
    b = "NULL" if rng.random() < 0.2 else f"'n{rng.randrange(10**6)}'"
    return (
        f"({i},{rng.randrange(-(2**31), 2**31)},{b},{rng.random() * 1e6},"
        f"'2024-01-02 03:04:05.{rng.randrange(1000):03d}',"
        f"{rng.randrange(2**62)},{rng.randrange(10**7)}.{rng.randrange(100):02d},'2024-0{rng.randrange(1, 10)}-02',"
        f"{rng.randrange(-128, 128)},'x{i}')"
    )


def _insert(server: Any, rng: random.Random, ids: range) -> None:
    execute(server, "INSERT INTO t VALUES " + ",".join(_row(rng, i) for i in ids))


def _convert(records: list[SourceRecord], keys: JsonConverter, values: JsonConverter) -> None:
    topics = [r.topic for r in records]
    keys.from_connect_batch(topics, [r.key_schema for r in records], [r.key for r in records])
    values.from_connect_batch(topics, [r.value_schema for r in records], [r.value for r in records])


def test_records_of_a_table_version_share_schemas_and_converters_do_not_compare_per_record(
    mariadb_db: Any, eq_counter: EqCounter
) -> None:
    rng = random.Random(2126)
    execute(mariadb_db, f"CREATE TABLE t ({COLUMNS})")
    _insert(mariadb_db, rng, range(0, 50))  # snapshot rows: the information_schema TableDef
    keys, values = JsonConverter(), JsonConverter()
    keys.configure({}, True)
    values.configure({}, False)
    with TaskRunner(connector_props(mariadb_db)) as run:
        _convert(run.wait_data(50, "t"), keys, values)  # the converters cache the snapshot's schemas
        eq_counter.on = True
        for start in range(50, 1050, 250):
            _insert(mariadb_db, rng, range(start, start + 250))
        execute(mariadb_db, "UPDATE t SET b = CONCAT(IFNULL(b, ''), 'u') WHERE id % 3 = 0")
        # A DDL naming the table rebuilds its schemas from information_schema: equal, so kept.
        execute(mariadb_db, "ALTER TABLE t COMMENT 'still the same columns'")
        _insert(mariadb_db, rng, range(2000, 2500))
        want = 50 + 1000 + 350 + 500
        seen = 0
        while seen < want:
            batch = run.poll_once()
            _convert(batch, keys, values)
            seen = len(run.data("t"))
        eq_counter.on = False
    data = run.data("t")
    assert len(data) == want
    streamed = data[50:]
    assert {r.value.get("op") for r in streamed} == {"c", "u"}
    assert len({id(r.value_schema) for r in data}) == 1
    assert len({id(r.key_schema) for r in data}) == 1
    assert len({id(r.value.get("after").schema) for r in data}) == 1
    assert len({id(r.value.get("source").schema) for r in data}) == 1
    updates = [r.value for r in streamed if r.value.get("op") == "u"]
    assert updates and all(v.get("before").schema is v.get("after").schema for v in updates)
    # Equal schemas rebuilt after the DDL are compared once each, at the rebuild; none per record.
    assert eq_counter.distinct <= 100, eq_counter.distinct  # a compare per record would be 1,850 or more
    assert eq_counter.field_walks <= 200, eq_counter.field_walks


def _table_schemas() -> tuple[Schema, Schema]:
    """A value schema and its envelope built from scratch: equal on every call, never the same objects."""
    value = (
        SchemaBuilder.struct()
        .name("server.db.t.Value")
        .optional()
        .field("id", Schema.INT32_SCHEMA)
        .field("name", SchemaBuilder.string().optional().parameter("__debezium.source.column.type", "VARCHAR").build())
        .field("price", SchemaBuilder.float64().optional().default_value(1.5).build())
        .build()
    )
    envelope = (
        SchemaBuilder.struct()
        .name("server.db.t.Envelope")
        .version(2)
        .field("before", value)
        .field("after", value)
        .field("op", Schema.STRING_SCHEMA)
        .build()
    )
    return value, envelope


def test_json_converter_meeting_equal_copies_of_its_cached_schema_walks_them_once(eq_counter: EqCounter) -> None:
    rng = random.Random(21)
    cached_value, cached_envelope = _table_schemas()
    value, envelope = _table_schemas()
    assert value is not cached_value and value == cached_value and envelope == cached_envelope
    conv = JsonConverter()
    conv.configure({}, False)
    first = Struct(cached_envelope).put("after", Struct(cached_value).put("id", 0)).put("op", "c")
    conv.from_connect_data("t", cached_envelope, first)
    records = [
        Struct(envelope)
        .put("after", Struct(value).put("id", i).put("name", None if rng.random() < 0.3 else f"n{i}"))
        .put("op", "c")
        for i in range(500)
    ]
    eq_counter.on = True
    out = conv.from_connect_batch(["t"] * len(records), [envelope] * len(records), records)
    one_by_one = [conv.from_connect_data("t", envelope, r) for r in records]
    eq_counter.on = False
    assert out == one_by_one
    # The first record's check walks the copies once; every later one is an O(1) remembered match.
    assert eq_counter.field_walks <= 20, eq_counter.field_walks


def _random_schema(rng: random.Random, depth: int = 0) -> Schema:
    kind = rng.choice(["int32", "string", "struct", "array"] if depth < 2 else ["int32", "string"])
    if kind == "struct":
        b = SchemaBuilder.struct().name(rng.choice(["a", "b"]))
        for i in range(rng.randrange(0, 3)):
            b.field(f"f{i}", _random_schema(rng, depth + 1))
    elif kind == "array":
        b = SchemaBuilder.array(_random_schema(rng, depth + 1))
    else:
        b = SchemaBuilder.int32() if kind == "int32" else SchemaBuilder.string()
        if rng.random() < 0.3:
            b.parameter("p", rng.choice(["x", "y"]))
    if rng.random() < 0.5:
        b.optional()
    if rng.random() < 0.3:
        b.doc(rng.choice(["d1", "d2"]))
    return b.build()


def _structure(s: Schema) -> Any:
    """Everything Kafka's ConnectSchema.equals compares, as plain data."""
    return (
        s.type, s.optional, s.name, s.version, s.doc, s.parameters, s.default_value,
        tuple((f.name, f.index, _structure(f.schema)) for f in s.fields),
        _structure(s.key_schema) if s.key_schema is not None else None,
        _structure(s.value_schema) if s.value_schema is not None else None,
    )  # fmt: skip


def test_equality_shortcuts_keep_connect_schema_equals_semantics() -> None:
    rng = random.Random(1121)
    pool: list[tuple[int, Schema]] = []
    for _ in range(300):
        seed = rng.randrange(40)
        pool.append((seed, _random_schema(random.Random(seed))))
    for _ in range(3000):
        (_, a), (_, b) = rng.choice(pool), rng.choice(pool)
        expected = _structure(a) == _structure(b)
        assert (a == b) is expected and (b == a) is expected and (a != b) is not expected
        if expected:
            assert a.fingerprint() == b.fingerprint() and hash(a) == hash(b)

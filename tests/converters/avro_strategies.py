"""Hypothesis strategies for Connect schemas and values, and the registry the Avro tests share.

The registry is confluent-kafka's in-memory `MockSchemaRegistryClient` (`mock://`): a Schema
Registry server is Java and cannot run here; the embedded registry is tested with the worker.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import struct as _struct
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from hypothesis import strategies as st

from cdc.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from cdc.converters.avro import AvroConverter

UTC = datetime.UTC
_names = itertools.count(1)


def mock_registry() -> Any:
    return SchemaRegistryClient.new_client({"url": "mock://avro-tests"})


def converter(registry: Any = None, is_key: bool = False, **configs: Any) -> AvroConverter:
    c = AvroConverter()
    c.configure({"schema.registry.url": "mock://avro-tests", **configs}, is_key)
    c.use_registry(registry if registry is not None else mock_registry())
    return c


def float32(x: float) -> float:
    return _struct.unpack("<f", _struct.pack("<f", x))[0]


# -- schemas --------------------------------------------------------------------------------------
_PRIMITIVES = [
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
]
# Debezium's semantic types: plain physical types carrying their name (and version 1)
_DEBEZIUM = [
    ("io.debezium.time.Date", Type.INT32),
    ("io.debezium.time.Time", Type.INT32),
    ("io.debezium.time.MicroTime", Type.INT64),
    ("io.debezium.time.NanoTime", Type.INT64),
    ("io.debezium.time.Timestamp", Type.INT64),
    ("io.debezium.time.MicroTimestamp", Type.INT64),
    ("io.debezium.time.NanoTimestamp", Type.INT64),
    ("io.debezium.time.ZonedTimestamp", Type.STRING),
    ("io.debezium.time.ZonedTime", Type.STRING),
    ("io.debezium.time.Year", Type.INT32),
    ("io.debezium.time.MicroDuration", Type.INT64),
    ("io.debezium.time.Interval", Type.STRING),
    ("io.debezium.data.Json", Type.STRING),
    ("io.debezium.data.Uuid", Type.STRING),
    ("io.debezium.data.Xml", Type.STRING),
    ("io.debezium.data.Bits", Type.BYTES),
    ("io.debezium.data.Enum", Type.STRING),
    ("io.debezium.data.EnumSet", Type.STRING),
]
_param_keys = st.text(alphabet="abcdefghijklmnop._", min_size=1, max_size=8).filter(lambda k: not k.startswith("a"))


def _decorate(draw: Any, b: SchemaBuilder) -> SchemaBuilder:
    if draw(st.booleans()):
        b.optional()
    if draw(st.integers(0, 4)) == 0:
        b.doc(draw(st.text(max_size=10)))
    return b


@st.composite
def leaf_schema(draw: Any) -> Schema:
    kind = draw(st.integers(0, 9))
    if kind <= 4:
        b = SchemaBuilder(draw(st.sampled_from(_PRIMITIVES)))
        if draw(st.integers(0, 5)) == 0:
            b.version(draw(st.integers(1, 5)))
        if draw(st.integers(0, 5)) == 0:
            b.parameters(draw(st.dictionaries(_param_keys, st.text(max_size=5), max_size=2)))
    elif kind == 5:
        b = Decimal.builder(draw(st.integers(0, 8)))
        if draw(st.booleans()):
            b.parameter("connect.decimal.precision", str(draw(st.integers(20, 40))))
    elif kind == 6:
        b = draw(st.sampled_from([Date.builder, Time.builder, Timestamp.builder]))()
    else:
        name, t = draw(st.sampled_from(_DEBEZIUM))
        b = SchemaBuilder(t).name(name).version(1)
        if name.endswith("Enum"):
            b.parameter("allowed", "a,b,c")
    return _decorate(draw, b).build()


def _struct_name(draw: Any) -> str | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    n = next(_names)
    return f"server{n}.db.t{n}.Value"


def schemas(max_leaves: int = 12) -> st.SearchStrategy[Schema]:
    return st.recursive(leaf_schema(), _composite, max_leaves=max_leaves)


def _composite(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    @st.composite
    def build(draw: Any) -> Schema:
        kind = draw(st.integers(0, 3))
        if kind == 0:
            return _decorate(draw, SchemaBuilder.array(draw(children))).build()
        if kind == 1:
            key = draw(
                st.one_of(
                    st.just(Schema.STRING_SCHEMA),
                    st.just(Schema.OPTIONAL_STRING_SCHEMA),
                    st.sampled_from([Schema.INT8_SCHEMA, Schema.INT64_SCHEMA, Schema.BOOLEAN_SCHEMA, Date.SCHEMA]),
                )
            )
            return _decorate(draw, SchemaBuilder.map(key, draw(children))).build()
        return draw(struct_schema(children))

    return build()


@st.composite
def struct_schema(draw: Any, children: st.SearchStrategy[Schema]) -> Schema:
    b = SchemaBuilder.struct()
    name = _struct_name(draw)
    if name:
        b.name(name)
    if draw(st.integers(0, 3)) == 0:
        b.version(draw(st.integers(1, 3)))
    field_schemas = draw(st.lists(children, max_size=5))
    for i, fs in enumerate(field_schemas):
        if fs.type is not Type.STRUCT and draw(st.integers(0, 3)) == 0:
            fs = with_default(fs, draw(values(fs, nullable=False)))
        b.field(f"f{i}", fs)
    reused = [fs for fs in field_schemas if fs.type is Type.STRUCT and fs.name]
    if reused and draw(st.booleans()):
        b.field("again", draw(st.sampled_from(reused)))  # a named type used twice (before/after)
    return _decorate(draw, b).build()


def with_default(schema: Schema, default: Any) -> Schema:
    return Schema(
        schema.type,
        optional=schema.optional,
        default_value=default,
        name=schema.name,
        version=schema.version,
        doc=schema.doc,
        parameters=schema.parameters,
        fields=schema.fields,
        key_schema=schema.key_schema,
        value_schema=schema.value_schema,
    )


# -- values ---------------------------------------------------------------------------------------
_INT = {Type.INT8: 7, Type.INT16: 15, Type.INT32: 31, Type.INT64: 63}


def values(schema: Schema, nullable: bool = True) -> st.SearchStrategy[Any]:
    s = _values(schema)
    return st.one_of(st.none(), s) if nullable and schema.optional else s


def _values(schema: Schema) -> st.SearchStrategy[Any]:
    name, t = schema.name, schema.type
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        digits = int((schema.parameters or {}).get("connect.decimal.precision", "30"))
        bound = 10**digits - 1
        return st.integers(-bound, bound).map(lambda u: decimal.Decimal(u).scaleb(-scale, decimal.Context(prec=99)))
    if name == Date.LOGICAL_NAME:
        return st.dates()
    if name == Time.LOGICAL_NAME:
        return st.integers(0, 86_399_999).map(
            lambda ms: datetime.time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)
        )
    if name == Timestamp.LOGICAL_NAME:
        return st.integers(-(10**12), 10**13).map(
            lambda ms: datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(milliseconds=ms)
        )
    if t in _INT:
        bits = _INT[t]
        return st.integers(-(2**bits), 2**bits - 1)
    if t is Type.FLOAT32:
        return st.floats(width=32, allow_nan=False)
    if t is Type.FLOAT64:
        return st.floats(allow_nan=False)
    if t is Type.BOOLEAN:
        return st.booleans()
    if t is Type.STRING:
        return st.text(max_size=12)
    if t is Type.BYTES:
        return st.binary(max_size=12)
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return st.lists(values(schema.value_schema), max_size=3)
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        return st.dictionaries(values(schema.key_schema), values(schema.value_schema), max_size=3)
    return st.tuples(*[values(f.schema) for f in schema.fields]).map(lambda vs: Struct.from_values(schema, list(vs)))


def read_back(schema: Schema, value: Any, as_schema: Schema | None = None) -> Any:
    """What a value reads back as: a null field with a default is written as the default (Struct.get);
    a top-level struct carries the schema read back (`as_schema`, see top_level)."""
    if value is None:
        return schema.default_value
    if schema.type is Type.STRUCT:
        return Struct.from_values(
            as_schema or schema, [read_back(f.schema, value.get_without_default(f.name)) for f in schema.fields]
        )
    if schema.type is Type.ARRAY:
        assert schema.value_schema is not None
        return [read_back(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        return {read_back(schema.key_schema, k): read_back(schema.value_schema, v) for k, v in value.items()}
    return value


def top_level(schema: Schema, version: int) -> Schema:
    """What a top-level schema reads back as: as Confluent's, the registry's version fills a missing
    version (not through a top-level union, i.e. an optional schema)."""
    if schema.version is not None or schema.optional:
        return schema
    return Schema(
        schema.type,
        optional=schema.optional,
        default_value=schema.default_value,
        name=schema.name,
        version=version,
        doc=schema.doc,
        parameters=schema.parameters,
        fields=schema.fields,
        key_schema=schema.key_schema,
        value_schema=schema.value_schema,
    )


def schema_diff(a: Schema, b: Schema, path: str = "") -> list[str]:
    """Where two schemas differ (for assertion messages)."""
    out = [
        f"{path or '<top>'}.{attr}: {getattr(a, attr)!r} != {getattr(b, attr)!r}"
        for attr in ("type", "optional", "name", "version", "doc", "parameters", "default_value")
        if getattr(a, attr) != getattr(b, attr)
    ]
    if len(a.fields) != len(b.fields):
        out.append(f"{path}: fields {[f.name for f in a.fields]} != {[f.name for f in b.fields]}")
    for fa, fb in zip(a.fields, b.fields, strict=False):
        out += schema_diff(fa.schema, fb.schema, f"{path}.{fa.name}")
    for attr, mark in (("key_schema", "[key]"), ("value_schema", "[value]")):
        x, y = getattr(a, attr), getattr(b, attr)
        if x is not None and y is not None:
            out += schema_diff(x, y, path + mark)
    return out

"""The Debezium change event envelope: `before`, `after`, `source`, `transaction`, `op`, `ts_*`."""

from __future__ import annotations

import time
from enum import Enum
from typing import Any

from cdc.api import Schema, SchemaBuilder, Struct

ENVELOPE_SCHEMA_VERSION = 2


class Operation(Enum):
    """Op codes exactly as Debezium writes them in the `op` field."""

    READ = "r"
    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    TRUNCATE = "t"
    MESSAGE = "m"

    @classmethod
    def parse(cls, code: str) -> Operation:
        for op in cls:
            if op.value == code:
                return op
        raise ValueError(f"unknown Debezium operation code {code!r}; expected one of c, u, d, r, t, m")


class FieldName:
    BEFORE = "before"
    AFTER = "after"
    SOURCE = "source"
    OPERATION = "op"
    TIMESTAMP = "ts_ms"
    TIMESTAMP_US = "ts_us"
    TIMESTAMP_NS = "ts_ns"
    TRANSACTION = "transaction"


TRANSACTION_BLOCK_SCHEMA = (
    SchemaBuilder.struct()
    .optional()
    .name("event.block")
    .version(1)
    .field("id", Schema.STRING_SCHEMA)
    .field("total_order", Schema.INT64_SCHEMA)
    .field("data_collection_order", Schema.INT64_SCHEMA)
    .build()
)


def new_struct(schema: Schema, values: list[Any]) -> Struct:
    """A Struct from values already converted for `schema`, in field order, without re-validation.

    Per-row events are built from converters that produce schema-correct values; validating
    every field again would double the cost of the hot path.
    """
    return Struct.from_values(schema, values)


class Envelope:
    """Builds envelope schemas and values for one table.

    The schema is built once per table schema version; values are built per event.
    """

    __slots__ = ("schema", "source_schema", "value_schema")

    def __init__(self, schema: Schema, value_schema: Schema, source_schema: Schema) -> None:
        self.schema = schema
        self.value_schema = value_schema
        self.source_schema = source_schema

    @classmethod
    def define(cls, name: str, value_schema: Schema, source_schema: Schema) -> Envelope:
        """`name` is `<prefix>.<db>.<table>.Envelope`; `value_schema` must be optional."""
        schema = (
            SchemaBuilder.struct()
            .name(name)
            .version(ENVELOPE_SCHEMA_VERSION)
            .field(FieldName.BEFORE, value_schema)
            .field(FieldName.AFTER, value_schema)
            .field(FieldName.SOURCE, source_schema)
            .field(FieldName.TRANSACTION, TRANSACTION_BLOCK_SCHEMA)
            .field(FieldName.OPERATION, Schema.STRING_SCHEMA)
            .field(FieldName.TIMESTAMP, Schema.OPTIONAL_INT64_SCHEMA)
            .field(FieldName.TIMESTAMP_US, Schema.OPTIONAL_INT64_SCHEMA)
            .field(FieldName.TIMESTAMP_NS, Schema.OPTIONAL_INT64_SCHEMA)
            .build()
        )
        return cls(schema, value_schema, source_schema)

    def value(
        self,
        op: Operation,
        before: Struct | None,
        after: Struct | None,
        source: Struct,
        transaction: Struct | None = None,
        ts_ns: int | None = None,
    ) -> Struct:
        """An envelope value; `ts_*` is processing time, as in Debezium."""
        return self.make(op.value, before, after, source, transaction, ts_ns)

    def make(
        self,
        op: str,
        before: Struct | None,
        after: Struct | None,
        source: Struct,
        transaction: Struct | None = None,
        ts_ns: int | None = None,
    ) -> Struct:
        """`value` with the op code as a string: the per-row hot path skips Enum lookups."""
        ns = time.time_ns() if ts_ns is None else ts_ns
        return new_struct(self.schema, [before, after, source, transaction, op, ns // 1_000_000, ns // 1_000, ns])

    def read(self, after: Struct, source: Struct, ts_ns: int | None = None) -> Struct:
        return self.value(Operation.READ, None, after, source, None, ts_ns)

    def create(self, after: Struct, source: Struct, tx: Struct | None = None) -> Struct:
        return self.value(Operation.CREATE, None, after, source, tx)

    def update(self, before: Struct | None, after: Struct, source: Struct, tx: Struct | None = None) -> Struct:
        return self.value(Operation.UPDATE, before, after, source, tx)

    def delete(self, before: Struct, source: Struct, tx: Struct | None = None) -> Struct:
        return self.value(Operation.DELETE, before, None, source, tx)

    def truncate(self, source: Struct, tx: Struct | None = None) -> Struct:
        return self.value(Operation.TRUNCATE, None, None, source, tx)

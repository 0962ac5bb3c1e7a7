"""Change events as a job with Debezium's ExtractNewRecordState ("unwrap") writes them: the
envelope of tests/spark/events.py (with the MySQL source's `sequence`, the binlog lineage epoch),
passed through cdc's own ExtractNewRecordState and JsonConverter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.data import Schema, SchemaBuilder, Struct
from cdc.api.records import SourceRecord
from cdc_debezium.transforms.extract_new_record_state import ExtractNewRecordState
from tests.spark.events import SOURCE, Table

ADD_FIELDS = "op,source.file,source.pos,source.row,source.sequence,source.snapshot,source.ts_ms"

# tests/spark/events.py's MySQL source block plus `sequence` (cdc_mysql/source_info.py has it).
SOURCE_WITH_SEQUENCE = SchemaBuilder.struct().name(SOURCE.name)
for _f in SOURCE.fields:
    SOURCE_WITH_SEQUENCE.field(_f.name, _f.schema)
SOURCE_WITH_SEQUENCE = SOURCE_WITH_SEQUENCE.field("sequence", Schema.OPTIONAL_STRING_SCHEMA).build()


class UnwrappedTable(Table):
    """Table's events, as envelopes (`event`) and as the unwrapped records of the same change (`unwrapped`)."""

    def __init__(
        self,
        topic: str,
        columns: Mapping[str, Schema] | None = None,
        *,
        schemas_enable: bool = True,
        smt: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(topic, columns, schemas_enable=schemas_enable)
        self.envelope = (
            SchemaBuilder.struct()
            .name(f"{topic}.Envelope")
            .field("before", self.row_schema)
            .field("after", self.row_schema)
            .field("source", SOURCE_WITH_SEQUENCE)
            .field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .build()
        )
        self.smt = ExtractNewRecordState()
        self.smt.configure(
            dict(smt) if smt is not None else {"add.fields": ADD_FIELDS, "delete.tombstone.handling.mode": "rewrite"}
        )

    def _struct(self, op: str, id_: int, row: Mapping[str, Any] | None, seq: int, epoch: int, snapshot: str | None):  # type: ignore[no-untyped-def]
        source = Struct(SOURCE_WITH_SEQUENCE)
        for k, v in {
            "connector": "mysql",
            "ts_ms": 1_700_000_000_000 + seq,
            "db": "shop",
            "file": "mysql-bin.000001",
            "pos": seq,
            "row": 0,
            "snapshot": "false" if op != "r" else (snapshot or "true"),
            "table": self.topic.rsplit(".", 1)[-1],
            "sequence": f'["{epoch}"]' if epoch else None,
        }.items():
            source.put(k, v)
        env = Struct(self.envelope)
        full = {"id": id_, **(row or {})}
        env.put("before", self._row(full if op == "d" else None))
        env.put("after", None if op == "d" else self._row(full))
        env.put("source", source)
        env.put("op", op)
        env.put("ts_ms", 1_700_000_000_000 + seq)
        key = Struct(self.key_schema)
        key.put("id", id_)
        return key, env

    def event(  # type: ignore[override]
        self,
        op: str,
        id_: int,
        row: Mapping[str, Any] | None,
        seq: int,
        before: Mapping[str, Any] | None = None,
        snapshot: str | None = None,
        epoch: int = 0,
    ) -> tuple[bytes | None, bytes]:
        key, env = self._struct(op, id_, row, seq, epoch, snapshot)
        value = self.values.from_connect_data(self.topic, self.envelope, env)
        assert value is not None
        return self.keys.from_connect_data(self.topic, self.key_schema, key), value

    def unwrapped(
        self, op: str, id_: int, row: Mapping[str, Any] | None, seq: int, snapshot: str | None = None, epoch: int = 0
    ) -> tuple[bytes | None, bytes | None] | None:
        """The (key, value) bytes the unwrapped record is written as, or None when the SMT drops it."""
        key, env = self._struct(op, id_, row, seq, epoch, snapshot)
        record = SourceRecord(
            None, None, self.topic, key_schema=self.key_schema, key=key, value_schema=self.envelope, value=env
        )
        out = self.smt.apply(record)
        if out is None:
            return None
        return (
            self.keys.from_connect_data(self.topic, out.key_schema, out.key),
            self.values.from_connect_data(self.topic, out.value_schema, out.value),
        )

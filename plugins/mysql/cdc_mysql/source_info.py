"""SourceInfo: the `source` block of MySQL/MariaDB change events (`io.debezium.connector.mysql.Source`)."""

from __future__ import annotations

from typing import Any

from cdc.api import Schema, Struct
from cdc_debezium.envelope import new_struct
from cdc_debezium.source_info import SnapshotRecord, common_source_schema_builder


def source_schema(connector: str) -> Schema:
    """Debezium's binlog source schema; `connector` is `mysql` or `mariadb`."""
    return (
        common_source_schema_builder(connector)
        .field("table", Schema.OPTIONAL_STRING_SCHEMA)
        .field("server_id", Schema.INT64_SCHEMA)
        .field("gtid", Schema.OPTIONAL_STRING_SCHEMA)
        .field("file", Schema.STRING_SCHEMA)
        .field("pos", Schema.INT64_SCHEMA)
        .field("row", Schema.INT32_SCHEMA)
        .field("thread", Schema.OPTIONAL_INT64_SCHEMA)
        .field("query", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )


class SourceInfo:
    """Builds source structs; the hot path fills the struct's slots directly (one per event)."""

    __slots__ = ("connector", "row_index", "schema", "sequence", "server_name", "version")

    def __init__(self, connector: str, version: str, server_name: str) -> None:
        self.connector = connector
        self.version = version
        self.server_name = server_name
        self.schema = source_schema(connector)
        self.row_index = self.schema.field("row").index
        # `source.sequence`: the binlog lineage's epoch (lineage.py); null at epoch 0, as Debezium.
        self.sequence: str | None = None

    def struct(
        self,
        *,
        ts_ms: int,
        db: str,
        table: str | None,
        server_id: int,
        file: str,
        pos: int,
        row: int = 0,
        gtid: str | None = None,
        thread: int | None = None,
        query: str | None = None,
        snapshot: SnapshotRecord = SnapshotRecord.FALSE,
    ) -> Struct:
        return new_struct(
            self.schema,
            [
                self.version,
                self.connector,
                self.server_name,
                ts_ms,
                snapshot.value,
                db,
                self.sequence,
                ts_ms * 1000,
                ts_ms * 1_000_000,
                table,
                server_id,
                gtid,
                file,
                pos,
                row,
                thread,
                query,
            ],
        )

    def streaming_values(
        self,
        ts_ms: int,
        db: str,
        table: str,
        server_id: int,
        file: str,
        pos: int,
        gtid: str | None,
        thread: int | None,
        query: str | None,
    ) -> list[Any]:
        """The field values of a binlog event's source block with `row` 0; rows copy it and set `row_index`."""
        return [
            self.version,
            self.connector,
            self.server_name,
            ts_ms,
            "false",
            db,
            self.sequence,
            ts_ms * 1000,
            ts_ms * 1_000_000,
            table,
            server_id,
            gtid,
            file,
            pos,
            0,
            thread,
            query,
        ]

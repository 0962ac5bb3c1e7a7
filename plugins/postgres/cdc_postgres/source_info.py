"""SourceInfo: the `source` block of PostgreSQL events (`io.debezium.connector.postgresql.Source`)."""

from __future__ import annotations

import json

from cdc.api import Schema, Struct
from cdc_debezium.source_info import common_source_schema_builder
from cdc_postgres import __version__

SOURCE_SCHEMA = (
    common_source_schema_builder("postgresql")
    .field("schema", Schema.STRING_SCHEMA)
    .field("table", Schema.STRING_SCHEMA)
    .field("txId", Schema.OPTIONAL_INT64_SCHEMA)
    .field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .field("xmin", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)


def sequence(lsn_commit: int | None, lsn: int | None) -> str:
    """`["<last commit LSN>","<current LSN>"]`: Debezium's comparable position, as strings (JSON, compact)."""
    if lsn_commit is not None and lsn is not None:
        return f'["{lsn_commit}","{lsn}"]'  # the per-row case (integers), without json.dumps
    return json.dumps(
        [None if lsn_commit is None else str(lsn_commit), None if lsn is None else str(lsn)], separators=(",", ":")
    )


class SourceInfo:
    def __init__(self, server_name: str, db: str) -> None:
        self.server_name = server_name
        self.db = db

    def struct(
        self,
        schema: str,
        table: str,
        ts_us: int,
        snapshot: str,
        tx_id: int | None,
        lsn: int | None,
        lsn_commit: int | None,
    ) -> Struct:
        # Field order of SOURCE_SCHEMA: version, connector, name, ts_ms, snapshot, db, sequence,
        # ts_us, ts_ns, schema, table, txId, lsn, xmin.
        return Struct.from_values(
            SOURCE_SCHEMA,
            [
                __version__,
                "postgresql",
                self.server_name,
                ts_us // 1000,
                snapshot,
                self.db,
                sequence(lsn_commit, lsn),
                ts_us,
                ts_us * 1000,
                schema,
                table,
                tx_id,
                lsn,
                None,
            ],
        )

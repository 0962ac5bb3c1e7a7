"""Helpers of the incremental snapshot tests: the signal table, sending signals, replaying events into a table."""

from __future__ import annotations

import json
from typing import Any

from cdc.api import SourceRecord
from tests.mysql.harness import execute
from tests.rig import MariaDbServer

SIGNAL_TABLE = "debezium_signal"


def create_signal_table(server: MariaDbServer) -> str:
    """Debezium's signal table DDL; the connector user may INSERT and DELETE in it (watermarks)."""
    execute(
        server,
        f"CREATE TABLE {SIGNAL_TABLE} (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL)",
        f"GRANT INSERT, DELETE ON `{server.database}`.{SIGNAL_TABLE} TO '{server.cdc_user}'@'%'",
    )
    return f"{server.database}.{SIGNAL_TABLE}"


def send_signal(server: MariaDbServer, signal_id: str, kind: str, data: Any) -> None:
    text = data if isinstance(data, str) or data is None else json.dumps(data)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"INSERT INTO {SIGNAL_TABLE} VALUES (%s, %s, %s)", (signal_id, kind, text))


def signal_props(server: MariaDbServer, **extra: Any) -> dict[str, Any]:
    return {"signal__data__collection": f"{server.database}.{SIGNAL_TABLE}", **extra}


def sequence(record: SourceRecord) -> tuple[int, int, int]:
    """The event's binlog sequence from its source block (file number, pos, row), as the sinks rank it."""
    src = record.value.get("source")
    return (int(str(src.get("file")).rsplit(".", 1)[-1]), int(src.get("pos")), int(src.get("row") or 0))


def replay(records: list[SourceRecord], table: str) -> dict[Any, dict[str, Any]]:
    """The table a sink builds: per key, the event with the highest sequence (ties: the later one) wins."""
    latest: dict[Any, tuple[tuple[int, int, int], int, SourceRecord]] = {}
    for i, r in enumerate(records):
        if not r.topic.endswith("." + table) or _op(r) not in ("c", "u", "d", "r"):
            continue
        key = tuple(sorted(r.key.to_dict().items()))
        seq = sequence(r)
        if key not in latest or (seq, i) >= latest[key][:2]:
            latest[key] = (seq, i, r)
    out = {}
    for key, (_, _, r) in latest.items():
        if r.value.get("op") != "d":
            out[key] = r.value.get("after").to_dict()
    return out


def incremental_reads(records: list[SourceRecord], table: str | None = None) -> list[SourceRecord]:
    return [
        r for r in records
        if _op(r) == "r" and r.value.get("source").get("snapshot") == "incremental"
        and (table is None or r.topic.endswith("." + table))
    ]  # fmt: skip


def _op(r: SourceRecord) -> str | None:
    """A change event's op; None for tombstones, schema changes, heartbeats and transaction records."""
    if r.value is None or r.value.schema.field("op") is None:
        return None
    return r.value.get("op")

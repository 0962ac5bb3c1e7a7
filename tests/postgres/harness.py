"""Drive PostgresConnectorTask in-process, as the runtime does (poll → store each batch's last offset).

Records stay Connect data (Structs, bytes, Decimals), so tests compare them with the values
Debezium's own tests assert without a converter in between.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from cdc.api import SourceRecord, Struct
from cdc_postgres.task import PostgresConnectorTask
from tests.support.task_context import MemoryOffsets, TaskContext

_slots = itertools.count(1)


def connector_props(db: Any, **extra: str) -> dict[str, str]:
    """The connector's keys for the `postgres_db` server `db`; `extra` keys use '.' (or '__' for '.')."""
    props = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": db.host,
        "database.port": str(db.port),
        "database.user": db.user,
        "database.dbname": db.dbname,
        "topic.prefix": "test_server",
        "slot.name": f"harness_{next(_slots)}",
        "slot.drop.on.stop": "true",
        "poll.interval.ms": "50",
        "status.update.interval.ms": "100",
    }
    props.update({k.replace("__", "."): str(v) for k, v in extra.items()})
    return props


class TaskRunner:
    """Starts the task, polls in the test thread, stores each batch's last offset like the embedded log."""

    def __init__(self, props: dict[str, str], offsets: MemoryOffsets | None = None) -> None:
        self.props = props
        self.offsets = offsets if offsets is not None else MemoryOffsets()
        self.records: list[SourceRecord] = []
        self.task = PostgresConnectorTask()
        self.task.initialize(TaskContext(props, self.offsets))  # type: ignore[arg-type]

    def __enter__(self) -> TaskRunner:
        self.task.start(dict(self.props))
        return self

    def __exit__(self, *exc: object) -> None:
        self.task.stop()

    def poll_once(self) -> list[SourceRecord]:
        batch = self.task.poll() or []
        if batch:
            last = batch[-1]
            assert last.source_partition is not None and last.source_offset is not None
            self.offsets.put(last.source_partition, last.source_offset)
            self.records.extend(batch)
            self.task.commit()
        return batch

    def poll_until(self, cond: Callable[[list[SourceRecord]], bool], timeout: float = 30, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.poll_once()
            if cond(self.records):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what or 'records'}; got {len(self.records)}: "
                    f"{[(r.topic, op(r)) for r in self.records[-10:]]}"
                )

    def data(self, table: str | None = None) -> list[SourceRecord]:
        """Change events of `schema.table` (all tables when None): no tombstones, heartbeats, transactions."""
        prefix = self.props["topic.prefix"] + "."
        return [
            r for r in self.records
            if r.value is not None and isinstance(r.value, Struct) and r.value.schema.field("after") is not None
            and (table is None or r.topic == prefix + table)
        ]  # fmt: skip

    def wait_data(self, n: int, table: str | None = None, timeout: float = 30) -> list[SourceRecord]:
        self.poll_until(lambda _: len(self.data(table)) >= n, timeout, f"{n} change events of {table or 'any table'}")
        return self.data(table)

    def wait_streaming(self, sql: Any, timeout: float = 30) -> None:
        """Until the slot is active (the snapshot, if any, is done and the stream is open)."""
        slot = self.props["slot.name"]

        def active(_: list[SourceRecord]) -> bool:
            row = sql.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
            return bool(row and row[0])

        self.poll_until(active, timeout, f"slot {slot} streaming")


def op(r: SourceRecord) -> str | None:
    if r.value is None:
        return "tombstone"
    try:
        return r.value.get("op")
    except Exception:
        return None

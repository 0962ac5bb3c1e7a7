"""Drive MySqlConnectorTask in-process, the way the runtime does (poll → store offsets per batch)."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from typing import Any

from cdc.api import SourceRecord
from cdc_mysql.task import MySqlConnectorTask
from tests.rig import MariaDbServer
from tests.support.task_context import MemoryOffsets, TaskContext

# Each pytest worker numbers its readers in a range of its own: two workers share the session
# MariaDB, and two readers with one server id disconnect each other (error 4052).
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_server_ids = itertools.count(1000 + _WORKER * 1_000_000 + int(time.time()) % 10000)


def connector_props(server: MariaDbServer, **extra: Any) -> dict[str, str]:
    props = {
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": server.host,
        "database.port": str(server.port),
        "database.user": server.cdc_user,
        "database.password": server.cdc_password,
        "database.server.id": str(next(_server_ids)),
        "topic.prefix": "dbserver1",
        "poll.interval.ms": "50",
    }
    if server.database:
        props["database.include.list"] = server.database
    props.update({k.replace("__", "."): str(v) for k, v in extra.items()})
    return props


class TaskRunner:
    """Starts the task, polls in the test thread, stores each batch's last offset like the embedded log."""

    def __init__(self, props: dict[str, str], offsets: MemoryOffsets | None = None) -> None:
        self.props = props
        self.offsets = offsets if offsets is not None else MemoryOffsets()
        self.records: list[SourceRecord] = []
        self.task = MySqlConnectorTask()
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
        return batch

    def poll_until(self, cond: Callable[[list[SourceRecord]], bool], timeout: float = 20, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.poll_once()
            if cond(self.records):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what or 'records'}; got {len(self.records)}: "
                    f"{[(r.topic, _op(r)) for r in self.records[-10:]]}"
                )

    def data(self, table: str | None = None) -> list[SourceRecord]:
        """Change events (no tombstones, schema changes, heartbeats or transaction records)."""
        return [
            r for r in self.records
            if r.value is not None and r.topic.count(".") == 2 and not r.topic.endswith(".transaction")
            and (table is None or r.topic.endswith("." + table))
        ]  # fmt: skip

    def wait_data(self, n: int, table: str | None = None, timeout: float = 20) -> list[SourceRecord]:
        self.poll_until(lambda _: len(self.data(table)) >= n, timeout, f"{n} change events")
        return self.data(table)

    def wait_streaming(self, timeout: float = 20) -> None:
        """Until the snapshot has committed and the binlog reader runs: a test that kills the server
        "mid-stream" must not hit the snapshot's last statements instead."""
        self.poll_until(lambda _: self.task.streaming is not None, timeout, "streaming to start")


def _op(r: SourceRecord) -> str | None:
    if r.value is None:
        return "tombstone"
    try:
        return r.value.get("op")
    except Exception:
        return None


def op(r: SourceRecord) -> str | None:
    return _op(r)


def after(r: SourceRecord) -> dict[str, Any] | None:
    v = r.value.get("after")
    return None if v is None else v.to_dict()


def before(r: SourceRecord) -> dict[str, Any] | None:
    v = r.value.get("before")
    return None if v is None else v.to_dict()


def execute(server: MariaDbServer, *statements: str) -> None:
    with server.connect() as conn, conn.cursor() as cur:
        for s in statements:
            cur.execute(s)

"""`kill -9` of a worker streaming from PostgreSQL, mid-workload, then a restart: every row once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from cdc.log.embedded import EmbeddedLog
from tests.support.logs import topic_records
from tests.support.proc import CdcProcess, wait_for, write_props

TXNS, ROWS = 40, 250


def test_kill9_mid_stream_then_resume(postgres_db, tmp_path: Path) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE big(id int PRIMARY KEY, pad text)")
    state = tmp_path / "state"
    state.mkdir()
    worker = write_props(
        tmp_path / "worker.properties",
        {
            "transport": "embedded",
            "state.dir": state,
            "listeners": "http://127.0.0.1:0",  # a free port: tests run side by side
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
        },
    )
    conn = write_props(
        tmp_path / "pg.properties",
        {
            "name": "pg",
            "connector.class": "PostgresConnector",
            "database.hostname": postgres_db.host,
            "database.port": postgres_db.port,
            "database.user": postgres_db.user,
            "database.dbname": postgres_db.dbname,
            "topic.prefix": "k9",
            "slot.name": "k9_slot",
            "poll.interval.ms": 50,
            "max.batch.size": 100,
        },
    )
    release = threading.Event()

    def workload() -> None:
        w = postgres_db.connect()
        for t in range(TXNS):
            if t == TXNS // 2:
                release.wait(60)  # hold half the input back until after the kill
            with w.transaction():
                w.execute(
                    "INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(%s::int, %s::int) g",
                    (t * ROWS + 1, (t + 1) * ROWS),
                )
            time.sleep(0.02)
        w.close()

    log_ = EmbeddedLog(state)
    topic = "k9.public.big"

    def ids() -> list[int]:
        return [json.loads(r.value)["after"]["id"] for r in topic_records(log_, topic) if r.value is not None]

    def slot_active() -> bool:
        row = sql.execute("SELECT active FROM pg_replication_slots WHERE slot_name = 'k9_slot'").fetchone()
        return bool(row and row[0])

    writer = threading.Thread(target=workload, daemon=True)
    first = CdcProcess("standalone", str(worker), str(conn), log_path=tmp_path / "w1.log")
    try:
        # Kill mid-stream, not mid-snapshot (an interrupted snapshot resumes: tests/postgres/test_resumable_snapshot).
        wait_for(slot_active, 60, "the connector to stream from its slot", first)
        writer.start()
        wait_for(lambda: len(ids()) >= 2 * ROWS, 60, "rows before the kill", first)
    finally:
        first.kill9()
    at_kill = ids()
    assert at_kill == sorted(set(at_kill)), "duplicates or reordering before the kill"
    second = CdcProcess("standalone", str(worker), str(conn), log_path=tmp_path / "w2.log")
    release.set()
    try:
        writer.join(60)
        wait_for(lambda: len(ids()) >= TXNS * ROWS, 90, "every row after the restart", second)
        time.sleep(0.5)
    finally:
        code = second.terminate()
    assert code == 0, second.output()[-2000:]
    # Embedded transport: records and offsets commit together, so exactly once and in order.
    assert ids() == list(range(1, TXNS * ROWS + 1))
    log_.close()

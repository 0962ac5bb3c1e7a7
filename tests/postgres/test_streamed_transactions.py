"""pgoutput proto 2 streaming of in-progress transactions: buffered per xid, emitted at commit, dropped at abort."""

from __future__ import annotations

import json
import struct

from cdc.runtime.standalone import StandaloneHerder
from cdc_postgres.stream_buffer import StreamedTransactions
from tests.postgres.test_connector import _streaming, herder, values, wait_until
from tests.support.logs import stored_offsets, topic_records

__all__ = ["herder"]  # the fixture, imported for the test below


def _msg(xid: int, n: int) -> bytes:
    return b"I" + struct.pack(">I", xid) + n.to_bytes(4, "big") + b"x" * 20


def test_buffer_keeps_order_spills_and_drops_aborted_subtransactions() -> None:
    buf = StreamedTransactions(spill_bytes=200)
    for n in range(10):
        buf.add(7, 100 + n, _msg(7 if n % 2 else 8, n))  # subtransaction 8 inside transaction 7
        buf.add(9, 500 + n, _msg(9, n))
    assert buf.spilled >= 1 and len(buf) == 2  # past 200 bytes the largest went to disk
    buf.abort(7, 8)  # ROLLBACK TO SAVEPOINT: only subtransaction 8's changes go
    buf.add(7, 200, _msg(8, 99))  # a later change of the same subtransaction is dropped too
    assert [lsn for lsn, _ in buf.commit(7)] == [101, 103, 105, 107, 109]
    buf.abort(9, 9)  # the whole transaction
    assert list(buf.commit(9)) == [] and len(buf) == 0
    buf.close()


def _slot_stat(sql, column: str) -> int:
    row = sql.execute(f"SELECT {column} FROM pg_stat_replication_slots WHERE slot_name = 'cdc_test'").fetchone()
    return row[0] if row else 0


def test_large_transactions_stream_and_emit_at_commit(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    # The server streams a transaction once it holds more than this (the minimum) of its changes.
    sql.execute(f"ALTER DATABASE \"{postgres_db.dbname}\" SET logical_decoding_work_mem = '64kB'")
    sql.execute("CREATE TABLE big(id int PRIMARY KEY, pad text)")
    stream = {"stream.in.progress.transactions": "true", "stream.buffer.memory.bytes": "50000"}
    _streaming(sql, herder, **stream)
    pad = "p" * 60
    tx = postgres_db.connect(autocommit=False)
    tx.execute("INSERT INTO big SELECT g, %s FROM generate_series(1, 1500) g", (pad,))
    wait_until(lambda: _slot_stat(sql, "stream_count") >= 1, what="a streamed chunk")
    # A lost connection mid-transaction: the buffered chunks go, the server sends them again.
    sql.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'cdc_test'")
    tx.execute("SAVEPOINT s")
    tx.execute("INSERT INTO big SELECT g, %s FROM generate_series(5001, 6500) g", (pad,))
    tx.execute("ROLLBACK TO SAVEPOINT s")
    tx.execute("INSERT INTO big SELECT g, %s FROM generate_series(1501, 3000) g", (pad,))
    sql.execute("INSERT INTO big VALUES (10000, 'small, committed while the big one is open')")
    tx.commit()
    tx.execute("INSERT INTO big SELECT g, %s FROM generate_series(20001, 23000) g", (pad,))
    tx.rollback()
    sql.execute("INSERT INTO big VALUES (30000, 'after')")
    wait_until(lambda: len(values(herder, "srv.public.big")) >= 3002, what="3002 events")
    wait_until(lambda: _slot_stat(sql, "stream_txns") >= 2, what="two streamed transactions in the slot's statistics")
    records = topic_records(herder.worker.log, "srv.public.big")
    events = [json.loads(r.value)["payload"] for r in records]
    # Commit order: the small transaction first; the savepoint's and the aborted rows never appear.
    assert [e["after"]["id"] for e in events] == [10000, *range(1, 3001), 30000]
    big = events[1:-1]
    commit_lsns = [int(json.loads(e["source"]["sequence"])[0]) for e in events]
    assert len(set(commit_lsns[1:-1])) == 1 and len({e["source"]["txId"] for e in big}) == 1
    assert commit_lsns[0] < commit_lsns[1] < commit_lsns[-1]
    lsns = [e["source"]["lsn"] for e in big]
    assert lsns == sorted(lsns)
    # The stored offset stands on the last transaction's commit: the slot may confirm up to it.
    wait_until(
        lambda: next(iter(stored_offsets(herder.worker.log).values()), {}).get("lsn_commit") == commit_lsns[-1],
        what="the offset of the last transaction",
    )

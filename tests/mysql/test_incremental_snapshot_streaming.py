"""Streaming goes on while an incremental snapshot reads a chunk, and a poll batch holds at most one chunk.

Issue 22: streamed changes must not wait behind the snapshot. The chunk's watermarks and SELECT run on
the chunk thread (signal-table watermarks), so a chunk read that waits (here on a table lock) does not
hold the binlog; and the next chunk starts only once the last one's rows were taken by a poll, so the
changes streamed after a chunk wait for one chunk's rows at most, not for a batch full of them.
"""

from __future__ import annotations

import random
import threading
from typing import Any

from cdc.api import SourceRecord
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.mysql.incremental_support import create_signal_table, incremental_reads, replay, send_signal, signal_props


def _is_read(r: SourceRecord, table: str) -> bool:
    return r.value is not None and r.topic.endswith("." + table) and r.value.get("op") == "r"


def test_a_poll_batch_holds_at_most_one_chunk_and_the_snapshot_reads_every_row(mariadb_db: Any) -> None:
    rnd = random.Random(2211)
    rows = rnd.randint(90, 140)
    chunk = rnd.randint(5, 12)
    create_signal_table(mariadb_db)
    execute(
        mariadb_db,
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
        "CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t VALUES " + ",".join(f"({i}, 'v{i}')" for i in range(1, rows + 1)),
    )
    props = connector_props(
        mariadb_db, snapshot__mode="no_data", incremental__snapshot__chunk__size=str(chunk),
        max__batch__size="2048", **signal_props(mariadb_db),
    )  # fmt: skip
    stop, written = threading.Event(), [0]

    def write_u() -> None:
        # Changes streamed during the whole snapshot: the binlog has data after every chunk's rows.
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            while not stop.is_set():
                written[0] += 1
                cur.execute("INSERT INTO u VALUES (%s, %s)", (written[0], f"w{rnd.randint(0, 999)}"))

    batches: list[int] = []
    writer = threading.Thread(target=write_u, daemon=True)
    with TaskRunner(props) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        writer.start()
        send_signal(mariadb_db, "sig-1", "execute-snapshot", {"data-collections": [f"{mariadb_db.database}.t"]})
        try:
            while len(incremental_reads(run.records, "t")) < rows:
                batch = run.poll_once()
                batches.append(sum(1 for r in batch if _is_read(r, "t")))
                if len(batches) > 4000:
                    raise AssertionError(f"the snapshot did not end: {len(incremental_reads(run.records, 't'))} reads")
        finally:
            stop.set()
            writer.join(30)
        run.poll_until(lambda _: len(replay(run.records, "u")) >= written[0], timeout=60, what="every row of u")
    assert max(batches) <= chunk, f"a poll batch held {max(batches)} snapshot rows; the chunk size is {chunk}"
    reads = incremental_reads(run.records, "t")
    assert sorted(r.key.get("id") for r in reads) == list(range(1, rows + 1))


def test_streaming_goes_on_while_a_chunk_read_waits_for_its_table(mariadb_db: Any) -> None:
    rnd = random.Random(2212)
    rows = rnd.randint(60, 90)
    create_signal_table(mariadb_db)
    execute(
        mariadb_db,
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
        "CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t VALUES " + ",".join(f"({i}, 'v{i}')" for i in range(1, rows + 1)),
    )
    props = connector_props(mariadb_db, snapshot__mode="no_data", incremental__snapshot__chunk__size="10",
                            **signal_props(mariadb_db))  # fmt: skip
    locked, release, released = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold_lock() -> None:
        # The chunk SELECT of `t` waits while this session holds its write lock; released when the
        # test saw the change to `u`, or after 60 s (then the assertion below says the stream waited).
        try:
            with mariadb_db.connect() as conn, conn.cursor() as cur:
                cur.execute("LOCK TABLES t WRITE")
                locked.set()
                release.wait(60)
                released.set()
                cur.execute("UNLOCK TABLES")
        except BaseException as e:  # reported by the test thread
            errors.append(e)
            locked.set()

    holder = threading.Thread(target=hold_lock, daemon=True)
    with TaskRunner(props) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        send_signal(mariadb_db, "sig-1", "execute-snapshot", {"data-collections": [f"{mariadb_db.database}.t"]})
        run.poll_until(lambda rs: len(incremental_reads(rs, "t")) >= 10, timeout=60, what="the first chunk")
        holder.start()
        assert locked.wait(30) and not errors, errors
        execute(mariadb_db, "INSERT INTO u VALUES (1, 'streamed')")
        try:
            run.poll_until(lambda rs: any(r.topic.endswith(".u") for r in rs), timeout=120, what="the change to u")
            streamed_while_locked = not released.is_set()
        finally:
            release.set()
            holder.join(30)
        run.poll_until(lambda rs: len(incremental_reads(rs, "t")) >= rows, timeout=120, what="every row of t")
    assert streamed_while_locked, "the change to u was streamed only after the chunk's table was unlocked"
    assert sorted(r.key.get("id") for r in incremental_reads(run.records, "t")) == list(range(1, rows + 1))
    assert len(replay(run.records, "t")) == rows

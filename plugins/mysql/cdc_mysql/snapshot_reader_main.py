"""The reader process of a parallel snapshot (`python -m cdc_mysql.snapshot_reader_main`; snapshot_reader.py).

Kept to PyMySQL and the snapshot's decoders, so a reader starts in a few tens of milliseconds.
Frames both ways: a 4-byte big-endian length, then a pickle (see snapshot_reader.py).
"""

from __future__ import annotations

import contextlib
import pickle
import struct
import sys
from typing import IO, Any

_LEN = struct.Struct(">I")


def write_frame(out: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LEN.pack(len(data)) + data)
    out.flush()


def read_frame(inp: IO[bytes]) -> Any:
    """The next message, or None at the end of the stream."""
    head = inp.read(4)
    if len(head) < 4:
        return None
    (size,) = _LEN.unpack(head)
    data = inp.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)  # frames come from the task's own process


def _connect(setup: dict[str, Any]) -> Any:
    import pymysql.cursors

    from cdc_mysql.snapshot_decoders import CONVERSIONS

    extra = {"autocommit": False, "cursorclass": pymysql.cursors.SSCursor, "conv": CONVERSIONS}
    if "settings" in setup:
        return pymysql.connect(**setup["settings"], **extra)
    from cdc_mysql.config import MySqlConnectorConfig
    from cdc_mysql.connection import MySqlConnection

    return MySqlConnection(MySqlConnectorConfig(setup["props"])).connect(**extra)


def _read_chunk(conn: Any, reader: Any, out: IO[bytes], chunk_id: int, sql: str, args: Any, fetch_size: int) -> None:
    """Sends one chunk's rows: its column names and text-sent columns, its batches, then its count."""
    import pymysql.cursors

    from cdc_mysql.snapshot_fetch import columns_of, deferred_columns

    count = 0
    with conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute(sql, args)
        names = [d[0] for d in cur.description or ()]
        deferred = deferred_columns(cur)
        at = frozenset(i for i, _ in deferred)
        write_frame(out, ("names", chunk_id, names, deferred))
        while batch := reader.fetch(cur, fetch_size, at):
            count += len(batch)
            columns = columns_of(batch, len(names))
            write_frame(out, ("rows", chunk_id, batch) if columns is None else ("cols", chunk_id, columns))
    write_frame(out, ("done", chunk_id, count))


def _child() -> None:  # pragma: no cover - runs in the reader process (covered by the parallel snapshot tests)
    import pymysql.cursors

    from cdc_mysql.snapshot_fetch import RowReader

    out, inp = sys.stdout.buffer, sys.stdin.buffer
    reader = RowReader()
    sys.stdout = sys.stderr  # nothing but frames on the pipe
    try:
        setup = read_frame(inp)
        fetch_size = int(setup["fetch_size"])
        conn = _connect(setup)
        with conn.cursor(pymysql.cursors.Cursor) as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        write_frame(out, ("connected",))
        while (message := read_frame(inp)) is not None and message[0] != "close":
            if message[0] == "begin":
                with conn.cursor(pymysql.cursors.Cursor) as cur:
                    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                    cur.execute("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'")
                    status = {str(k).lower(): str(v) for k, v in cur.fetchall()}
                pos = status.get("binlog_snapshot_position")
                write_frame(out, ("begun", status.get("binlog_snapshot_file"), int(pos) if pos else None))
            elif message[0] == "chunk":
                _, chunk_id, sql, args = message
                _read_chunk(conn, reader, out, chunk_id, sql, args, fetch_size)
        conn.close()
    except BrokenPipeError:
        return
    except BaseException as e:
        with contextlib.suppress(OSError):
            write_frame(out, ("error", f"{type(e).__name__}: {e}"))


if __name__ == "__main__":
    import logging

    logging.basicConfig(stream=sys.stderr, level=logging.ERROR)
    _child()

"""Snapshot reader processes of `snapshot.max.threads`: each runs one SELECT of a chunk at a time.

Debezium's MySQL snapshot reads tables on `snapshot.max.threads` JDBC connections of one
consistent point (each connection opens START TRANSACTION WITH CONSISTENT SNAPSHOT while the
global read lock, or the binlog position, is held). In CPython the reading of a result set
(PyMySQL parses the protocol in Python) holds the GIL, so threads would not read faster than
one; each reader here is a child process (`python -m cdc_mysql.snapshot_reader`) with its own
connection, sending the rows of its chunks back as pickled batches of PyMySQL tuples, and the
task's own thread turns them into records. `multiprocessing` was checked and not used: its
`spawn` re-imports the parent's `__main__` and `fork` is unsafe in a process with threads; a
plain child on pipes needs neither.

Frames both ways: a 4-byte big-endian length, then a pickle. Parent → child: ("begin",),
("chunk", id, sql, args), ("close",). Child → parent: ("connected",), ("begun", file, pos),
("names", id, [column names]), ("rows", id, [tuples]), ("done", id, count), ("error", text).
"""

from __future__ import annotations

import contextlib
import json
import logging
import pickle
import queue
import struct
import subprocess
import sys
import threading
from typing import IO, Any

from cdc.api import ConnectException

log = logging.getLogger(__name__)

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
    return pickle.loads(data)  # frames come from our own child process


class ReaderProcess:
    """The parent's handle on one reader child: sends commands; a thread forwards its frames to `inbox`."""

    def __init__(self, index: int, props: dict[str, str], fetch_size: int, inbox: queue.Queue[Any]) -> None:
        self.index = index
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_mysql.snapshot_reader"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin, self._stdout = self.proc.stdin, self.proc.stdout
        write_frame(self._stdin, {"props": props, "fetch_size": fetch_size})
        self.inbox = inbox
        self.in_flight = 0
        self.closed = False
        self._thread = threading.Thread(target=self._forward, name=f"snapshot-reader-{index}", daemon=True)
        self._thread.start()

    def _forward(self) -> None:
        while True:
            try:
                message = read_frame(self._stdout)
            except Exception as e:  # a torn pipe is an ended reader
                message = ("error", f"reading from snapshot reader {self.index} failed: {e!r}")
            if message is None:
                message = ("exit",)
            while not self.closed:  # nobody drains the inbox once the snapshot is over
                try:
                    self.inbox.put((self.index, message), timeout=0.2)
                    break
                except queue.Full:
                    continue
            if message[0] in ("error", "exit") or self.closed:
                return

    def send(self, *message: Any) -> None:
        write_frame(self._stdin, message)

    def close(self, kill: bool = False) -> None:
        """Ends the reader: asks it to close (its transaction ends with its connection), or kills it."""
        self.closed = True
        if kill:
            self.proc.kill()
        with contextlib.suppress(OSError, ValueError):
            self.send("close")
            self._stdin.close()
        if kill:
            self._reap()
        else:  # an idle reader exits at once; nothing waits for it
            threading.Thread(target=self._reap, name=f"snapshot-reader-{self.index}-exit", daemon=True).start()

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            self._stdout.close()


def _child() -> None:  # pragma: no cover - runs in the reader process (covered by the parallel snapshot tests)
    import pymysql
    import pymysql.cursors

    from cdc_mysql.config import MySqlConnectorConfig
    from cdc_mysql.connection import MySqlConnection
    from cdc_mysql.snapshot_decoders import CONVERSIONS

    out, inp = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # nothing but frames on the pipe
    try:
        setup = read_frame(inp)
        config = MySqlConnectorConfig(setup["props"])
        fetch_size = int(setup["fetch_size"])
        conn = MySqlConnection(config).connect(autocommit=False, cursorclass=pymysql.cursors.SSCursor, conv=CONVERSIONS)
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
                count = 0
                with conn.cursor(pymysql.cursors.SSCursor) as cur:
                    cur.execute(sql, args)
                    write_frame(out, ("names", chunk_id, [d[0] for d in cur.description or ()]))
                    while batch := cur.fetchmany(fetch_size):
                        count += len(batch)
                        write_frame(out, ("rows", chunk_id, batch))
                write_frame(out, ("done", chunk_id, count))
        conn.close()
    except BrokenPipeError:
        return
    except BaseException as e:
        with contextlib.suppress(OSError):
            write_frame(out, ("error", f"{type(e).__name__}: {e}"))


def spawn_readers(props: dict[str, str], count: int, fetch_size: int) -> tuple[list[ReaderProcess], queue.Queue]:
    """`count` reader processes, starting and connecting (`await_connected` waits for them)."""
    inbox: queue.Queue[Any] = queue.Queue(maxsize=4 * count + 4)
    return [ReaderProcess(i, props, fetch_size, inbox) for i in range(count)], inbox


def await_connected(readers: list[ReaderProcess], inbox: queue.Queue) -> None:
    """Waits until every reader is connected (not yet in a transaction)."""
    waiting = {r.index for r in readers}
    while waiting:
        index, message = inbox.get(timeout=60)
        if message[0] != "connected":
            raise ConnectException(f"Snapshot reader {index} could not connect: {message[-1]}")
        waiting.discard(index)


def props_for_readers(originals: dict[str, Any]) -> dict[str, str]:
    """The connector's properties as text (a reader builds its own MySqlConnectorConfig from them)."""
    return json.loads(json.dumps({k: v for k, v in originals.items()}, default=str))


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.ERROR)
    _child()

"""Snapshot reader processes of `snapshot.max.threads`: each runs one SELECT of a chunk at a time.

Debezium's MySQL snapshot reads tables on `snapshot.max.threads` JDBC connections of one
consistent point (each connection opens START TRANSACTION WITH CONSISTENT SNAPSHOT while the
global read lock, or the binlog position, is held). In CPython the reading of a result set
(PyMySQL parses the protocol in Python) holds the GIL, so threads would not read faster than
one; each reader here is a child process (`python -m cdc_mysql.snapshot_reader_main`) with its own
connection, sending the rows of its chunks back as pickled batches, and the task's own thread
turns them into records. A reader parses rows with snapshot_fetch.py (the values PyMySQL
returns, at half its cost) and sends a batch column by column, the columns of slowly pickled
types (datetimes, Decimals; snapshot_decoders.DEFERRED) as their text, which the task's process
decodes (at a fifth of their pickling cost). `multiprocessing` was checked and not used: its
`spawn` re-imports the parent's `__main__` and `fork` is unsafe in a process with threads; a
plain child on pipes needs neither.

Frames both ways: a 4-byte big-endian length, then a pickle. Parent → child: ("begin",),
("chunk", id, sql, args), ("close",). Child → parent: ("connected",), ("begun", file, pos),
("names", id, [column names], [(position, field type) of the columns sent as text]),
("cols", id, [a tuple per column]), or, for rows of several lengths, ("rows", id, [tuples]),
("done", id, count), ("error", text).
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import subprocess
import sys
import threading
from typing import Any

from cdc.api import ConnectException
from cdc_mysql.snapshot_reader_main import read_frame, write_frame

log = logging.getLogger(__name__)


class ReaderProcess:
    """The parent's handle on one reader child: sends commands; a thread forwards its frames to `inbox`."""

    def __init__(self, index: int, setup: dict[str, Any], inbox: queue.Queue[Any]) -> None:
        self.index = index
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_mysql.snapshot_reader_main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin, self._stdout = self.proc.stdin, self.proc.stdout
        write_frame(self._stdin, setup)
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


def spawn_readers(setup: dict[str, Any], count: int) -> tuple[list[ReaderProcess], queue.Queue]:
    """`count` reader processes, starting and connecting (`await_connected` waits for them); `setup` is
    `reader_setup`'s."""
    inbox: queue.Queue[Any] = queue.Queue(maxsize=4 * count + 4)
    return [ReaderProcess(i, setup, inbox) for i in range(count)], inbox


def await_connected(readers: list[ReaderProcess], inbox: queue.Queue) -> None:
    """Waits until every reader is connected (not yet in a transaction)."""
    waiting = {r.index for r in readers}
    while waiting:
        index, message = inbox.get(timeout=60)
        if message[0] != "connected":
            raise ConnectException(f"Snapshot reader {index} could not connect: {reader_failure(message)}")
        waiting.discard(index)


def reader_setup(settings: dict[str, Any], originals: dict[str, Any], fetch_size: int) -> dict[str, Any]:
    """What a reader connects with: PyMySQL's arguments as they are, or, where they hold an SSLContext
    (which does not pickle), the connector's properties, from which it builds its own config."""
    if "ssl" in settings:
        props = json.loads(json.dumps(dict(originals), default=str))
        return {"props": props, "fetch_size": fetch_size}
    return {"settings": settings, "fetch_size": fetch_size}


def reader_failure(message: tuple[Any, ...]) -> str:
    """A reader's failure as text: its error, or its exit (whose cause it wrote to stderr)."""
    if message[0] == "exit":
        return "the reader process exited (its stderr, above, says why)"
    return str(message[-1])


def end_on_stop(readers: list[ReaderProcess], stop: threading.Event) -> None:
    """Kills `readers` once `stop` is set, unless they were all closed before."""
    while not all(r.closed for r in readers):
        if stop.wait(0.2):
            for r in readers:
                if not r.closed:
                    r.close(kill=True)
            return

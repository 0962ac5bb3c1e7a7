"""In-progress transactions streamed by pgoutput (proto 2, `streaming 'on'`), held until they commit.

PostgreSQL streams a transaction that outgrows `logical_decoding_work_mem` in chunks
(Stream Start … Stream Stop) before it commits, interleaved with other transactions.
Debezium's events and offsets are per committed transaction, so the chunks are kept,
raw and in order, per top-level xid: emitted at Stream Commit, dropped at Stream Abort
(only the aborted subtransaction's changes when a savepoint is rolled back). Past
`spill_bytes` held in memory, the largest transaction moves to a temporary file.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator
from typing import IO

_U32 = struct.Struct(">I")
_ENTRY = struct.Struct(">QI")  # lsn, payload length

BUFFERED_KINDS = frozenset(b"RYIUDTM")  # the messages of a streamed transaction; each has its xid at byte 1


def sub_xid(payload: bytes) -> int:
    """The (sub)transaction xid a streamed message carries right after its type byte."""
    return _U32.unpack_from(payload, 1)[0]


class _Transaction:
    __slots__ = ("aborted", "file", "items", "size")

    def __init__(self) -> None:
        self.items: list[tuple[int, bytes]] = []
        self.size = 0  # bytes in `items`
        self.file: IO[bytes] | None = None
        self.aborted: set[int] = set()  # rolled-back subtransactions, skipped when replayed

    def spill(self, directory: str | None) -> None:
        if self.file is None:
            # Lives until the transaction commits or aborts: closed by close(), not a with-block.
            self.file = tempfile.TemporaryFile(prefix="cdc-pg-stream-", dir=directory)  # noqa: SIM115
        write = self.file.write
        for lsn, payload in self.items:
            write(_ENTRY.pack(lsn, len(payload)))
            write(payload)
        self.items, self.size = [], 0

    def replay(self) -> Iterator[tuple[int, bytes]]:
        if self.file is not None:
            self.file.flush()
            self.file.seek(0)
            read = self.file.read
            while header := read(_ENTRY.size):
                lsn, n = _ENTRY.unpack(header)
                payload = read(n)
                if sub_xid(payload) not in self.aborted:
                    yield lsn, payload
        for lsn, payload in self.items:
            if sub_xid(payload) not in self.aborted:
                yield lsn, payload

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


class StreamedTransactions:
    """Raw streamed messages per top-level xid, in arrival order, bounded in memory."""

    def __init__(self, spill_bytes: int, spill_dir: str | None = None) -> None:
        self.spill_bytes = spill_bytes
        self.spill_dir = spill_dir
        self._open: dict[int, _Transaction] = {}
        self._memory = 0
        self.spilled = 0  # transactions moved to disk (a metric for tests and logs)

    def __len__(self) -> int:
        return len(self._open)

    def add(self, xid: int, lsn: int, payload: bytes) -> None:
        tx = self._open.get(xid)
        if tx is None:
            tx = self._open[xid] = _Transaction()
        tx.items.append((lsn, payload))
        tx.size += len(payload)
        self._memory += len(payload)
        if self._memory > self.spill_bytes:
            largest = max(self._open.values(), key=lambda t: t.size)
            self._memory -= largest.size
            if largest.file is None:
                self.spilled += 1
            largest.spill(self.spill_dir)

    def abort(self, xid: int, sub: int) -> None:
        """Stream Abort: the whole transaction (sub == xid) or one of its subtransactions."""
        tx = self._open.get(xid)
        if tx is None:
            return
        if sub == xid:
            self._drop(xid)
            return
        tx.aborted.add(sub)
        kept = [item for item in tx.items if sub_xid(item[1]) != sub]
        freed = tx.size - sum(len(p) for _, p in kept)
        tx.items, tx.size = kept, tx.size - freed
        self._memory -= freed

    def commit(self, xid: int) -> Iterator[tuple[int, bytes]]:
        """Stream Commit: the transaction's messages in order (then it is forgotten)."""
        tx = self._open.get(xid)
        if tx is None:
            return
        try:
            yield from tx.replay()
        finally:
            self._drop(xid)

    def _drop(self, xid: int) -> None:
        tx = self._open.pop(xid, None)
        if tx is not None:
            self._memory -= tx.size
            tx.close()

    def close(self) -> None:
        for xid in list(self._open):
            self._drop(xid)

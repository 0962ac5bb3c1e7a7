"""`__seq`: ARCHITECTURE.md's comparable per-source sequence as a fixed-width sortable binary.

32 bytes = four big-endian unsigned 64-bit fields, so byte order is numeric order in
Spark (binary sorts unsigned), PostgreSQL (bytea), Delta/DataFusion and Arrow alike:

- MySQL/MariaDB: (epoch << 40 | binlog file number, pos, event, row);
- PostgreSQL: (commit LSN, LSN, 0, 0); an event without a commit LSN (a snapshot read, whose
  `lsn` is the slot's consistent point P) ranks (P, 0, 0, 0): below every change of a transaction
  whose commit record starts at P. Such a transaction is not in the snapshot (the exported snapshot
  holds the commits before P) although its changes' own LSNs are below P, so ranking the read at
  (P, P) let the stale read win over them;
- a snapshot read (`op=r`) carries its snapshot position, so it ranks there.

MySQL positions are comparable only within one server's binlog lineage: after a failover or
a RESET MASTER they restart lower. The connector then bumps an epoch (cdc_mysql/lineage.py)
and writes it in `source.sequence` as `["<epoch>"]` (null at epoch 0, as Debezium writes
MySQL events). This module is the sink's owner of that format: the epoch sits above a
40-bit file number, so every event of a later lineage ranks above every earlier one.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Mapping
from typing import Any

WIDTH = 32
_PACK = struct.Struct(">QQQQ")
_FILE_NO = re.compile(r"(\d+)$")
_EPOCH = re.compile(r'^\["(?P<epoch>\d{1,8})"\]$')
EPOCH_PATTERN = _EPOCH.pattern
EPOCH_SHIFT = 40
MAX_FILE_NO = (1 << EPOCH_SHIFT) - 1
MAX_EPOCH = (1 << (64 - EPOCH_SHIFT)) - 1
ZERO = bytes(WIDTH)


class SequenceError(ValueError):
    """The event's `source` block has no usable position."""


def pack(a: int, b: int = 0, c: int = 0, d: int = 0) -> bytes:
    return _PACK.pack(a, b, c, d)


def unpack(seq: bytes) -> tuple[int, int, int, int]:
    """The four fields back, for people reading a table or an error."""
    return _PACK.unpack(seq)


def mysql(file: str, pos: int, event: int = 0, row: int = 0, epoch: int = 0) -> bytes:
    m = _FILE_NO.search(file or "")
    if m is None:
        raise SequenceError(f"binlog file name {file!r} has no numeric suffix")
    file_no = int(m.group(1))
    if file_no > MAX_FILE_NO or not 0 <= epoch <= MAX_EPOCH:
        raise SequenceError(f"binlog file {file!r} (epoch {epoch}) is beyond the sequence's range")
    return pack(epoch << EPOCH_SHIFT | file_no, int(pos), int(event or 0), int(row or 0))


def mysql_epoch(text: Any) -> int:
    """The binlog lineage epoch of a MySQL event's `source.sequence` (`["<epoch>"]`, or null: 0)."""
    if text is None or text == "":
        return 0
    m = _EPOCH.match(text) if isinstance(text, str) else None
    if m is None:
        raise SequenceError(
            f"the MySQL source block's 'sequence' {text!r} is not a binlog lineage epoch ['<n>']; "
            "events must come from a cdc/Debezium connector"
        )
    return int(m.group(1))


def postgres(commit_lsn: int | None, lsn: int) -> bytes:
    """(commit LSN, LSN); without a commit LSN (a snapshot read at `lsn`): (lsn, 0), see the module docstring."""
    if commit_lsn is None:
        return pack(int(lsn))
    return pack(int(commit_lsn), int(lsn))


def _lsn(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, str) and "/" in v:  # textual pg_lsn "16/B374D848"
        hi, lo = v.split("/")
        return (int(hi, 16) << 32) | int(lo, 16)
    return int(v)


def from_source(source: Mapping[str, Any] | None) -> bytes:
    """The sequence of one event from its Debezium `source` block."""
    if not isinstance(source, Mapping):
        raise SequenceError("the event has no 'source' block, so it cannot be ordered")
    if source.get("file") is not None and source.get("pos") is not None:
        return mysql(
            str(source["file"]),
            int(source["pos"]),
            int(source.get("event") or 0),
            int(source.get("row") or 0),
            mysql_epoch(source.get("sequence")),
        )
    if source.get("lsn") is not None or source.get("sequence") is not None:
        lsn = _lsn(source.get("lsn"))
        commit = _lsn(source.get("lsn_commit"))
        seq_text = source.get("sequence")
        if seq_text:
            pair = json.loads(seq_text) if isinstance(seq_text, str) else seq_text
            if isinstance(pair, list) and len(pair) == 2:
                commit = _lsn(pair[0]) if pair[0] is not None else commit
                lsn = _lsn(pair[1]) if pair[1] is not None else lsn
        if lsn is None:
            raise SequenceError("the PostgreSQL source block has no 'lsn'")
        return postgres(commit, lsn)
    raise SequenceError(
        "the source block carries neither a MySQL position (file, pos) nor a PostgreSQL lsn; "
        "events must come from a cdc/Debezium connector"
    )

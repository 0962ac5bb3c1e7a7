"""PostgresOffsetContext: the stored position, in Debezium's offset keys.

`lsn_commit` is the commit LSN of the transaction of the last emitted event and `lsn` /
`lsn_proc` that event's own LSN. A restart asks the slot for `lsn_commit`, so the
transaction is sent again, and skips its events up to `lsn`: no loss, no duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class PostgresOffsetContext:
    lsn: int | None = None
    lsn_commit: int | None = None
    tx_id: int | None = None
    ts_usec: int | None = None
    snapshot: bool = False
    snapshot_completed: bool = False
    last_snapshot_record: bool = False

    def to_offset(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.snapshot:
            out["snapshot"] = True
            out["last_snapshot_record"] = self.last_snapshot_record
        if self.snapshot_completed:
            out["snapshot_completed"] = True
        if self.lsn is not None:
            out["lsn"] = self.lsn
            out["lsn_proc"] = self.lsn
        if self.lsn_commit is not None:
            out["lsn_commit"] = self.lsn_commit
        if self.tx_id is not None:
            out["txId"] = self.tx_id
        if self.ts_usec is not None:
            out["ts_usec"] = self.ts_usec
        return out

    @classmethod
    def from_offset(cls, offset: dict[str, Any] | None) -> PostgresOffsetContext | None:
        if not offset:
            return None
        snapshot = bool(offset.get("snapshot"))
        return cls(
            lsn=offset.get("lsn_proc", offset.get("lsn")),
            lsn_commit=offset.get("lsn_commit"),
            tx_id=offset.get("txId"),
            ts_usec=offset.get("ts_usec"),
            snapshot=snapshot,
            snapshot_completed=bool(offset.get("snapshot_completed"))
            or (not snapshot and offset.get("lsn") is not None),
            last_snapshot_record=bool(offset.get("last_snapshot_record")),
        )

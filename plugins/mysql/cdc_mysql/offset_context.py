"""MySqlOffsetContext: the resumable position, written exactly as Debezium's binlog offsets.

Keys: `file`, `pos` (the start of the open transaction, or just after the last commit),
`gtids` (the set completed before `pos`), `event` (row events of the open transaction
already emitted), `row` (rows of the next event already emitted), `ts_sec`, `server_id`,
`snapshot`; and, beyond Debezium's keys, `epoch` and `server_identity` (lineage.py: which
server's binlog the positions belong to; `epoch` only once it is above 0). A resume never
starts mid-transaction: python-mysql-replication would silently skip rows whose TABLE_MAP it
has not seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc.api import ConnectException
from cdc_debezium.transaction import OFFSET_COLLECTION_ORDER_PREFIX, OFFSET_TRANSACTION_ID

SNAPSHOT_INITIAL = "INITIAL"


@dataclass
class MySqlOffsetContext:
    file: str
    pos: int
    gtids: str | None = None
    event: int = 0
    row: int = 0
    ts_sec: int = 0
    server_id: int = 0
    snapshot: bool = False
    epoch: int = 0
    server_identity: str | None = None
    # The open transaction's metadata keys of a stored offset (provide.transaction.metadata), read on resume.
    transaction: dict[str, Any] = field(default_factory=dict)
    # A running incremental snapshot's keys (cdc_debezium.signals.incremental); empty otherwise.
    incremental: dict[str, Any] = field(default_factory=dict)

    def offset(self, event: int | None = None, row: int | None = None) -> dict[str, Any]:
        """The offset dict; `event`/`row` override the skip counts for one record."""
        e = self.event if event is None else event
        r = self.row if row is None else row
        out: dict[str, Any] = {"file": self.file, "pos": self.pos}
        if self.gtids:
            out["gtids"] = self.gtids
        if e:
            out["event"] = e
        if r:
            out["row"] = r
        out["ts_sec"] = self.ts_sec
        if self.server_id:
            out["server_id"] = self.server_id
        if self.snapshot:
            out["snapshot"] = SNAPSHOT_INITIAL
        if self.epoch:
            out["epoch"] = self.epoch
        if self.server_identity:
            out["server_identity"] = self.server_identity
        if self.incremental:
            out.update(self.incremental)
        return out

    def completed(self) -> MySqlOffsetContext:
        """The same position and lineage with no snapshot flag and no open transaction."""
        return MySqlOffsetContext(
            self.file, self.pos, self.gtids, ts_sec=self.ts_sec, epoch=self.epoch, server_identity=self.server_identity
        )

    @classmethod
    def load(cls, stored: dict[str, Any]) -> MySqlOffsetContext:
        """Reads what Debezium (or this connector) stored; `snapshot: true` is the legacy form."""
        try:
            snap = stored.get("snapshot")
            return cls(
                file=str(stored["file"]),
                pos=int(stored["pos"]),
                gtids=stored.get("gtids") or None,
                event=int(stored.get("event", 0) or 0),
                row=int(stored.get("row", 0) or 0),
                ts_sec=int(stored.get("ts_sec", 0) or 0),
                server_id=int(stored.get("server_id", 0) or 0),
                epoch=int(stored.get("epoch", 0) or 0),
                server_identity=str(stored["server_identity"]) if stored.get("server_identity") else None,
                snapshot=snap is True or (isinstance(snap, str) and snap.lower() not in ("false", "")),
                transaction={k: v for k, v in stored.items() if _is_transaction_key(k)},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            # A user-edited or foreign offset: the task must fail with advice, not a trace.
            raise ConnectException(
                f"The stored offset {stored!r} has no valid 'file'/'pos' (or a malformed event/row/ts_sec/"
                "server_id/epoch); delete the connector's offsets to re-snapshot, or fix them with the offsets REST API"
            ) from e


def _is_transaction_key(key: str) -> bool:
    return key == OFFSET_TRANSACTION_ID or key.startswith(OFFSET_COLLECTION_ORDER_PREFIX)

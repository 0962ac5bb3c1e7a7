"""MySqlOffsetContext: the resumable position, written exactly as Debezium's binlog offsets.

Keys: `file`, `pos` (the start of the open transaction, or just after the last commit),
`gtids` (the set completed before `pos`), `event` (row events of the open transaction
already emitted), `row` (rows of the next event already emitted), `ts_sec`, `server_id`,
`snapshot`; and, beyond Debezium's keys, `epoch` and `server_identity` (lineage.py: which
server's binlog the positions belong to; `epoch` only once it is above 0). A resume never
starts mid-transaction: python-mysql-replication would silently skip rows whose TABLE_MAP it
has not seen.

Debezium's `server_id` is the id of the server that wrote the event, not the connector's. The id
the connector's own binlog reader registers with is cdc's `reader_server_id`, which the task
writes into every record's offset (server_ids.py); this class neither reads nor writes it, so an
offset without it loads as before.

While an initial snapshot runs (`snapshot` set), three more keys say how far it got, so that a
restart resumes it instead of starting over (snapshot.py, "Resuming"): `snapshot_tables_done`
(the ids `db.table` of the tables whose every row is emitted before this record; its presence
marks a resumable offset), `snapshot_table` (the table being read) and `snapshot_last_key`
(the primary key of the last row emitted at a chunk boundary of `snapshot_table`, as the
JSON text of cdc_debezium.signals.keys). `file`/`pos`/`gtids` stay the snapshot's first
position, where streaming starts, as Debezium writes them. An offset without
`snapshot_tables_done` (Debezium's, or an older cdc's) is snapshotted again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc.api import ConnectException
from cdc_debezium.transaction import OFFSET_COLLECTION_ORDER_PREFIX, OFFSET_TRANSACTION_ID

SNAPSHOT_INITIAL = "INITIAL"
SNAPSHOT_TABLES_DONE = "snapshot_tables_done"
SNAPSHOT_TABLE = "snapshot_table"
SNAPSHOT_LAST_KEY = "snapshot_last_key"


LINEAGE_BREAK = "lineage_break"  # cdc's key: the stream stopped on a lineage break here


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
    # A resumable initial snapshot's progress (written only with `snapshot`); tables_done None: no progress keys.
    tables_done: tuple[str, ...] | None = None
    snapshot_table: str | None = None
    snapshot_last_key: str | None = None
    # Set by the stream when it stops on a binlog lineage break (lineage_watch.py): the positions
    # read just before it may belong to the new history, so no restart may resume from them.
    lineage_break: str | None = None

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
            if self.tables_done is not None:
                out[SNAPSHOT_TABLES_DONE] = list(self.tables_done)
                if self.snapshot_table is not None:
                    out[SNAPSHOT_TABLE] = self.snapshot_table
                    if self.snapshot_last_key is not None:
                        out[SNAPSHOT_LAST_KEY] = self.snapshot_last_key
        if self.epoch:
            out["epoch"] = self.epoch
        if self.server_identity:
            out["server_identity"] = self.server_identity
        if self.incremental:
            out.update(self.incremental)
        if self.lineage_break:
            out[LINEAGE_BREAK] = self.lineage_break
        return out

    def progress(self, done: tuple[str, ...], table: str | None = None, last_key: str | None = None) -> dict[str, Any]:
        """The snapshot offset saying that the tables `done` and the rows of `table` up to `last_key` are out."""
        out = self.offset()
        out[SNAPSHOT_TABLES_DONE] = list(done)
        out.pop(SNAPSHOT_TABLE, None)
        out.pop(SNAPSHOT_LAST_KEY, None)
        if table is not None:
            out[SNAPSHOT_TABLE] = table
            if last_key is not None:
                out[SNAPSHOT_LAST_KEY] = last_key
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
            snapshot = snap is True or (isinstance(snap, str) and snap.lower() not in ("false", ""))
            done = stored.get(SNAPSHOT_TABLES_DONE) if snapshot else None
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
                snapshot=snapshot,
                transaction={k: v for k, v in stored.items() if _is_transaction_key(k)},
                tables_done=tuple(str(t) for t in done) if isinstance(done, list) else None,
                snapshot_table=str(stored[SNAPSHOT_TABLE]) if done is not None and stored.get(SNAPSHOT_TABLE) else None,
                snapshot_last_key=str(stored[SNAPSHOT_LAST_KEY])
                if done is not None and stored.get(SNAPSHOT_LAST_KEY)
                else None,
                lineage_break=str(stored[LINEAGE_BREAK]) if stored.get(LINEAGE_BREAK) else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            # A user-edited or foreign offset: the task must fail with advice, not a trace.
            raise ConnectException(
                f"The stored offset {stored!r} has no valid 'file'/'pos' (or a malformed event/row/ts_sec/"
                "server_id/epoch); delete the connector's offsets to re-snapshot, or fix them with the offsets REST API"
            ) from e


def _is_transaction_key(key: str) -> bool:
    return key == OFFSET_TRANSACTION_ID or key.startswith(OFFSET_COLLECTION_ORDER_PREFIX)

"""PostgresOffsetContext: the stored position, in Debezium's offset keys.

`lsn_commit` is the commit LSN of the transaction of the last emitted event and `lsn` /
`lsn_proc` that event's own LSN. A restart asks the slot for `lsn_commit`, so the
transaction is sent again, and skips its events up to `lsn`: no loss, no duplicate.

While an initial snapshot runs (`snapshot` set), three more keys say how far it got, so that a
restart resumes it instead of starting over (snapshot.py, "Resuming"), with the names the MySQL
connector uses: `snapshot_tables_done` (the ids `schema.table` of the tables whose every row is
emitted before this record; its presence marks a resumable offset), `snapshot_table` (the table
being read) and `snapshot_last_key` (the primary key of the last row emitted at a chunk boundary
of `snapshot_table`, the server's text of each column as JSON, cdc_debezium.signals.keys).
`lsn` stays the slot's consistent point, where streaming starts, as Debezium writes it. An
offset without `snapshot_tables_done` (Debezium's, or an older cdc's) is snapshotted again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SNAPSHOT_TABLES_DONE = "snapshot_tables_done"
SNAPSHOT_TABLE = "snapshot_table"
SNAPSHOT_LAST_KEY = "snapshot_last_key"


@dataclass
class PostgresOffsetContext:
    lsn: int | None = None
    lsn_commit: int | None = None
    tx_id: int | None = None
    ts_usec: int | None = None
    snapshot: bool = False
    snapshot_completed: bool = False
    last_snapshot_record: bool = False
    # A resumable initial snapshot's progress (read only with `snapshot`); tables_done None: no progress keys.
    tables_done: tuple[str, ...] | None = None
    snapshot_table: str | None = None
    snapshot_last_key: str | None = None

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
        if self.snapshot and self.tables_done is not None:
            out.update(progress(self.tables_done, self.snapshot_table, self.snapshot_last_key))
        return out

    @classmethod
    def from_offset(cls, offset: dict[str, Any] | None) -> PostgresOffsetContext | None:
        if not offset:
            return None
        snapshot = bool(offset.get("snapshot"))
        done = offset.get(SNAPSHOT_TABLES_DONE) if snapshot else None
        resumable = isinstance(done, list)
        return cls(
            lsn=offset.get("lsn_proc", offset.get("lsn")),
            lsn_commit=offset.get("lsn_commit"),
            tx_id=offset.get("txId"),
            ts_usec=offset.get("ts_usec"),
            snapshot=snapshot,
            snapshot_completed=bool(offset.get("snapshot_completed"))
            or (not snapshot and offset.get("lsn") is not None),
            last_snapshot_record=bool(offset.get("last_snapshot_record")),
            tables_done=tuple(str(t) for t in done) if resumable else None,
            snapshot_table=str(offset[SNAPSHOT_TABLE]) if resumable and offset.get(SNAPSHOT_TABLE) else None,
            snapshot_last_key=str(offset[SNAPSHOT_LAST_KEY])
            if resumable and offset.get(SNAPSHOT_TABLE) and offset.get(SNAPSHOT_LAST_KEY)
            else None,
        )


def progress(done: tuple[str, ...], table: str | None = None, last_key: str | None = None) -> dict[str, Any]:
    """The progress keys saying that the tables `done` and the rows of `table` up to `last_key` are out."""
    out: dict[str, Any] = {SNAPSHOT_TABLES_DONE: list(done)}
    if table is not None:
        out[SNAPSHOT_TABLE] = table
        if last_key is not None:
            out[SNAPSHOT_LAST_KEY] = last_key
    return out

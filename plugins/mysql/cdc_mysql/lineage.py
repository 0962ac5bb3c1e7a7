"""BinlogLineage: which server's binlog the stored positions belong to, and the epoch that orders lineages.

Sinks order MySQL events by binlog position (ARCHITECTURE.md, Ordering). Positions are comparable
only within one server's binlog history: after a GTID failover to another server, or a
`RESET MASTER`, they restart lower, and a sink would take every new change for an older one.
The connector therefore keeps an *epoch* in its offset (`epoch`, with the identity of the
server the positions belong to in `server_identity`) and bumps it whenever the lineage may have
changed:

- the connected server is not the one the stored offset was read from (MariaDB `@@server_id`,
  MySQL `@@server_uuid`), or
- the stored file/pos is not valid on this server, so the stream resumes by GTID, or
- the server's current binlog position is lower than the stored one (RESET MASTER, a restore).

A bump is always safe: the events that follow start at the stored offset, so ranking all of
them above everything emitted before repeats, in order, what a replay would repeat anyway.

Events carry the epoch in Debezium's optional `source.sequence` field as the JSON text
`["<epoch>"]` (Debezium's convention: a JSON array of strings). At epoch 0, the field stays
null, exactly as Debezium writes MySQL events. The Spark sink reads it in
`cdc_spark.decode.sequence` (that module owns the sink's side of this format).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cdc_mysql.binlog_status import current_binlog_position

log = logging.getLogger(__name__)

_FILE_NO = re.compile(r"(\d+)$")
# The sink packs the epoch above a 40-bit binlog file number (cdc_spark/decode/sequence.py).
MAX_EPOCH = (1 << 24) - 1


def server_identity(cursor: Any) -> str:
    """The connected server's identity: `server_id=<n>` on MariaDB (it has no server_uuid;
    server_id must differ between replicating servers), `uuid=<uuid>` on MySQL. `cursor`: any
    DB-API cursor (plain or dict rows)."""
    cursor.execute("SELECT VERSION()")
    if "mariadb" in str(_scalar(cursor.fetchone())).lower():
        cursor.execute("SELECT @@server_id")
        return f"server_id={_scalar(cursor.fetchone())}"
    cursor.execute("SELECT @@server_uuid")
    return f"uuid={_scalar(cursor.fetchone())}"


def _scalar(row: Any) -> Any:
    if isinstance(row, dict):
        return next(iter(row.values()))
    return row[0] if row else None


def position(file: str, pos: int) -> tuple[int, int]:
    """(binlog file number, pos), comparable within one lineage."""
    m = _FILE_NO.search(file or "")
    return (int(m.group(1)) if m else 0, int(pos))


def sequence_text(epoch: int) -> str | None:
    """The `source.sequence` value of events of this epoch (null at 0, as Debezium writes)."""
    return json.dumps([str(epoch)]) if epoch else None


@dataclass(frozen=True)
class BinlogLineage:
    epoch: int
    server_identity: str | None

    @classmethod
    def decide(
        cls,
        stored_epoch: int,
        stored_identity: str | None,
        stored_position: tuple[int, int] | None,
        identity: str,
        current_position: tuple[int, int],
        resumes_by_gtid: bool,
        quiet: bool = False,
        lineage_break: str | None = None,
    ) -> BinlogLineage:
        """The lineage of the positions this task will emit, given the stored offset's.

        `stored_position` None: no stored offset (a first start), epoch 0. `quiet`: a prediction
        (CaughtUpTarget), not the connector's decision: no warning. `lineage_break`: the stored
        offset is where a stream stopped on a break (offset_context.LINEAGE_BREAK): always a new epoch.
        """
        if stored_position is None:
            return cls(0, identity)
        reasons = []
        if stored_identity is not None and stored_identity != identity:
            reasons.append(f"the server changed ({stored_identity} -> {identity})")
        if resumes_by_gtid:
            reasons.append("the stored binlog position is not valid on this server (resuming by GTID)")
        if lineage_break:
            reasons.append(f"the stream stopped on a lineage break ({lineage_break})")
        if current_position < stored_position:
            reasons.append(
                f"the server's binlog position {current_position} is below the stored one {stored_position} "
                "(RESET MASTER, a restore, or another server)"
            )
        if not reasons:
            return cls(stored_epoch, identity)
        epoch = stored_epoch + 1
        if epoch > MAX_EPOCH:
            raise ValueError(f"binlog lineage epoch {epoch} exceeds {MAX_EPOCH}")
        if quiet:
            return cls(epoch, identity)
        log.warning(
            "The binlog lineage changed: %s. Positions restart on this lineage, so events now carry epoch %d "
            "(source.sequence %s) and sinks rank them above every earlier event",
            "; ".join(reasons), epoch, sequence_text(epoch),
        )  # fmt: skip
        return cls(epoch, identity)


@dataclass(frozen=True)
class CaughtUpTarget:
    """Where `cdc run --until-caught-up` stops: the server's binlog position at start, on that
    server's lineage. A stored offset has reached it when it is not a snapshot's, belongs to the
    same server and to an epoch no lower than the one the connector takes on this server, and
    its position is at or past the target. Positions alone would call an offset of another
    lineage (before a failover or RESET MASTER) caught up at once."""

    identity: str
    file: str
    pos: int
    min_epoch: int = 0

    def __str__(self) -> str:
        epoch = f", epoch {self.min_epoch}" if self.min_epoch else ""
        return f"{self.file}:{self.pos} on {self.identity}{epoch}"

    def after(self, stored: Mapping[str, Any] | None) -> CaughtUpTarget:
        """This target with the epoch the connector takes, given the offset stored at start."""
        if not stored or "file" not in stored:
            return self
        lineage = BinlogLineage.decide(
            int(stored.get("epoch") or 0),
            stored.get("server_identity"),
            position(str(stored["file"]), int(stored.get("pos") or 0)),
            self.identity,
            position(self.file, self.pos),
            False,
            quiet=True,
        )
        return replace(self, min_epoch=lineage.epoch)

    def reached_by(self, offset: Mapping[str, Any]) -> bool:
        if offset.get("snapshot") not in (None, False, "false") or "file" not in offset:
            return False
        if int(offset.get("epoch") or 0) < self.min_epoch:
            return False
        stored_identity = offset.get("server_identity")
        if stored_identity is not None and stored_identity != self.identity:
            return False
        return position(str(offset["file"]), int(offset.get("pos") or 0)) >= position(self.file, self.pos)


def read_target(cursor: Any) -> CaughtUpTarget | None:
    """The server's identity and current binlog position (None when the binlog is off)."""
    at = current_binlog_position(cursor)
    if at is None:
        return None
    return CaughtUpTarget(server_identity(cursor), at[0], at[1])

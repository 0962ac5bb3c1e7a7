"""BinlogLineage: which server's binlog the stored positions belong to, and the epoch that orders lineages.

Sinks order MySQL events by binlog position (DESIGN.md, Ordering). Positions are comparable
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
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

_FILE_NO = re.compile(r"(\d+)$")
# The sink packs the epoch above a 40-bit binlog file number (cdc_spark/decode/sequence.py).
MAX_EPOCH = (1 << 24) - 1


def server_identity(connection: Any, is_mariadb: bool) -> str:
    """The connected server's identity: `server_id=<n>` on MariaDB (it has no server_uuid;
    server_id must differ between replicating servers), `uuid=<uuid>` on MySQL."""
    if is_mariadb:
        return f"server_id={connection.variable('server_id')}"
    return f"uuid={connection.variable('server_uuid')}"


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
    ) -> BinlogLineage:
        """The lineage of the positions this task will emit, given the stored offset's.

        `stored_position` None: no stored offset (a first start), epoch 0.
        """
        if stored_position is None:
            return cls(0, identity)
        reasons = []
        if stored_identity is not None and stored_identity != identity:
            reasons.append(f"the server changed ({stored_identity} -> {identity})")
        if resumes_by_gtid:
            reasons.append("the stored binlog position is not valid on this server (resuming by GTID)")
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
        log.warning(
            "The binlog lineage changed: %s. Positions restart on this lineage, so events now carry epoch %d "
            "(source.sequence %s) and sinks rank them above every earlier event",
            "; ".join(reasons), epoch, sequence_text(epoch),
        )  # fmt: skip
        return cls(epoch, identity)

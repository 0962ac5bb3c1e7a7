"""LineageWatch: notices, while streaming, that the binlog being read no longer continues what was read.

At a restart the connector compares the stored offset with the server (lineage.BinlogLineage).
A `RESET MASTER`, a restore from a backup or a failover to a server with a shorter binlog can
also happen while the reader streams, and then the reader's dump goes on from its old position
in a new history: the changes written below that position are never sent, and the ones above it
arrive as if nothing happened (a re-used GTID, the old epoch). This class turns that into a
stop with one line saying what happened and what to do, when it happens:

- a GTID the stream sends again, or lower than one already read in its MariaDB domain (the
  stream asks the GTID set it keeps, `covers(gtid)`, on every GTID event, and raises `reused(…)`:
  a comparison, no query);
- every `interval_s`, at a commit or a heartbeat (`check(…)`): the server is another one
  (lineage.server_identity), its binlog position is below the position already read, or its
  GTID state no longer contains the GTIDs already read.

Any of these means changes may have been skipped, so the task stops before it emits anything of
the new history. A restart then decides as at every start (lineage.py): it resumes by GTID on the
new lineage with a higher epoch when the server still has what follows the offset, or refuses
with the advice to take a new snapshot (snapshot.mode=when_needed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cdc.api import ConnectException
from cdc_mysql import gtid as gtids
from cdc_mysql.lineage import position


class LineageBreak(ConnectException):
    """The binlog lineage changed under a streaming reader (the message says how and what to do)."""


@dataclass(frozen=True)
class ServerState:
    """What the check reads from the server: its identity, binlog position and GTID state."""

    identity: str
    file: str
    pos: int
    executed_gtids: str | None


ADVICE = (
    "changes written since may not have been read, so the task stops here rather than go on without "
    "them. Restart it: at start the connector resumes on the new binlog by GTID when the server still "
    "has what follows the stored offset (its events then rank above all earlier ones), or says it "
    "cannot; then take a new snapshot (snapshot.mode=when_needed)"
)


class LineageWatch:
    def __init__(
        self,
        is_mariadb: bool,
        identity: str | None,
        read_state: Callable[[], ServerState],
        interval_s: float = 2.0,
    ) -> None:
        """`identity`: the server the offset's positions belong to (None: unknown, not compared).
        `read_state`: queries the server (on the connector's own connection, not the dump's)."""
        self.is_mariadb = is_mariadb
        self.identity = identity
        self._read_state = read_state
        self._interval = interval_s
        self._next_check = time.monotonic() + interval_s
        # Whether the server's GTID state held what was read at the first check of this stream: only
        # a change from held to not held is this stream's doing (the start already judged the offset).
        self._held: bool | None = None

    def reused(self, gtid: str, read: gtids.MariaDbGtidSet | gtids.MySqlGtidSet, file: str, pos: int) -> LineageBreak:
        """The error for a GTID event at `file:pos` that the GTIDs already read cover (`read.covers(gtid)`,
        which the stream checks on every GTID event: a comparison, no query)."""
        return LineageBreak(
            f"The binlog sent GTID {gtid} at {file}:{pos}, but the GTIDs already read ({read}) contain it: "
            "the binlog was reset (RESET MASTER), restored from a backup, or this is another server with "
            f"another history (or, on MariaDB with gtid_strict_mode=OFF, a domain written out of order); {ADVICE}"
        )

    def due(self) -> bool:
        return time.monotonic() >= self._next_check

    def check(self, file: str, pos: int, read: str | None) -> None:
        """Compare the server with what this stream read up to `file:pos` (GTIDs `read`); at most
        every interval_s. `file:pos` must come from this dump's own events (its first is a rotate to
        where it starts), never from the stored offset, which may name the old lineage."""
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + self._interval
        state = self._read_state()
        reasons = []
        if self.identity is not None and state.identity != self.identity:
            reasons.append(f"the server is now another one ({self.identity} -> {state.identity})")
        if position(state.file, state.pos) < position(file, pos):
            reasons.append(
                f"the server's binlog ends at {state.file}:{state.pos}, below the position already read {file}:{pos}"
            )
        held = gtids.contains(state.executed_gtids, read, self.is_mariadb) if read else True
        if self._held and not held:
            reasons.append(f"the server's GTID state ({state.executed_gtids}) no longer holds the GTIDs read ({read})")
        if self._held is None:
            self._held = held
        if reasons:
            raise LineageBreak(
                f"The binlog lineage changed while streaming: {'; '.join(reasons)} (RESET MASTER, a restore from "
                f"a backup, or a failover to a server with another history); {ADVICE}"
            )

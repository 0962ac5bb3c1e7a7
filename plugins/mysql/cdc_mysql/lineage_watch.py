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
- a MariaDB binlog file that starts after transactions the stream never sent: its Gtid_list
  event names the last GTID of each domain written before it, and one above the GTIDs read in
  that domain was written where the reader had already read past (a `RESET MASTER` whose new
  first file the dump skipped, then a rotation) (`listed(…)`: a comparison, no query);
- a resume inside a transaction (the offset's `event`/`row`) whose first transaction sent was
  written by another server than the one the offset names (`server_id`): after a failover the
  new server's next transaction after the same GTIDs is not the one partly read
  (`not_the_open_transaction(…)`);
- every `interval_s`, at a commit or a heartbeat (`check(…)`): the server is another one
  (lineage.server_identity), its binlog position is below the position already read, its
  GTID state no longer contains the GTIDs already read, or the transaction commit (Xid event)
  remembered at the previous check, or the first one read since, is no longer where it was read
  (`SHOW BINLOG EVENTS IN f FROM p`: another event, another xid, or nothing). The last one catches a new history that
  grew past the reader's position before the check, with GTIDs above those read: its events
  look valid one by one, but the old commit the reader saw at `f:p` is gone (InnoDB xids keep
  increasing across a RESET MASTER, so a new commit at the same offset has another xid).

Any of these means changes may have been skipped, so the task stops. What it read since the last
check may already be the new history's (a new binlog that grew past the reader's position is read
on with valid-looking GTIDs and positions), so the stop also stores the offset with
`lineage_break` (streaming.Stream._marked): a restart refuses to stream from it and, under
snapshot.mode=when_needed, takes a new snapshot on a new epoch (task._history_lost, lineage.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
    "them, and its stored offset keeps the break: restart it with snapshot.mode=when_needed to take a new "
    "snapshot (its events rank above all earlier ones; a Spark sink then also removes the rows it lacks)"
)


class LineageWatch:
    def __init__(
        self,
        is_mariadb: bool,
        identity: str | None,
        read_state: Callable[[], ServerState],
        interval_s: float = 2.0,
        read_event: Callable[[str, int], dict[str, Any] | None] | None = None,
    ) -> None:
        """`identity`: the server the offset's positions belong to (None: unknown, not compared).
        `read_state`: queries the server (on the connector's own connection, not the dump's).
        `read_event(file, pos)`: the server's binlog event at `file:pos` as SHOW BINLOG EVENTS gives
        it, {} when there is none, None when the server cannot say (no privilege, file purged)."""
        self.is_mariadb = is_mariadb
        self.identity = identity
        self._read_state = read_state
        self._read_event = read_event
        self._last_xid: tuple[str, int, int] | None = None  # the newest commit read
        self._checked_xid: tuple[str, int, int] | None = None  # the one to find at the next check
        # The first commit read since the previous check: a reset after it (and before the next check)
        # removes it, even when no commit was read before the previous check.
        self._first_since: tuple[str, int, int] | None = None
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

    def not_the_open_transaction(self, tx: str, origin: int, expected: int) -> LineageBreak:
        """The error for a resume inside a transaction of server `expected` whose first transaction
        sent (`tx`) server `origin` wrote: this binlog does not continue the transaction partly read."""
        return LineageBreak(
            f"The stored offset stopped inside a transaction written by server {expected}, but the binlog "
            f"resumed with transaction {tx} of server {origin}: this server does not have the transaction that "
            "was partly read (a failover to a server missing transactions, a restore, or RESET MASTER); "
            f"{ADVICE}"
        )

    def due(self) -> bool:
        return time.monotonic() >= self._next_check

    def committed(self, file: str, start_pos: int, xid: int) -> None:
        """The stream read a transaction's Xid event at `file:start_pos` (called on every one)."""
        self._last_xid = (file, start_pos, xid)
        if self._first_since is None:
            self._first_since = self._last_xid

    def listed(self, listed: list[str], read: gtids.MariaDbGtidSet, file: str) -> LineageBreak | None:
        """The error for a MariaDB Gtid_list event (the start of binlog file `file`) naming, in a
        domain the stream has read, a GTID above the last one read there (None: nothing skipped).

        The list is the last GTID of each (domain, server) logged before `file`; the stream reads every
        transaction of the files it passes, so a higher sequence number in a domain it reads is one it
        was never sent. Domains the stream has not read (filtered out, or never written since its
        offset) are not compared."""
        highest: dict[int, tuple[int, str]] = {}
        for gtid in listed:
            d, _, n = gtid.split("-")
            if int(n) > highest.get(int(d), (-1, ""))[0]:
                highest[int(d)] = (int(n), gtid)
        for d, (n, gtid) in sorted(highest.items()):
            last = read.by_domain.get(d)
            if last is not None and n > last[1]:
                return LineageBreak(
                    f"The binlog lineage changed while streaming: binlog file {file} starts after GTID {gtid}, "
                    f"but the stream read domain {d} only up to {d}-{last[0]}-{last[1]}: transactions were "
                    "written where the reader had already read past (RESET MASTER, a restore from a backup, or "
                    f"a failover to a server with another history); {ADVICE}"
                )
        return None

    def _commit_gone(self) -> str | None:
        """Why the commit remembered at the previous check, or the first one read since, is not in the
        server's binlog (None: both are, or the server cannot say); then remember the newest commit
        for the next check.

        Both are needed: a reset after the previous check removes the first commit read since (the one
        remembered may be None: no commit before that check), and a reset before it removes the one
        remembered (the first read since may then be the new history's, valid at its place)."""
        checked, self._checked_xid = self._checked_xid, self._last_xid
        first, self._first_since = self._first_since, None
        if self._read_event is None:
            return None
        for commit in dict.fromkeys(c for c in (checked, first) if c is not None):
            file, pos, xid = commit
            event = self._read_event(file, pos)
            if event is None:
                continue
            if event.get("Event_type") == "Xid" and f"xid={xid} " in f"{event.get('Info')} ":
                continue
            found = f"{event.get('Event_type')} ({event.get('Info')})" if event else "nothing"
            return f"the commit read at {file}:{pos} (xid {xid}) is not in the server's binlog any more ({found} there)"
        return None

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
        if gone := self._commit_gone():
            reasons.append(gone)
        if reasons:
            raise LineageBreak(
                f"The binlog lineage changed while streaming: {'; '.join(reasons)} (RESET MASTER, a restore from "
                f"a backup, or a failover to a server with another history); {ADVICE}"
            )

"""GTID sets for offsets: MySQL `uuid:1-5,uuid2:1-9` and MariaDB `domain-server-seq` lists.

python-mysql-replication does not keep the executed set; the connector builds it from the
GTID events it has fully processed.
"""

from __future__ import annotations

from collections.abc import Callable

from pymysqlreplication.gtid import Gtid, GtidSet


class MariaDbGtidSet:
    """The last GTID per replication domain, as in `@@gtid_binlog_pos` / `@@gtid_slave_pos`."""

    def __init__(self, text: str | None = None) -> None:
        self.by_domain: dict[int, tuple[int, int]] = {}
        for part in (text or "").split(","):
            part = part.strip()
            if part:
                d, s, n = (int(x) for x in part.split("-"))
                self.by_domain[d] = (s, n)

    def add(self, gtid: str) -> None:
        d, s, n = (int(x) for x in gtid.split("-"))
        self.by_domain[d] = (s, n)

    def covers(self, gtid: str) -> bool:
        """Is `gtid` at or below the last GTID of its domain (read already, or out of order)?"""
        domain, _, number = gtid.split("-")  # once per transaction: no generator, two ints
        last = self.by_domain.get(int(domain))
        return last is not None and int(number) <= last[1]

    def filtered(self, keep: Callable[[str], bool]) -> MariaDbGtidSet:
        out = MariaDbGtidSet()
        out.by_domain = {d: v for d, v in self.by_domain.items() if keep(str(d))}
        return out

    def __str__(self) -> str:
        return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(self.by_domain.items()))


class MySqlGtidSet:
    """A MySQL executed-GTID set (UUID intervals)."""

    def __init__(self, text: str | None = None) -> None:
        self._set = GtidSet(text.replace("\n", "") if text else None)

    def add(self, gtid: str) -> None:
        self._set = self._set + Gtid(gtid)

    def covers(self, gtid: str) -> bool:
        """Is `gtid` in this set (a transaction read already)?"""
        sid, _, number = gtid.rpartition(":")
        n = int(number)
        return any(g.sid == sid and any(start <= n < end for start, end in g.intervals) for g in self._set.gtids)

    def filtered(self, keep: Callable[[str], bool]) -> MySqlGtidSet:
        return MySqlGtidSet(",".join(str(g) for g in self._set.gtids if keep(g.sid)) or None)

    def __str__(self) -> str:
        return str(self._set)


def source_of(gtid: str, is_mariadb: bool) -> str:
    """What gtid.source.includes/excludes match: a MySQL GTID's server UUID, a MariaDB GTID's domain id."""
    return gtid.split("-", 1)[0] if is_mariadb else gtid.rsplit(":", 1)[0]


def parse(text: str | None, is_mariadb: bool) -> MariaDbGtidSet | MySqlGtidSet:
    return MariaDbGtidSet(text) if is_mariadb else MySqlGtidSet(text)


def contains(executed: str | None, stored: str | None, is_mariadb: bool) -> bool:
    """Does the server's GTID state `executed` hold every transaction of the offset's `stored` set?

    MariaDB (the last GTID per domain): each stored domain is there with a sequence number at
    least the stored one. MySQL: each stored interval lies within the executed intervals of its
    server UUID (python-mysql-replication's `GtidSet in GtidSet` compares whole entries for
    equality, not containment, so the intervals are checked here).
    """
    if not stored:
        return True
    if is_mariadb:
        have = MariaDbGtidSet(executed).by_domain
        return all(d in have and have[d][1] >= n for d, (_, n) in MariaDbGtidSet(stored).by_domain.items())
    mine = GtidSet(executed.replace("\n", "") if executed else None).gtids
    return all(any(g in m for m in mine) for g in GtidSet(stored.replace("\n", "")).gtids)


def mariadb_missing(binlog_state: str | None, slave_pos: str | None, stored: str | None) -> str | None:
    """The first GTID of the offset's `stored` MariaDB position that the server cannot resume after
    (None: it holds them all, or cannot say), judged as MariaDB judges a replica's GTID start
    (sql_repl.cc, check_slave_start_position).

    `binlog_state` is `@@gtid_binlog_state`: the last GTID of every (domain, server_id) pair the binlog
    ever logged. A stored `D-S-N` is held when S's last sequence number in D is N or above, or when
    `D-S-N` is the server's own replication position (`slave_pos`, `@@gtid_slave_pos`: a promoted replica
    without log_slave_updates). `contains` with `@@gtid_binlog_pos` (the last GTID per domain) is not
    enough: a promoted replica that never got `0-1-N` holds `0-2-M` with M > N once it has taken more
    writes than it missed, and the server then refuses the GTID start (error 1236).
    """
    if not stored or not binlog_state:
        return None
    last: dict[tuple[int, int], int] = {}
    for part in binlog_state.split(","):
        if part.strip():
            d, s, n = (int(x) for x in part.strip().split("-"))
            last[(d, s)] = max(n, last.get((d, s), -1))
    own = MariaDbGtidSet(slave_pos).by_domain
    for d, (s, n) in sorted(MariaDbGtidSet(stored).by_domain.items()):
        if last.get((d, s), -1) < n and own.get(d) != (s, n):
            return f"{d}-{s}-{n}"
    return None


def mariadb_open_transaction_missing(
    binlog_state: str | None, slave_pos: str | None, stored: str | None, origin: int
) -> str | None:
    """For an offset stored inside a transaction (`event`/`row` above 0) whose events server `origin`
    wrote: the GTID that transaction had, when the server holds none of its candidates (None: it may
    hold it, or cannot say).

    The offset's `gtids` are the transactions completed before it; the open one is the next in one of
    their domains, `D-origin-(N+1)` (MariaDB numbers a domain's transactions in sequence). Across a
    failover the new server resumes after `gtids` and would send its own next transaction instead,
    whose first events the resume would skip as already read.
    """
    if not stored or not origin or not binlog_state:
        return None
    candidates = [f"{d}-{origin}-{n + 1}" for d, (_, n) in sorted(MariaDbGtidSet(stored).by_domain.items())]
    if candidates and all(mariadb_missing(binlog_state, slave_pos, c) is not None for c in candidates):
        return candidates[0] if len(candidates) == 1 else " or ".join(candidates)
    return None

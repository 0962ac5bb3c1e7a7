"""SnapshotStart: the snapshot's transaction, and the binlog position it is exactly at.

The snapshot reads every table in one `START TRANSACTION WITH CONSISTENT SNAPSHOT`
(REPEATABLE READ) transaction, and streaming starts at the binlog position returned here. The
two must agree exactly: a commit that the snapshot does not see but that lies before the
position is lost for good; one it sees that lies after the position is streamed again (harmless:
full row images, applied in order, give the same rows).

How the position is made exact:

- MariaDB reports it. After START TRANSACTION WITH CONSISTENT SNAPSHOT, the session status
  `binlog_snapshot_file` / `binlog_snapshot_position` is the binlog position of the transaction's
  own snapshot (MariaDB takes both under its commit-order lock), and `BINLOG_GTID_POS(file, pos)`
  is its GTID position. Read on the snapshot's own connection, in every locking mode, with no lock.
- MySQL does not. It writes a transaction to the binlog (SHOW MASTER STATUS moves) before the
  storage engine commits it, so a position read just before or after the transaction starts can
  cover a commit the snapshot does not see. The position is exact only when no commit can be in
  flight around the transaction's start:
  - under the global read lock (`minimal`): FLUSH TABLES WITH READ LOCK waits for commits in
    flight and holds new ones;
  - `none`, with gtid_mode=ON: read the position, check that `@@global.gtid_owned` is empty (a
    transaction owns its GTID from its binlog write until after its engine commit), start the
    transaction, read the position again on the same connection. If it did not move, every
    transaction before it was committed before the snapshot began and none came after: the
    snapshot is exactly at that position. Tried a few times;
  - otherwise read locks on the captured tables (LOCK TABLES ... READ, on a second connection)
    while the transaction starts and the position and schema are read: a writer keeps its
    table's metadata lock until its commit is complete, so once the locks are granted none of
    those tables has a commit in flight, and none can start. (Commits to other tables do not
    matter: streaming does not emit them.) This is Debezium's fallback where the global lock is
    forbidden (RDS, Aurora); Debezium holds its table locks for the whole data snapshot, here
    only for the instant the position and the schema are read.
- `minimal` also keeps DDL out while the schema is read. Where FLUSH TABLES WITH READ LOCK is
  refused (no RELOAD privilege), the captured tables' read locks do that instead, with a log line.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pymysql

from cdc.api import ConnectException
from cdc_mysql.binlog_status import BINLOG_OFF, current_binlog_position

log = logging.getLogger(__name__)

TRANSACTION = "START TRANSACTION WITH CONSISTENT SNAPSHOT"
# Tries at reading MySQL's position with no commit in flight before the table locks are taken.
QUIESCENT_ATTEMPTS = 5
# Tries at locking the captured tables when CREATE/DROP TABLE changes them in the meantime.
LOCK_ATTEMPTS = 3
ER_LOCK_WAIT_TIMEOUT = 1205


@dataclass(frozen=True)
class StartPoint:
    """The binlog position (and GTID set completed before it) that the snapshot is exactly at."""

    file: str
    pos: int
    gtids: str | None


def _q(ident: str) -> str:
    return "`" + ident.replace("`", "``") + "`"


def _is_connection_error(e: pymysql.err.MySQLError) -> bool:
    """Client-side errors (CR_*, 2000 and above): the connection failed, not the statement."""
    code = e.args[0] if e.args else 0
    return isinstance(code, int) and code >= 2000


def _gtid_text(value: str | None) -> str | None:
    return value.replace("\n", "") if value else None


class SnapshotStart:
    """Takes the locks `snapshot.locking.mode` needs, starts the snapshot transaction on `conn`
    and reads its exact binlog position; `release()` drops the locks once the schema is read."""

    def __init__(
        self,
        conn: Any,
        *,
        is_mariadb: bool,
        locking_mode: str,
        user: str,
        lock_timeout_ms: int,
        captured: Callable[[Any], list[tuple[str, str]]],
        open_connection: Callable[[], Any],
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self.conn = conn
        self.is_mariadb = is_mariadb
        self.locking_mode = locking_mode
        self.user = user
        self.lock_timeout_ms = lock_timeout_ms
        self.captured = captured  # (db, table) of the captured tables, read on the connection given
        self.open_connection = open_connection  # a new autocommit connection (holds the table locks)
        self.pause = pause
        self._global_lock = False
        self._table_locks: Any | None = None  # the connection holding LOCK TABLES
        self._locked_tables: list[tuple[str, str]] = []
        self._locked_at = 0.0

    def reports_snapshot_position(self) -> bool:
        """Whether the server reports the snapshot transaction's own binlog position (MariaDB)."""
        return self.is_mariadb

    # -- the start -------------------------------------------------------------------------
    def begin(self, read_position: bool = True) -> StartPoint | None:
        """Starts the snapshot transaction; returns its exact position, or None when `read_position`
        is False (snapshot.mode=recovery keeps the stored position; only the schema is read)."""
        cur = self.conn.cursor(pymysql.cursors.Cursor)
        if self.locking_mode == "minimal":
            refused = self._lock_globally(cur)
            if refused is not None:
                self._lock_tables(
                    f"the global read lock was refused ({refused})",
                    "grant RELOAD (for FLUSH TABLES WITH READ LOCK) or LOCK TABLES",
                )
            cur.execute(TRANSACTION)
            return self._position(cur) if read_position else None
        if not read_position or self.reports_snapshot_position():
            cur.execute(TRANSACTION)
            return self._position(cur) if read_position else None
        point, why = self._quiescent_position(cur)
        if point is not None:
            return point
        self._lock_tables(why, "grant LOCK TABLES or set gtid_mode=ON (then no lock is needed)")
        cur.execute(TRANSACTION)
        return self._position(cur)

    def release(self) -> None:
        """Drops the locks; the transaction (and its snapshot) stays open."""
        if self._global_lock:
            self._global_lock = False
            with self.conn.cursor(pymysql.cursors.Cursor) as cur:
                cur.execute("UNLOCK TABLES")
            log.info("Snapshot: released the global read lock after %.0f ms", self._held_ms())
        if self._table_locks is not None:
            helper, self._table_locks = self._table_locks, None
            try:
                with helper.cursor() as cur:
                    cur.execute("UNLOCK TABLES")
            finally:
                helper.close()
            log.info(
                "Snapshot: released the read locks on %d tables; writes to them waited at most %.0f ms",
                len(self._locked_tables), self._held_ms(),
            )  # fmt: skip

    def holds_locks(self) -> bool:
        """Whether the global or the table read locks are held (no commit of a captured table can happen)."""
        return self._global_lock or self._table_locks is not None

    def unmoved(self, cur: Any, point: StartPoint) -> bool:
        """MySQL without locks: the binlog is still at `point`, with no commit in flight (no GTID owned)."""
        if self._binlog_position(cur) != (point.file, point.pos):
            return False
        return not self._gtid_state(cur).get("gtid_owned")

    def _held_ms(self) -> float:
        return (time.monotonic() - self._locked_at) * 1000

    # -- locks -----------------------------------------------------------------------------
    def _lock_wait_timeout(self) -> str:
        return f"SET SESSION lock_wait_timeout = {max(1, math.ceil(self.lock_timeout_ms / 1000))}"

    def _lock_globally(self, cur: Any) -> str | None:
        """FLUSH TABLES WITH READ LOCK; the server's refusal (no RELOAD, a lock wait timeout) or None."""
        log.info("Snapshot: FLUSH TABLES WITH READ LOCK while reading the binlog position and schema")
        cur.execute(self._lock_wait_timeout())
        try:
            cur.execute("FLUSH TABLES WITH READ LOCK")
        except pymysql.err.MySQLError as e:
            if _is_connection_error(e):
                raise
            return str(e.args[-1]) if e.args else str(e)
        finally:
            cur.execute("SET SESSION lock_wait_timeout = DEFAULT")
        self._global_lock, self._locked_at = True, time.monotonic()
        return None

    def _lock_tables(self, why: str, fix: str) -> None:
        """LOCK TABLES ... READ on the captured tables, on a connection of its own (LOCK TABLES on the
        snapshot's connection would end its transaction at START TRANSACTION)."""
        for _ in range(LOCK_ATTEMPTS):
            self.conn.rollback()  # nothing of ours may hold a lock the writers we wait for need
            tables = self.captured(self.conn)
            if not tables:
                log.info("Snapshot: %s, and no table is captured: nothing to lock", why)
                return
            log.warning(
                "Snapshot: %s; locking the %d captured tables instead (LOCK TABLES ... READ: writes to them wait) "
                "while the binlog position and the schema are read",
                why, len(tables),
            )  # fmt: skip
            helper = self.open_connection()
            try:
                with helper.cursor() as cur:
                    cur.execute(self._lock_wait_timeout())
                    cur.execute("LOCK TABLES " + ", ".join(f"{_q(db)}.{_q(t)} READ" for db, t in tables))
            except pymysql.err.MySQLError as e:
                helper.close()
                if _is_connection_error(e):
                    raise
                raise ConnectException(self._lock_advice(tables, why, fix, e)) from e
            self._locked_at = time.monotonic()
            if self.captured(self.conn) == tables:
                self._table_locks, self._locked_tables = helper, tables
                return
            with helper.cursor() as cur:  # a table was created or dropped meanwhile: lock the new list
                cur.execute("UNLOCK TABLES")
            helper.close()
        raise ConnectException(
            f"Snapshot could not lock the captured tables: CREATE/DROP TABLE changed them {LOCK_ATTEMPTS} times "
            "while they were being locked; restart the connector once that DDL is done"
        )

    def _lock_advice(self, tables: list[tuple[str, str]], why: str, fix: str, e: pymysql.err.MySQLError) -> str:
        names = ", ".join(f"{db}.{t}" for db, t in tables[:3]) + (", ..." if len(tables) > 3 else "")
        cause = str(e.args[-1]) if e.args else str(e)
        if e.args and e.args[0] == ER_LOCK_WAIT_TIMEOUT:
            return (
                f"Snapshot could not lock {names} for reading within snapshot.lock.timeout.ms={self.lock_timeout_ms} "
                f"({why}): a long transaction or DDL holds them; restart the connector once it is done, "
                "or raise snapshot.lock.timeout.ms"
            )
        grants = " ".join(
            f"GRANT LOCK TABLES ON {_q(db)}.* TO '{self.user}'@'%';" for db in sorted({db for db, _ in tables})
        )
        instead = (
            " (or set snapshot.locking.mode=none: MariaDB reports the snapshot's position without a lock, only DDL "
            "while the schema is read is then not held off)"
            if self.reports_snapshot_position()
            else ""
        )
        return (
            f"Snapshot could not lock {names} for reading ({cause}), which it needs because {why}: {fix} "
            f"for {self.user!r}, e.g. {grants}{instead}"
        )

    # -- positions -------------------------------------------------------------------------
    def _position(self, cur: Any) -> StartPoint:
        """The open transaction's position: MariaDB's own report, else the current position (exact
        only while the global or table locks hold every commit of the captured tables)."""
        if self.reports_snapshot_position():
            return self._mariadb_position(cur)
        file, pos = self._binlog_position(cur)
        state = self._gtid_state(cur)
        gtids = _gtid_text(state.get("gtid_executed")) if state.get("gtid_mode", "").upper() == "ON" else None
        return StartPoint(file, pos, gtids)

    def _mariadb_position(self, cur: Any) -> StartPoint:
        cur.execute("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'")
        status = {str(k).lower(): str(v) for k, v in cur.fetchall()}
        file, pos = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
        if not file or not pos:
            raise ConnectException(
                "MariaDB reports no binlog_snapshot_file/position: binary logging must be on (log-bin)"
            )
        # The GTID position of the snapshot's own binlog position: @@gtid_binlog_pos may already
        # include transactions committed after the snapshot, which a resume by GTID would then skip.
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, int(pos)))
        row = cur.fetchone()
        if row is None or row[0] is None:
            cur.execute("SELECT @@global.gtid_binlog_pos")
            row = cur.fetchone()
        return StartPoint(file, int(pos), str(row[0]) if row and row[0] else None)

    def _quiescent_position(self, cur: Any) -> tuple[StartPoint | None, str]:
        """MySQL without locks (module docstring); (None, why) when it cannot be made exact."""
        for attempt in range(QUIESCENT_ATTEMPTS):
            before = self._binlog_position(cur)
            state = self._gtid_state(cur)
            if state.get("gtid_mode", "").upper() != "ON":
                return None, (
                    "snapshot.locking.mode=none on MySQL needs gtid_mode=ON to read the binlog position "
                    "consistently without locks"
                )
            cur.execute(TRANSACTION)
            if self._binlog_position(cur) == before and not state.get("gtid_owned"):
                log.info("Snapshot: binlog position %s:%d read with no commit in flight (no lock)", *before)
                return StartPoint(before[0], before[1], _gtid_text(state.get("gtid_executed"))), ""
            self.conn.rollback()
            self.pause(0.01 * 2**attempt)
        return None, f"commits were in flight at each of {QUIESCENT_ATTEMPTS} tries to read the binlog position"

    @staticmethod
    def _binlog_position(cur: Any) -> tuple[str, int]:
        position = current_binlog_position(cur)
        if position is None:
            raise ConnectException(BINLOG_OFF)
        return position

    @staticmethod
    def _gtid_state(cur: Any) -> dict[str, str]:
        """MySQL's gtid_mode, gtid_executed and gtid_owned, on this connection (none of them on MariaDB)."""
        cur.execute(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('gtid_mode', 'gtid_executed', 'gtid_owned')"
        )  # fmt: skip
        return {str(k).lower(): str(v or "") for k, v in cur.fetchall()}

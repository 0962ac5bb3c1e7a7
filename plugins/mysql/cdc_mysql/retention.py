"""How long the server keeps the binlog file a stored offset needs (issue 37): the one place that
estimates it, for `MySqlConnector.position_retention` (`cdc status`, `cdc validate`) and the
task's `PositionRetention` metric (`/metrics`).

The file: the offset's `file`. A GTID offset carries its `file` too (the transaction after its
GTID set starts there); only when that file is gone does a GTID offset resume elsewhere, and then
the server's own GTID state decides (everything it purged was read: the oldest file on the
server is the one to keep).

When the server purges it: MySQL and MariaDB purge a closed binlog file whose modification time
is older than the expiry period (`binlog_expire_logs_seconds` on MySQL 8 and MariaDB 10.6+,
otherwise `expire_logs_days`; 0 turns automatic purging off, and so does MySQL's
`binlog_expire_logs_auto_purge=OFF`). A closed file's modification time is the moment the server
moved to the next file, and that moment is the timestamp of the next file's first event (its
Format_description event): read with a short binlog dump, because `SHOW BINLOG EVENTS` shows no
timestamps and the files themselves are on the server's disk. The first event of the needed file
would be the wrong clock: a file written for a day would look a day older than the server
judges it. The file being written is never purged; it expires no sooner than the period after
the server moves on, so its estimate is the period itself.

Every figure is a lower bound: the server purges only when it rotates its binlog (a full file,
FLUSH BINARY LOGS, a restart), never between rotations, and never a file a connected reader is
reading. MariaDB 11.4+ purges automatically only while `slave_connections_needed_for_purge`
replicas are connected, and also by size (`max_binlog_total_size`): both are said in the note.
The server's clock (`UNIX_TIMESTAMP()`) is compared with the server's timestamps, so a skewed
client clock changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api.retention import KEPT, LOST, UNKNOWN, UNLIMITED, PositionRetention
from cdc_mysql.connection import MySqlConnection
from cdc_mysql.gtid import contains as gtid_contains
from cdc_mysql.lineage import position

EXPIRY_VARIABLES = (
    "binlog_expire_logs_seconds",
    "expire_logs_days",
    "binlog_expire_logs_auto_purge",
    "max_binlog_total_size",
    "slave_connections_needed_for_purge",
)
# snapshot.mode values with which a lost position means a new snapshot, not a failed start.
SNAPSHOT_ON_LOSS_MODES = ("when_needed", "always")


@dataclass(frozen=True)
class BinlogExpiry:
    """The server's automatic purge: after `seconds` (None: never), as `setting` names it, with
    `notes` on what else purges or holds back purging."""

    seconds: float | None
    setting: str
    notes: tuple[str, ...] = ()


def _number(value: str | None) -> float:
    try:
        return float(value) if value not in (None, "") else 0.0
    except ValueError:
        return 0.0


def binlog_expiry(variables: Mapping[str, str]) -> BinlogExpiry:
    """The expiry the server applies, from its global variables (missing ones count as unset).

    `binlog_expire_logs_seconds` wins when not 0 (MySQL 8 ignores `expire_logs_days` then; on
    MariaDB 10.6+ the two mirror each other, days as a fraction); else `expire_logs_days`; 0 in
    both means no automatic purge, as does `binlog_expire_logs_auto_purge=OFF` (MySQL 8.0.29+)."""
    notes: list[str] = []
    total = int(_number(variables.get("max_binlog_total_size")))
    if total > 0:
        notes.append(f"binlogs are also purged, oldest first, once they pass max_binlog_total_size={total}")
    needed = int(_number(variables.get("slave_connections_needed_for_purge")))
    if needed > 0:
        notes.append(f"purged only while {needed}+ replicas are connected (slave_connections_needed_for_purge)")
    if str(variables.get("binlog_expire_logs_auto_purge", "ON")).upper() in ("OFF", "0"):
        return BinlogExpiry(None, "binlog_expire_logs_auto_purge=OFF", tuple(notes))
    seconds = _number(variables.get("binlog_expire_logs_seconds"))
    if seconds > 0:
        return BinlogExpiry(seconds, f"binlog_expire_logs_seconds={int(seconds)}", tuple(notes))
    days = _number(variables.get("expire_logs_days"))
    if days > 0:
        return BinlogExpiry(days * 86400, f"expire_logs_days={variables['expire_logs_days']}", tuple(notes))
    shown = "binlog_expire_logs_seconds=0" if "binlog_expire_logs_seconds" in variables else "expire_logs_days=0"
    return BinlogExpiry(None, shown, tuple(notes))


def _advice(snapshot_on_loss: bool) -> str:
    if snapshot_on_loss:
        return "the next start takes a new snapshot, as snapshot.mode says"
    return (
        "set snapshot.mode=when_needed to take a new snapshot, or reset the job's offsets (cdc offsets reset); "
        "raise binlog_expire_logs_seconds to keep binlogs longer"
    )


def needed_file(
    offset: Mapping[str, Any] | None,
    files: list[str],
    identity: str,
    snapshot_on_loss: bool,
    gtids_covered: Callable[[str], bool],
) -> str | PositionRetention:
    """The binlog file the server must keep for `offset` (`files`: SHOW BINARY LOGS, oldest
    first), or the verdict when there is none to keep: UNKNOWN (no offset, another server's) or
    LOST. `gtids_covered(gtids)`: whether everything the server purged is in the offset's GTID
    set, asked only of a GTID offset whose file is gone."""
    if not offset or not offset.get("file"):
        return PositionRetention(UNKNOWN, note="no offset is stored: the job needs no binlog yet")
    file, pos = str(offset["file"]), int(offset.get("pos") or 0)
    stored_identity = offset.get("server_identity")
    if stored_identity and stored_identity != identity:
        note = f"the stored offset was read from another server ({stored_identity}; this is {identity})"
        return PositionRetention(UNKNOWN, note=note)
    subject = f"binlog {file}"
    if offset.get("lineage_break"):
        note = f"the job stopped on a binlog lineage break ({offset['lineage_break']}): {_advice(snapshot_on_loss)}"
        return PositionRetention(LOST, subject=subject, removal="purged", note=note, snapshot_on_loss=snapshot_on_loss)
    if file in files:
        return file
    if files and position(file, pos) > position(files[-1], 0):
        note = (
            f"the server's binlog ends at {files[-1]}, below the stored offset's {file} (RESET MASTER or a "
            f"restore): {_advice(snapshot_on_loss)}"
        )
        return PositionRetention(LOST, subject=subject, removal="purged", note=note, snapshot_on_loss=snapshot_on_loss)
    gtids = offset.get("gtids")
    if gtids and files and gtids_covered(str(gtids)):
        return files[0]  # resumed by GTID: the server starts in its oldest file at the earliest
    note = (
        f"binlog {file} of the stored offset (pos {pos}) was purged from the server, so the changes after it are "
        f"lost to this job: {_advice(snapshot_on_loss)}"
    )
    return PositionRetention(LOST, subject=subject, removal="purged", note=note, snapshot_on_loss=snapshot_on_loss)


def countdown(
    file: str,
    closed_at_s: float | None,
    now_s: float,
    expiry: BinlogExpiry,
    snapshot_on_loss: bool = False,
    measured_at_ms: int | None = None,
) -> PositionRetention:
    """The retention of `file`, kept on the server: closed at `closed_at_s` (server time; None: it
    is the file being written) and purged at the earliest `expiry.seconds` later."""
    subject = f"binlog {file}"
    notes = list(expiry.notes)
    if expiry.seconds is None:
        return PositionRetention(
            UNLIMITED, None, subject, "purged", expiry.setting, "; ".join(notes) or None, snapshot_on_loss,
            measured_at_ms,
        )  # fmt: skip
    if closed_at_s is None:
        left = expiry.seconds
        notes.insert(0, "it is the file being written: the countdown starts when the server moves to the next one")
    else:
        left = max(0.0, closed_at_s + expiry.seconds - now_s)
        if left == 0:
            notes.insert(0, "its expiry has passed: the server purges it at its next binlog rotation")
    return PositionRetention(
        KEPT, left, subject, "purged", expiry.setting, "; ".join(notes) or None, snapshot_on_loss, measured_at_ms
    )


class BinlogRetention:
    """Reads a stored offset's retention from the server over `connection` (which the caller owns).

    One instance per reader (a `cdc status` call, a running task): it remembers when each closed
    binlog file was closed, a fact that never changes, so a task sampling every few seconds
    dumps the binlog only when its offset moves into another file."""

    def __init__(self, connection: MySqlConnection, snapshot_on_loss: bool) -> None:
        self.connection = connection
        self.snapshot_on_loss = snapshot_on_loss
        self._closed_at: dict[str, float] = {}

    def read(self, offset: Mapping[str, Any] | None) -> PositionRetention:
        connection = self.connection
        measured_at_ms = int(time.time() * 1000)
        files = connection.binlog_files()
        is_mariadb = connection.is_mariadb()
        verdict = needed_file(
            offset,
            files,
            connection.server_identity(),
            self.snapshot_on_loss,
            lambda gtids: self._gtids_covered(gtids, files[0], is_mariadb),
        )
        if isinstance(verdict, PositionRetention):
            return verdict
        rows = connection.query(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ", ".join(["%s"] * len(EXPIRY_VARIABLES)) + ")",
            EXPIRY_VARIABLES,
        )
        expiry = binlog_expiry({str(r["Variable_name"]): str(r["Value"]) for r in rows})
        now_s = float(connection.query("SELECT UNIX_TIMESTAMP() AS now")[0]["now"])
        closed_at = None
        if expiry.seconds is not None and verdict != files[-1]:
            closed_at = self._closed_at_of(verdict, files[files.index(verdict) + 1])
        return countdown(verdict, closed_at, now_s, expiry, self.snapshot_on_loss, measured_at_ms)

    def _closed_at_of(self, file: str, successor: str) -> float:
        """When `file` was last written: the first event's timestamp in `successor`, by a short dump
        with a server id no one uses (the job's own would disconnect the running job)."""
        if file not in self._closed_at:
            self._closed_at[file] = first_event_time(self.connection, successor)
        return self._closed_at[file]

    def _gtids_covered(self, gtids: str, oldest: str, is_mariadb: bool) -> bool:
        """Everything the server purged is in `gtids`: MySQL's @@gtid_purged, MariaDB's GTID state at
        the start of its oldest binlog file."""
        if is_mariadb:
            purged = self.connection.mariadb_gtid_pos_at(oldest, 4)
        else:
            purged = self.connection.variable("gtid_purged")
        return gtid_contains(gtids, (purged or "").replace("\n", "") or None, is_mariadb)


def first_event_time(connection: MySqlConnection, file: str) -> float:
    """The timestamp of the first event of binlog `file` that has one (the dump's leading Rotate
    event has none): the moment the server created the file."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import RotateEvent

    reader = BinLogStreamReader(
        connection_settings=connection.settings(),
        server_id=connection.throwaway_server_id(),
        blocking=False,
        resume_stream=True,
        log_file=file,
        log_pos=4,
        enable_logging=False,
    )
    try:
        for event in reader:
            if not isinstance(event, RotateEvent) and event.timestamp:
                return float(event.timestamp)
    finally:
        reader.close()
    raise ValueError(f"binlog {file} holds no event with a timestamp")


def snapshot_on_loss(snapshot_mode: str) -> bool:
    """Whether a start with this snapshot.mode takes a new snapshot rather than failing on a lost position."""
    return snapshot_mode in SNAPSHOT_ON_LOSS_MODES

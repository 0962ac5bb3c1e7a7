"""How long PostgreSQL keeps the WAL the connector's replication slot needs (issue 37): the one
place that estimates it, for `PostgresConnector.position_retention` (`cdc status`, `cdc validate`)
and the task's `PositionRetention` metric (`/metrics`).

What decides it is the slot, not the stored offset: the slot keeps the WAL from its restart_lsn
on, and the connector confirms only stored positions, so a stopped job's slot holds exactly what
its offset needs. PostgreSQL 13+ invalidates a slot whose retained WAL passes
`max_slot_wal_keep_size` (-1, the default: never). `pg_replication_slots` says how it stands:
`wal_status` is reserved or extended (within the limit), unreserved (past it: the next checkpoint
removes WAL the slot needs unless it is read first) or lost (invalidated); `safe_wal_size` is the
WAL that may still be written before the slot is in danger (NULL when lost, or without a limit).

Time until loss = safe_wal_size / the rate the server writes WAL. The rate: `cdc status` and
`cdc validate` read pg_current_wal_lsn() twice, `RATE_PROBE_S` apart, because they run once and
a longer watch would make every command slow; the running task reads the WAL position every few
seconds anyway (for RetainedWalBytes), so it keeps those readings over `RATE_WINDOW_S` and divides
the span: steadier, and no extra wait. The WAL holds every database's changes, so the rate is the
server's, which is what fills the slot. The figure is a lower bound: a slot is invalidated only
at a checkpoint (checkpoint_timeout, or max_wal_size written) after safe_wal_size runs out.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from cdc.api.retention import KEPT, LOST, UNKNOWN, UNLIMITED, PositionRetention
from cdc_postgres.lsn import parse_lsn

RATE_PROBE_S = 1.0  # `cdc status`/`cdc validate`: the interval between their two WAL readings
RATE_WINDOW_S = 300.0  # the running task: the span of its WAL readings the rate is taken over
# snapshot.mode values with which a lost slot means a new snapshot, not a failed start.
SNAPSHOT_ON_LOSS_MODES = ("when_needed", "always")


@dataclass(frozen=True)
class SlotState:
    """A replication slot as pg_replication_slots shows it (`exists` False: no such slot).

    `limit`: max_slot_wal_keep_size as the server shows it ('64MB', '-1'); None before PostgreSQL
    13, which has no such limit. `invalidated`: why the server invalidated the slot, when it says
    (PostgreSQL 16's `conflicting`, 17's `invalidation_reason`)."""

    exists: bool
    wal_status: str | None = None
    safe_wal_size: int | None = None
    limit: str | None = None
    invalidated: str | None = None


def read_slot(conn: psycopg.Connection[Any], slot_name: str) -> SlotState:
    """The slot's state, with the columns this server version has (to_jsonb keeps the query the same)."""
    limit_row = conn.execute("SELECT current_setting('max_slot_wal_keep_size', true)").fetchone()
    limit = str(limit_row[0]) if limit_row and limit_row[0] is not None else None
    row = conn.execute("SELECT to_jsonb(s) FROM pg_replication_slots s WHERE slot_name = %s", (slot_name,)).fetchone()
    if row is None:
        return SlotState(False, limit=limit)
    slot: dict[str, Any] = row[0]
    reason = slot.get("invalidation_reason")
    if reason is None and slot.get("conflicting") is True:
        reason = "conflicting with recovery"
    safe = slot.get("safe_wal_size")
    return SlotState(True, slot.get("wal_status"), None if safe is None else int(safe), limit, reason)


def current_lsn(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    return parse_lsn(str(row[0])) if row else 0


class WalRate:
    """The server's WAL write rate from (time, LSN) readings kept over the last `window_s` seconds."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self.window_s = window_s
        self._readings: deque[tuple[float, int]] = deque()

    def add(self, at_s: float, lsn: int) -> None:
        """A reading of pg_current_wal_lsn() at monotonic time `at_s`."""
        self._readings.append((at_s, lsn))
        while len(self._readings) > 2 and at_s - self._readings[0][0] > self.window_s:
            self._readings.popleft()

    def rate(self) -> tuple[float, float] | None:
        """(bytes per second, the seconds it was measured over), or None before two readings."""
        if len(self._readings) < 2:
            return None
        (t0, lsn0), (t1, lsn1) = self._readings[0], self._readings[-1]
        if t1 <= t0:
            return None
        return max(0, lsn1 - lsn0) / (t1 - t0), t1 - t0


def measure_rate(conn: psycopg.Connection[Any], interval_s: float = RATE_PROBE_S) -> tuple[float, float] | None:
    """The WAL write rate from two readings `interval_s` apart (for a command that runs once)."""
    rate = WalRate()
    rate.add(time.monotonic(), current_lsn(conn))
    time.sleep(interval_s)
    rate.add(time.monotonic(), current_lsn(conn))
    return rate.rate()


def _mib(n: float) -> str:
    return f"{n / 1048576:.1f} MiB"


def _advice(snapshot_on_loss: bool) -> str:
    if snapshot_on_loss:
        return "the next start takes a new snapshot, as snapshot.mode says"
    return (
        "set snapshot.mode=when_needed to take a new snapshot, or reset the job's offsets (cdc offsets reset); "
        "raise max_slot_wal_keep_size to keep more WAL for a stopped job"
    )


def estimate(
    slot_name: str,
    slot: SlotState,
    offset: Mapping[str, Any] | None,
    rate: tuple[float, float] | None,
    snapshot_on_loss: bool = False,
    measured_at_ms: int | None = None,
) -> PositionRetention:
    """The retention of `slot_name`'s WAL: `rate` is (bytes/s, seconds measured) or None."""
    subject = f"slot {slot_name}"
    limit = f"max_slot_wal_keep_size={slot.limit}" if slot.limit is not None else "PostgreSQL before 13"

    def lost(why: str) -> PositionRetention:
        note = f"{why}: {_advice(snapshot_on_loss)}"
        return PositionRetention(LOST, None, subject, "invalidated", limit, note, snapshot_on_loss, measured_at_ms)

    if not slot.exists:
        if not offset:
            return PositionRetention(UNKNOWN, note=f"no offset is stored and slot {slot_name} does not exist yet")
        return lost(
            f"replication slot {slot_name!r} does not exist, but the stored offset needs it (dropped while the job "
            "was stopped, e.g. by slot.drop.on.stop=true, or the server was restored)"
        )
    if slot.wal_status == "lost" or slot.invalidated:
        why = slot.invalidated or f"its WAL passed {limit}"
        return lost(f"replication slot {slot_name!r} was invalidated ({why}): the WAL the stored offset needs is gone")
    if slot.limit is None or slot.limit.strip() == "-1":
        return PositionRetention(
            UNLIMITED, None, subject, "invalidated", limit, None, snapshot_on_loss, measured_at_ms
        )  # fmt: skip
    safe = slot.safe_wal_size
    if safe is None:
        return PositionRetention(UNKNOWN, note=f"the server shows no safe_wal_size for slot {slot_name} ({limit})")
    if slot.wal_status == "unreserved" or safe <= 0:
        note = "it holds more WAL than the limit allows: the next checkpoint invalidates it unless the job reads it"
        return PositionRetention(KEPT, 0.0, subject, "invalidated", limit, note, snapshot_on_loss, measured_at_ms)
    if rate is None or rate[0] <= 0:
        why = f"none was written in the {rate[1]:.0f} s measured" if rate else "the write rate is not measured yet"
        note = f"{_mib(safe)} more WAL may be written first, and {why}"
        return PositionRetention(KEPT, None, subject, "invalidated", limit, note, snapshot_on_loss, measured_at_ms)
    bytes_per_s, span = rate
    note = f"{_mib(safe)} more WAL may be written first, at {_mib(bytes_per_s)}/s (measured over {span:.0f} s)"
    return PositionRetention(
        KEPT, safe / bytes_per_s, subject, "invalidated", limit, note, snapshot_on_loss, measured_at_ms
    )


def snapshot_on_loss(snapshot_mode: str) -> bool:
    """Whether a start with this snapshot.mode takes a new snapshot rather than failing on a lost slot."""
    return snapshot_mode in SNAPSHOT_ON_LOSS_MODES


def probe(
    conn: psycopg.Connection[Any],
    slot_name: str,
    snapshot_mode: str,
    offset: Mapping[str, Any] | None,
    interval_s: float = RATE_PROBE_S,
) -> PositionRetention:
    """One reading for a command that runs once: the slot, and the WAL rate over `interval_s`."""
    needs_rate = read_slot(conn, slot_name).safe_wal_size is not None
    rate = measure_rate(conn, interval_s) if needs_rate else None
    slot = read_slot(conn, slot_name)  # after the wait: safe_wal_size as of the end of the measurement
    return estimate(slot_name, slot, offset, rate, snapshot_on_loss(snapshot_mode), int(time.time() * 1000))

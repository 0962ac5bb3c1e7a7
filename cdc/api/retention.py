"""How long the database keeps the log position a source connector needs to resume (issue 37).

A stopped or lagging job resumes from its stored offset only while the database still holds the
log from that position on: MySQL/MariaDB purge binlog files after `binlog_expire_logs_seconds`,
PostgreSQL invalidates a slot whose retained WAL passes `max_slot_wal_keep_size`. A connector
says how it stands as a `PositionRetention` (`SourceConnector.position_retention`, and the
`PositionRetention` task metric); `cdc status`, `/metrics`
(`cdc_source_seconds_until_position_lost`) and `cdc validate` (`warn.position.loss.seconds`)
show the same value, worded here so that they all say it alike.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

# The states a position is in.
KEPT = "kept"  # on the server, which removes it on its own at the earliest in `seconds_left`
UNLIMITED = "unlimited"  # on the server, which never removes it on its own (only a person can)
LOST = "lost"  # gone: the connector cannot resume from the stored offset
UNKNOWN = "unknown"  # nothing to judge (no offset stored, an offset of another server): `note` says why
STATES = (KEPT, UNLIMITED, LOST, UNKNOWN)


@dataclass(frozen=True)
class PositionRetention:
    """How long the position a stored offset needs stays on the database, read from it now.

    `state`: one of STATES. `seconds_left` (KEPT only): the earliest time, in seconds from
    `measured_at_ms`, at which the server may remove the position if the job does not move past
    it; a lower bound, since servers remove log only at set moments (a binlog rotation, a
    checkpoint). None under KEPT means no estimate at the current rate: the server removes the
    log by size and nothing was written while it was measured (then it is never lost at that
    rate). `subject`: what holds the position, for people ("binlog mysql-bin.000004",
    "slot cdc_shop"); `removal`: what happens to it ("purged", "invalidated"); `limit`: the
    server setting that decides it ("binlog_expire_logs_seconds=86400"); `note`: what a reader
    should know, and under LOST the advice. `snapshot_on_loss`: the connector's config takes a
    new snapshot instead of failing when the position is lost (snapshot.mode=when_needed).
    """

    state: str
    seconds_left: float | None = None
    subject: str = ""
    removal: str = ""
    limit: str = ""
    note: str | None = None
    snapshot_on_loss: bool = False
    measured_at_ms: int | None = None

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"PositionRetention.state must be one of {', '.join(STATES)}, not {self.state!r}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (the task metric's value, `cdc status --json`): no infinities in it."""
        return asdict(self)

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> PositionRetention:
        """The inverse of `to_json`; keys it does not know (a newer cdc's) are ignored."""
        known = {k: value[k] for k in cls.__dataclass_fields__ if k in value}
        return cls(**known)

    def seconds_until_lost(self, now_ms: int | None = None) -> float | None:
        """The gauge's value at `now_ms`: the seconds left minus the time since they were measured,
        0 when lost, +Inf when the server never removes the position (or nothing is written at the
        current rate); None when unknown (no sample)."""
        if self.state == LOST:
            return 0.0
        if self.state == UNLIMITED or (self.state == KEPT and self.seconds_left is None):
            return math.inf
        if self.state != KEPT or self.seconds_left is None:
            return None
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        elapsed = max(0, now_ms - self.measured_at_ms) / 1000 if self.measured_at_ms is not None else 0.0
        return max(0.0, self.seconds_left - elapsed)

    def describe(self, now_ms: int | None = None) -> str:
        """One line for people, e.g. `position kept: ~3 h 12 min until binlog mysql-bin.000004 is
        purged (binlog_expire_logs_seconds=86400)`."""
        note = f"; {self.note}" if self.note else ""
        if self.state == LOST:
            return f"position lost: {self.note or f'{self.subject} was {self.removal}'}"
        if self.state == UNKNOWN:
            return f"position: not known to be kept ({self.note or 'the connector cannot say'})"
        if self.state == UNLIMITED:
            never = f"{self.subject} is never {self.removal} by the server"
            return f"position kept: no automatic limit ({self.limit}): {never}{note}"
        left = self.seconds_until_lost(now_ms)
        if left is None or math.isinf(left):
            return f"position kept: no estimate of when {self.subject} is {self.removal} ({self.limit}){note}"
        return f"position kept: {approx_duration(left)} until {self.subject} is {self.removal} ({self.limit}){note}"


def approx_duration(seconds: float) -> str:
    """`~45 s`, `~12 min`, `~3 h 12 min`, `~2 d 4 h`: two units at most, rounded down (the
    estimates are lower bounds, so the text never promises more time than measured)."""
    s = max(0, int(seconds))
    if s < 90:
        return f"~{s} s"
    if s < 3600:
        return f"~{s // 60} min"
    if s < 48 * 3600:
        hours, minutes = divmod(s // 60, 60)
        return f"~{hours} h {minutes} min" if minutes else f"~{hours} h"
    days, hours = divmod(s // 3600, 24)
    return f"~{days} d {hours} h" if hours else f"~{days} d"

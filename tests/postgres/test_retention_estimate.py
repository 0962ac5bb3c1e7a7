"""The slot retention arithmetic (cdc_postgres.retention, issue 37), without a server: wal_status
and safe_wal_size against the WAL write rate."""

from __future__ import annotations

import math

from cdc.api.retention import KEPT, LOST, UNKNOWN, UNLIMITED
from cdc_postgres.retention import SlotState, WalRate, estimate

MIB = 1048576
OFFSET = {"lsn": 100, "lsn_commit": 100, "lsn_proc": 100}


def test_safe_wal_size_over_the_write_rate() -> None:
    slot = SlotState(True, "reserved", 60 * MIB, "64MB")
    r = estimate("cdc_shop", slot, OFFSET, (2 * MIB, 4.0))
    assert r.state == KEPT and r.seconds_left == 30.0
    assert r.describe(r.measured_at_ms) == (
        "position kept: ~30 s until slot cdc_shop is invalidated (max_slot_wal_keep_size=64MB); 60.0 MiB more WAL "
        "may be written first, at 2.0 MiB/s (measured over 4 s)"
    )


def test_no_wal_written_is_no_estimate_and_never_lost_at_that_rate() -> None:
    r = estimate("s", SlotState(True, "extended", 10 * MIB, "64MB"), OFFSET, (0.0, 1.0))
    assert r.state == KEPT and r.seconds_left is None and r.seconds_until_lost() == math.inf
    assert "none was written in the 1 s measured" in (r.note or "")


def test_unreserved_is_due_at_the_next_checkpoint() -> None:
    for slot in (SlotState(True, "unreserved", -4096, "64MB"), SlotState(True, "extended", 0, "64MB")):
        r = estimate("s", slot, OFFSET, (MIB, 1.0))
        assert r.state == KEPT and r.seconds_left == 0.0 and "next checkpoint invalidates it" in (r.note or "")


def test_lost_invalidated_or_dropped_slots() -> None:
    lost = estimate("s", SlotState(True, "lost", None, "64MB"), OFFSET, None)
    assert lost.state == LOST and "was invalidated (its WAL passed max_slot_wal_keep_size=64MB)" in lost.describe()
    assert "set snapshot.mode=when_needed" in lost.describe() and "raise max_slot_wal_keep_size" in lost.describe()
    reason = estimate("s", SlotState(True, None, None, "-1", "rows_removed"), OFFSET, None)
    assert reason.state == LOST and "(rows_removed)" in (reason.note or "")
    dropped = estimate("s", SlotState(False, limit="64MB"), OFFSET, None, snapshot_on_loss=True)
    assert dropped.state == LOST and dropped.snapshot_on_loss and "does not exist" in (dropped.note or "")
    assert "takes a new snapshot" in (dropped.note or "")
    assert estimate("s", SlotState(False, limit="64MB"), None, None).state == UNKNOWN  # nothing stored, no slot yet


def test_no_limit() -> None:
    for limit in ("-1", None):  # max_slot_wal_keep_size=-1, or PostgreSQL before 13
        r = estimate("s", SlotState(True, "reserved", None, limit), OFFSET, (MIB, 1.0))
        assert r.state == UNLIMITED and r.seconds_until_lost() == math.inf
    assert estimate("s", SlotState(True, "reserved", None, "-1"), OFFSET, None).describe() == (
        "position kept: no automatic limit (max_slot_wal_keep_size=-1): slot s is never invalidated by the server"
    )


def test_the_rate_over_a_window_of_readings() -> None:
    rate = WalRate(window_s=10.0)
    assert rate.rate() is None
    rate.add(0.0, 0)
    assert rate.rate() is None
    rate.add(4.0, 4 * MIB)
    assert rate.rate() == (MIB, 4.0)
    rate.add(8.0, 16 * MIB)
    rate.add(12.0, 20 * MIB)  # the reading at 0 s has left the window
    assert rate.rate() == (16 * MIB / 8.0, 8.0)

"""The binlog lineage epoch (cdc_mysql/lineage.py): when the connector bumps it, and that the
events and offsets carry it. Issue 16, defect 3: positions restart lower after a failover or a
RESET MASTER, so sinks need an epoch to keep ranking new changes above old ones."""

from __future__ import annotations

import random

import pytest

from cdc_mysql.lineage import BinlogLineage, position, sequence_text
from cdc_mysql.offset_context import MySqlOffsetContext


def test_a_first_start_is_epoch_zero() -> None:
    assert BinlogLineage.decide(0, None, None, "server_id=1", (3, 400), False) == BinlogLineage(0, "server_id=1")


@pytest.mark.parametrize("seed", range(20))
def test_the_epoch_is_bumped_exactly_when_the_lineage_may_have_changed(seed: int) -> None:
    rnd = random.Random(seed)
    stored_epoch = rnd.randint(0, 5)
    stored_identity = rnd.choice([None, "server_id=1", "uuid=a"])
    identity = rnd.choice(["server_id=1", "server_id=2", "uuid=a"])
    stored = (rnd.randint(1, 5), rnd.randint(4, 1000))
    current = (rnd.randint(1, 5), rnd.randint(4, 1000))
    by_gtid = rnd.random() < 0.3
    got = BinlogLineage.decide(stored_epoch, stored_identity, stored, identity, current, by_gtid)
    changed = (stored_identity is not None and stored_identity != identity) or by_gtid or current < stored
    assert got == BinlogLineage(stored_epoch + (1 if changed else 0), identity), f"seed {seed}"


def test_offsets_round_trip_the_lineage() -> None:
    off = MySqlOffsetContext("mysql-bin.000002", 900, "0-1-5", epoch=2, server_identity="server_id=7")
    stored = off.offset()
    assert stored["epoch"] == 2 and stored["server_identity"] == "server_id=7"
    back = MySqlOffsetContext.load(stored)
    assert (back.epoch, back.server_identity) == (2, "server_id=7")
    assert "epoch" not in MySqlOffsetContext("f.1", 4).offset()  # Debezium's keys only at epoch 0
    assert off.completed().offset() == {k: v for k, v in stored.items() if k != "snapshot"}


def test_events_carry_the_epoch_as_debezium_sequence_text() -> None:
    assert sequence_text(0) is None
    assert sequence_text(3) == '["3"]'
    assert position("mariadb-bin.000012", 77) == (12, 77)


def test_caught_up_needs_the_connectors_lineage_not_only_a_position() -> None:
    """`cdc run --until-caught-up` after a failover: the old offset sits at a higher position of
    another server's binlog; it must not count as caught up (issue 16)."""
    from cdc_mysql.lineage import CaughtUpTarget

    target = CaughtUpTarget("server_id=2", "mysql-bin.000001", 5000)
    old = {"file": "mysql-bin.000005", "pos": 32430, "server_identity": "server_id=1", "gtids": "0-1-90"}
    after = target.after(old)
    assert after.min_epoch == 1 and not after.reached_by(old)
    new = {"file": "mysql-bin.000001", "pos": 5000, "epoch": 1, "server_identity": "server_id=2"}
    assert after.reached_by(new) and not after.reached_by({**new, "pos": 4999})
    assert not after.reached_by({**new, "snapshot": "INITIAL"})
    # RESET MASTER on the same server: the stored position is above the server's.
    same = CaughtUpTarget("server_id=1", "mysql-bin.000001", 900).after(old)
    assert same.min_epoch == 1 and not same.reached_by(old)
    # The usual case: same server, the position moves on; legacy offsets (no identity) by position.
    usual = CaughtUpTarget("server_id=1", "mysql-bin.000005", 40000).after(old)
    assert usual.min_epoch == 0 and usual.reached_by({**old, "pos": 40000})
    assert usual.reached_by({"file": "mysql-bin.000006", "pos": 4})


@pytest.mark.parametrize(
    ("executed", "stored", "mariadb", "held"),
    [
        ("0-1-37", "0-1-27", True, True),
        ("0-2-40", "0-1-27", True, True),  # a replica's position continues the domain's numbers
        ("0-1-20", "0-1-27", True, False),
        ("1-1-50", "0-1-27", True, False),
        ("", "0-1-1", True, False),
        ("0-1-5,1-3-9", "0-1-5,1-3-9", True, True),
        ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", False, True),
        ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-4", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", False, False),
        (
            "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9,4e11fa47-71ca-11e1-9e33-c80aa9429562:1-2",
            "4e11fa47-71ca-11e1-9e33-c80aa9429562:2",
            False,
            True,
        ),
        ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9", "4e11fa47-71ca-11e1-9e33-c80aa9429562:1", False, False),
    ],
)
def test_gtid_containment(executed: str, stored: str, mariadb: bool, held: bool) -> None:
    from cdc_mysql.gtid import contains

    assert contains(executed, stored, mariadb) is held


def test_a_lineage_break_survives_the_offset_and_always_bumps_the_epoch() -> None:
    off = MySqlOffsetContext("mysql-bin.000002", 900, "0-1-5", epoch=1, lineage_break="RESET MASTER seen")
    back = MySqlOffsetContext.load(off.offset())
    assert back.lineage_break == "RESET MASTER seen"
    assert "lineage_break" not in back.completed().offset(), "a new snapshot's offsets start clean"
    # Even where the position and the server look unchanged, the break means a new lineage.
    same = BinlogLineage.decide(1, "server_id=1", (2, 900), "server_id=1", (2, 950), False, lineage_break="x")
    assert same == BinlogLineage(2, "server_id=1")


def _watch(events: dict[tuple[str, int], dict | None], at: tuple[str, int] = ("mysql-bin.000001", 10_000)):  # type: ignore[no-untyped-def]
    from cdc_mysql.lineage_watch import LineageWatch, ServerState

    state = ServerState("server_id=1", *at, "0-1-50")
    watch = LineageWatch(True, "server_id=1", lambda: state, interval_s=0.0, read_event=lambda f, p: events.get((f, p)))
    return watch


def test_the_commit_seen_at_the_previous_check_must_still_be_there() -> None:
    """A new history that grew past the reader's position (GTIDs above those read, positions valid)
    is caught by the commit remembered at the previous check: its offset now holds another event."""
    from cdc_mysql.lineage_watch import LineageBreak

    xid = {"Event_type": "Xid", "Info": "COMMIT /* xid=11 */"}
    events: dict[tuple[str, int], dict | None] = {("mysql-bin.000001", 1237): xid}
    watch = _watch(events)
    watch.committed("mysql-bin.000001", 1237, 11)
    watch.check("mysql-bin.000001", 1268, "0-1-7")  # remembers xid 11 at 1237
    watch.committed("mysql-bin.000001", 2000, 12)
    watch.check("mysql-bin.000001", 2031, "0-1-8")  # finds xid 11 where it was: no break
    for there, found in (
        ({"Event_type": "Xid", "Info": "COMMIT /* xid=110 */"}, "Xid (COMMIT /* xid=110 */)"),  # another commit
        ({"Event_type": "Gtid", "Info": "BEGIN GTID 0-1-3"}, "Gtid"),  # another event
        ({}, "nothing"),  # no event starts there (SHOW BINLOG EVENTS: wrong offset)
    ):
        events[("mysql-bin.000001", 2000)] = there
        watch._checked_xid = ("mysql-bin.000001", 2000, 12)
        with pytest.raises(LineageBreak) as caught:
            watch.check("mysql-bin.000001", 3000, "0-1-9")
        assert "the commit read at mysql-bin.000001:2000 (xid 12) is not in the server's binlog" in str(caught.value)
        assert found in str(caught.value) and "snapshot.mode=when_needed" in str(caught.value)
    events[("mysql-bin.000001", 2000)] = None  # the server cannot say (no privilege, a purged file)
    watch._checked_xid = ("mysql-bin.000001", 2000, 12)
    watch.check("mysql-bin.000001", 3000, "0-1-9")


def test_the_first_commit_since_the_previous_check_must_also_still_be_there() -> None:
    """The e2e reproduction (CI, seed 190745978): the previous check ran before any commit was read
    (nothing remembered), three commits, a RESET MASTER, then a new history: the first commit read
    since that check is gone from where it was read, and that is enough."""
    from cdc_mysql.lineage_watch import LineageBreak

    events: dict[tuple[str, int], dict | None] = {("mysql-bin.000002", 384): {"Event_type": "Xid", "Info": "xid=40"}}
    watch = _watch(events, ("mysql-bin.000002", 11_013))
    watch.check("mysql-bin.000001", 32801, "0-1-7")  # a heartbeat: no commit read yet
    for pos, xid in ((34000, 21), (40200, 22), (44500, 23)):
        watch.committed("mysql-bin.000001", pos, xid)
    events[("mysql-bin.000001", 34000)] = {}  # the new mysql-bin.000001 has no event there
    watch.committed("mysql-bin.000002", 384, 40)  # the new history, past a rotation
    with pytest.raises(LineageBreak) as caught:
        watch.check("mysql-bin.000002", 420, "0-1-17")
    assert "the commit read at mysql-bin.000001:34000 (xid 21)" in str(caught.value)
    # The first commit since a check that is still where it was read: no break, and it is not asked again.
    watch = _watch(events, ("mysql-bin.000002", 11_013))
    watch.committed("mysql-bin.000002", 384, 40)
    watch.check("mysql-bin.000002", 420, "0-1-17")
    events[("mysql-bin.000002", 384)] = {}  # gone now: found through the commit remembered at that check
    with pytest.raises(LineageBreak):
        watch.check("mysql-bin.000002", 500, "0-1-18")


@pytest.mark.parametrize(
    ("listed", "read", "broken"),
    [
        (["0-1-14"], "0-1-10", "0-1-14"),  # the reset's first file held 0-1-11..14, never sent
        (["0-1-10"], "0-1-10", None),  # the file before ended where the reader is
        (["0-1-3"], "0-1-10", None),  # older state (a start inside an earlier file)
        (["0-2-21", "0-1-14"], "0-1-17", "0-2-21"),  # another server's higher GTIDs in the domain
        (["0-1-12", "1-1-900"], "0-1-12", None),  # a domain the stream has not read is not compared
        (["0-1-12", "1-1-900"], "0-1-12,1-3-899", "1-1-900"),
        ([], "0-1-5", None),
    ],
)
def test_a_gtid_list_above_the_gtids_read_is_a_break(listed: list[str], read: str, broken: str | None) -> None:
    from cdc_mysql.gtid import MariaDbGtidSet

    error = _watch({}).listed(listed, MariaDbGtidSet(read), "mysql-bin.000002")
    if broken is None:
        assert error is None
    else:
        assert error is not None and f"starts after GTID {broken}" in str(error), error
        assert "\n" not in str(error) and "snapshot.mode=when_needed" in str(error)


@pytest.mark.parametrize(
    ("state", "slave_pos", "stored", "origin", "missing"),
    [
        ("0-1-30,0-2-40", "", "0-1-30", 1, "0-1-31"),  # the replica stopped at 30 and took its own writes
        ("0-1-31,0-2-40", "", "0-1-30", 1, None),  # it has the transaction partly read
        ("0-2-40", "0-1-31", "0-1-30", 1, None),  # promoted without log_slave_updates: its own position
        ("0-1-30,0-2-40", "", "0-1-30", 0, None),  # no origin stored (an older offset): cannot say
        ("0-1-5,1-1-7", "", "0-1-5,1-1-6", 1, None),  # the open one was 1-1-7, which it holds
        ("0-1-5,1-1-6", "", "0-1-5,1-1-6", 1, "0-1-6 or 1-1-7"),
    ],
)
def test_the_open_transaction_of_an_offset_must_be_on_the_new_server(
    state: str, slave_pos: str, stored: str, origin: int, missing: str | None
) -> None:
    from cdc_mysql.gtid import mariadb_open_transaction_missing

    assert mariadb_open_transaction_missing(state, slave_pos, stored, origin) == missing


def test_the_open_transaction_error_names_both_servers_and_the_fix() -> None:
    message = str(_watch({}).not_the_open_transaction("0-2-31", 2, 1))
    assert "server 1" in message and "0-2-31 of server 2" in message and "snapshot.mode=when_needed" in message
    assert "\n" not in message

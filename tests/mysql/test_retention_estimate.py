"""The binlog retention arithmetic (cdc_mysql.retention, issue 37), without a server: which expiry
setting applies, which file the offset needs, and the countdown from the file's closing."""

from __future__ import annotations

import pytest

from cdc.api.retention import KEPT, LOST, UNKNOWN, UNLIMITED
from cdc_mysql.retention import BinlogExpiry, binlog_expiry, countdown, needed_file

FILES = ["mysql-bin.000003", "mysql-bin.000004", "mysql-bin.000005"]
HERE = "server_id=1"
SECONDS, DAYS, AUTO = "binlog_expire_logs_seconds", "expire_logs_days", "binlog_expire_logs_auto_purge"


@pytest.mark.parametrize(
    ("variables", "seconds", "setting"),
    [
        ({SECONDS: "86400", DAYS: "1.000000"}, 86400, "binlog_expire_logs_seconds=86400"),
        ({SECONDS: "2592000", DAYS: "7"}, 2592000, "binlog_expire_logs_seconds=2592000"),
        ({SECONDS: "0", DAYS: "2"}, 2 * 86400, "expire_logs_days=2"),
        ({DAYS: "0.000231"}, 0.000231 * 86400, "expire_logs_days=0.000231"),
        ({SECONDS: "0", DAYS: "0.000000"}, None, "binlog_expire_logs_seconds=0"),
        ({DAYS: "0"}, None, "expire_logs_days=0"),
        ({SECONDS: "3600", AUTO: "OFF"}, None, "binlog_expire_logs_auto_purge=OFF"),
    ],
)  # fmt: skip
def test_the_expiry_in_force(variables: dict[str, str], seconds: float | None, setting: str) -> None:
    expiry = binlog_expiry(variables)
    assert (expiry.seconds, expiry.setting) == (seconds, setting)


def test_size_limits_and_replica_requirements_are_said() -> None:
    expiry = binlog_expiry(
        {
            "binlog_expire_logs_seconds": "60",
            "max_binlog_total_size": "1073741824",
            "slave_connections_needed_for_purge": "1",
        }
    )
    assert expiry.seconds == 60
    assert "max_binlog_total_size=1073741824" in expiry.notes[0]
    assert "slave_connections_needed_for_purge" in expiry.notes[1]
    assert binlog_expiry({"binlog_expire_logs_seconds": "60", "max_binlog_total_size": "0"}).notes == ()


def _never(gtids: str) -> bool:
    raise AssertionError("the GTID state is asked only of a GTID offset whose file is gone")


def test_the_file_the_offset_needs() -> None:
    assert needed_file({"file": "mysql-bin.000004", "pos": 120}, FILES, HERE, False, _never) == "mysql-bin.000004"
    none = needed_file(None, FILES, HERE, False, _never)
    assert none.state == UNKNOWN and "no offset is stored" in (none.note or "")
    snapshot_offset = {"file": "mysql-bin.000005", "pos": 4, "snapshot": True}
    assert needed_file(snapshot_offset, FILES, HERE, False, _never) == "mysql-bin.000005"  # streaming starts there
    other = needed_file({"file": "mysql-bin.000004", "server_identity": "server_id=9"}, FILES, HERE, False, _never)
    assert other.state == UNKNOWN and "another server (server_id=9; this is server_id=1)" in (other.note or "")


def test_a_purged_file_is_lost_with_the_fix_unless_the_gtids_resume_it() -> None:
    purged = needed_file({"file": "mysql-bin.000002", "pos": 1547}, FILES, HERE, False, _never)
    assert purged.state == LOST and not purged.snapshot_on_loss
    assert purged.describe().startswith(
        "position lost: binlog mysql-bin.000002 of the stored offset (pos 1547) was purged"
    )
    assert "set snapshot.mode=when_needed" in purged.describe() and "binlog_expire_logs_seconds" in purged.describe()
    recovers = needed_file({"file": "mysql-bin.000002", "pos": 1547}, FILES, HERE, True, _never)
    assert recovers.state == LOST and recovers.snapshot_on_loss and "takes a new snapshot" in (recovers.note or "")
    gtid = {"file": "mysql-bin.000002", "pos": 1547, "gtids": "0-1-90"}
    assert needed_file(gtid, FILES, HERE, False, lambda g: g == "0-1-90") == "mysql-bin.000003"  # the oldest file
    assert needed_file(gtid, FILES, HERE, False, lambda g: False).state == LOST
    reset = needed_file({"file": "mysql-bin.000009", "pos": 4}, FILES, HERE, False, _never)
    assert (
        reset.state == LOST
        and "ends at mysql-bin.000005" in (reset.note or "")
        and "RESET MASTER" in (reset.note or "")
    )
    broken = needed_file({"file": "mysql-bin.000004", "lineage_break": "server_id=2"}, FILES, HERE, False, _never)
    assert broken.state == LOST and "lineage break" in (broken.note or "")


def test_the_countdown_runs_from_the_files_closing() -> None:
    day = BinlogExpiry(86400.0, "binlog_expire_logs_seconds=86400")
    closed = countdown("mysql-bin.000004", closed_at_s=1_000_000.0, now_s=1_000_000.0 + 74_880, expiry=day)
    assert closed.state == KEPT and closed.seconds_left == 11_520.0 and closed.note is None
    due = countdown("mysql-bin.000004", closed_at_s=1_000_000.0, now_s=1_100_000.0, expiry=day)
    assert due.seconds_left == 0.0 and "purges it at its next binlog rotation" in (due.note or "")
    active = countdown("mysql-bin.000005", closed_at_s=None, now_s=1_100_000.0, expiry=day)
    assert active.seconds_left == 86400.0 and "the file being written" in (active.note or "")
    never = countdown("mysql-bin.000004", 1_000_000.0, 1_100_000.0, BinlogExpiry(None, "binlog_expire_logs_seconds=0"))
    assert never.state == UNLIMITED and never.limit == "binlog_expire_logs_seconds=0"

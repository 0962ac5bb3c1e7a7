"""PositionRetention (issue 37): how `cdc status`, `/metrics` and `cdc validate` word and count the
time until a source position is lost, from what a connector measured."""

from __future__ import annotations

import math

import pytest

from cdc.api.retention import KEPT, LOST, UNKNOWN, UNLIMITED, PositionRetention, approx_duration

T0 = 1_800_000_000_000  # a measurement time, epoch ms


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "~0 s"),
        (0.9, "~0 s"),
        (89, "~89 s"),
        (90, "~1 min"),
        (3599, "~59 min"),
        (3600, "~1 h"),
        (3 * 3600 + 12 * 60 + 59, "~3 h 12 min"),
        (47 * 3600 + 59 * 60, "~47 h 59 min"),
        (48 * 3600, "~2 d"),
        (30 * 86400 + 5 * 3600 + 1, "~30 d 5 h"),
        (-5, "~0 s"),
    ],
)
def test_durations_round_down_to_two_units(seconds: float, text: str) -> None:
    assert approx_duration(seconds) == text


def _binlog(seconds_left: float | None = 11_520.0, **kw: object) -> PositionRetention:
    fields: dict[str, object] = {
        "state": KEPT,
        "seconds_left": seconds_left,
        "subject": "binlog mysql-bin.000004",
        "removal": "purged",
        "limit": "binlog_expire_logs_seconds=86400",
        "measured_at_ms": T0,
    }
    fields.update(kw)
    return PositionRetention(**fields)  # type: ignore[arg-type]


def test_kept_counts_down_from_the_measurement() -> None:
    r = _binlog()
    assert r.describe(T0) == (
        "position kept: ~3 h 12 min until binlog mysql-bin.000004 is purged (binlog_expire_logs_seconds=86400)"
    )
    assert r.seconds_until_lost(T0) == 11_520.0
    assert r.seconds_until_lost(T0 + 520_000) == 11_000.0
    assert r.seconds_until_lost(T0 + 20_000_000) == 0.0  # never below 0
    assert r.seconds_until_lost(T0 - 5_000) == 11_520.0  # a clock behind the measurement adds nothing
    assert r.describe(T0 + 11_000_000).startswith("position kept: ~8 min until")
    noted = _binlog(note="its expiry has passed: the server purges it at its next binlog rotation")
    assert noted.describe(T0).endswith(
        "(binlog_expire_logs_seconds=86400); its expiry has passed: the server purges it at its next binlog rotation"
    )


def test_states_other_than_kept_and_the_gauge_values() -> None:
    lost = PositionRetention(LOST, subject="binlog mysql-bin.000001", removal="purged", note="binlog x was purged: fix")
    assert lost.describe() == "position lost: binlog x was purged: fix" and lost.seconds_until_lost() == 0.0
    unlimited = _binlog(None, state=UNLIMITED, limit="binlog_expire_logs_seconds=0")
    assert unlimited.seconds_until_lost() == math.inf
    assert unlimited.describe() == (
        "position kept: no automatic limit (binlog_expire_logs_seconds=0): binlog mysql-bin.000004 is never purged "
        "by the server"
    )
    idle = _binlog(None, subject="slot s", removal="invalidated", limit="max_slot_wal_keep_size=1GB", note="n")
    assert idle.seconds_until_lost() == math.inf
    assert idle.describe() == "position kept: no estimate of when slot s is invalidated (max_slot_wal_keep_size=1GB); n"
    unknown = PositionRetention(UNKNOWN, note="no offset is stored")
    assert unknown.seconds_until_lost() is None
    assert unknown.describe() == "position: not known to be kept (no offset is stored)"


def test_json_round_trip_has_no_infinity_and_ignores_unknown_keys() -> None:
    r = _binlog(None, state=UNLIMITED)
    data = r.to_json()
    assert all(not (isinstance(v, float) and math.isinf(v)) for v in data.values())
    assert PositionRetention.from_json({**data, "from_a_newer_cdc": 1}) == r
    with pytest.raises(ValueError, match="state must be one of kept, unlimited, lost, unknown"):
        PositionRetention("gone")

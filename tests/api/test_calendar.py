"""The calendar helper against the standard library where it reaches, and round trips beyond."""

from __future__ import annotations

import datetime

from hypothesis import given
from hypothesis import strategies as st

from cdc.api.data.calendar import civil_from_days, days_from_civil

EPOCH = datetime.date(1970, 1, 1)


@given(st.dates())
def test_matches_datetime_for_years_1_to_9999(d: datetime.date) -> None:
    days = (d - EPOCH).days
    assert days_from_civil(d.year, d.month, d.day) == days
    assert civil_from_days(days) == (d.year, d.month, d.day)


@given(st.integers(-(2**40), 2**40))
def test_round_trips_any_day_count(days: int) -> None:
    year, month, day = civil_from_days(days)
    assert 1 <= month <= 12 and 1 <= day <= 31
    assert days_from_civil(year, month, day) == days


def test_bc_dates() -> None:
    """Year 0 is 1 BC; PostgreSQL's earliest date is 4714-11-24 BC (astronomical -4713)."""
    assert civil_from_days(days_from_civil(0, 2, 29)) == (0, 2, 29)  # 1 BC was a leap year
    assert days_from_civil(-4713, 11, 24) == -2_440_588  # the Julian day 0, as PostgreSQL counts

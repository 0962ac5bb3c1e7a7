"""Day counts of the proleptic Gregorian calendar, for any year: the one calendar helper.

Connect's `Date` and Debezium's date types count days since 1970-01-01, but databases hold
dates that `datetime.date` cannot (PostgreSQL's 4713 BC to 5874897 AD; year 0 is 1 BC).
Plugins and sinks convert with these two functions instead of `datetime`, so every year
round-trips. The arithmetic is Howard Hinnant's `days_from_civil` / `civil_from_days`
(http://howardhinnant.github.io/date_algorithms.html), with Python's floor division, which
makes the C original's corrections for negative eras unnecessary. The standard library's
`datetime` stops at year 1 and 9999 and `calendar` has no day count, so neither fits.
"""

from __future__ import annotations

__all__ = ["civil_from_days", "days_from_civil"]

_DAYS_PER_ERA = 146_097  # 400 Gregorian years
_EPOCH_SHIFT = 719_468  # days from 0000-03-01 to 1970-01-01


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of the date `year`-`month`-`day` (astronomical year: 0 is 1 BC)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * _DAYS_PER_ERA + doe - _EPOCH_SHIFT


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01 (astronomical year: 0 is 1 BC)."""
    z = days + _EPOCH_SHIFT
    era = z // _DAYS_PER_ERA
    doe = z - era * _DAYS_PER_ERA
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day

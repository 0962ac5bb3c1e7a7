"""SimpleDateFormat patterns in UTC (the TimestampRouter/TimestampConverter formats): Java's letters and quoting."""

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.transforms._java_date_format import JavaDateFormat

MS = 1_483_425_001_864  # 2017-01-03T06:30:01.864Z, a Tuesday


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("yyyyMMdd", "20170103"),
        ("yy-M-d", "17-1-3"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2017-01-03T06:30:01.864+0000"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2017-01-03T06:30:01.864Z"),
        ("EEE, d MMM yyyy hh:mm a z", "Tue, 3 Jan 2017 06:30 AM UTC"),
        ("EEEE MMMM", "Tuesday January"),
        ("D k K", "3 6 6"),
        ("'o''clock' HH ''", "o'clock 06 '"),
        ("zzzz", "Coordinated Universal Time"),
    ],
)
def test_format(pattern: str, text: str) -> None:
    assert JavaDateFormat(pattern).format(MS) == text


@pytest.mark.parametrize(
    ("pattern", "text", "millis"),
    [
        ("yyyyMMdd", "20170103", 1_483_401_600_000),
        ("yyyy-MM-dd HH:mm:ss.SSS Z", "2017-01-03 08:30:01.864 +0200", MS),
        ("yyyy-MM-dd HH:mm:ss.SSS XXX", "2017-01-03 01:30:01.864 -05:00", MS),
        ("dd MMM yyyy hh:mm:ss.SSS a", "03 Jan 2017 06:30:01.864 AM", MS),
        ("dd MMM yyyy hh:mm a", "03 Jan 2017 12:00 PM", 1_483_444_800_000),
        ("HH:mm a", "18:00 PM", 64_800_000),  # AM/PM does not change an hour of the day
        ("yyyy D", "2017 3", 1_483_401_600_000),
        ("yyyy-MM-dd", "2017-01-32", 1_485_907_200_000),  # lenient: Jan 32 is Feb 1
    ],
)
def test_parse(pattern: str, text: str, millis: int) -> None:
    assert JavaDateFormat(pattern).parse(text) == millis


@pytest.mark.parametrize("pattern", ["yyyy-qq", "bad-format", "'unterminated"])
def test_bad_patterns(pattern: str) -> None:
    with pytest.raises(ValueError, match=r"Illegal pattern character|Unterminated quote"):
        JavaDateFormat(pattern)


def test_unparseable_text() -> None:
    with pytest.raises(ValueError, match="Unparseable date"):
        JavaDateFormat("yyyy-MM-dd").parse("03/01/2017")


@given(st.integers(min_value=-(10**13), max_value=2 * 10**13))
def test_round_trip(millis: int) -> None:
    fmt = JavaDateFormat("yyyy-MM-dd HH:mm:ss.SSS Z")
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=millis)
    text = fmt.format(millis)
    assert text.startswith(f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}")
    assert fmt.parse(text) == millis

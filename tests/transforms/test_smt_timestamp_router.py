"""TimestampRouter, as Kafka's TimestampRouterTest asserts it, plus the SimpleDateFormat patterns it takes."""

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import ConfigException, DataException, SourceRecord
from cdc.transforms.timestamp_router import TimestampRouter


def xform(**configs: str) -> TimestampRouter[SourceRecord]:
    t: TimestampRouter[SourceRecord] = TimestampRouter()
    t.configure(configs)
    return t


def record(timestamp: int | None) -> SourceRecord:
    return SourceRecord(None, None, "test", 0, None, None, None, None, timestamp)


def test_default_configuration() -> None:
    out = xform().apply(record(1483425001864))
    assert out is not None and out.topic == "test-20170103"


def test_custom_formats() -> None:
    t = xform(**{"topic.format": "${timestamp}_${topic}_${topic}", "timestamp.format": "yyyy-MM-dd'T'HH.mm.ss.SSS"})
    out = t.apply(record(1483425001864))
    assert out is not None and out.topic == "2017-01-03T06.30.01.864_test_test"


def test_missing_timestamp_is_an_error() -> None:
    with pytest.raises(DataException, match="Timestamp missing on record"):
        xform().apply(record(None))


def test_bad_pattern_names_the_key() -> None:
    with pytest.raises(ConfigException, match=r"timestamp\.format.*Illegal pattern character 'q'") as info:
        xform(**{"timestamp.format": "yyyyqq"})
    assert "\n" not in str(info.value)


@given(st.integers(min_value=0, max_value=4_102_444_800_000))
def test_default_format_is_the_utc_date(ms: int) -> None:
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=ms)
    out = xform().apply(record(ms))
    assert out is not None and out.topic == "test-" + moment.strftime("%Y%m%d")

"""The snapshot's DATETIME/DATE decoders return exactly what PyMySQL's own return, for any text the server sends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pymysql.converters
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_mysql.snapshot_decoders import convert_date, convert_datetime
from tests.support.examples import examples


def _digits(n: int) -> st.SearchStrategy[str]:
    return st.text("0123456789", min_size=n, max_size=n)


def _outcome(convert: Callable[[str], Any], text: str) -> tuple[Any, ...]:
    try:
        value = convert(text)
    except Exception as e:  # PyMySQL's own error on garbage must stay the same
        return ("raises", type(e))
    return (type(value), value)


dates = st.builds(lambda y, m, d: f"{y}-{m}-{d}", _digits(4), _digits(2), _digits(2))
fractions = st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=8).map(lambda f: "." + f))
datetimes = st.builds(
    lambda d, h, mi, s, f, sep: f"{d}{sep}{h}:{mi}:{s}{f}", dates, _digits(2), _digits(2), _digits(2), fractions,
    st.sampled_from([" ", "T"]),
)  # fmt: skip


ODD = ["2024-W01-1 03:04:05", "2024-01-02T03:04:05Z", "2024-01-02 24:00:00", "2024-01-02 03:04:05+01:00",
       "2024-01-02 03:04:05,123", "2024-01-02 03:04:05.", "0000-00-00 00:00:00", "2024-02-31 00:00:00"]  # fmt: skip


@settings(max_examples=examples(3000))
@given(st.one_of(datetimes, st.sampled_from(ODD), st.text("0123456789-: T.,WZ+", min_size=19, max_size=27)))
def test_datetime_text_decodes_as_pymysql_does(text: str) -> None:
    assert _outcome(convert_datetime, text) == _outcome(pymysql.converters.convert_datetime, text)


@settings(max_examples=examples(2000))
@given(st.one_of(dates, st.sampled_from(["2024-W01-1", "0000-00-00", "2024-02-31"]), st.text(max_size=12)))
def test_date_text_decodes_as_pymysql_does(text: str) -> None:
    assert _outcome(convert_date, text) == _outcome(pymysql.converters.convert_date, text)

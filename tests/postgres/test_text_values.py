"""Text-output parsing checked against the server's own arithmetic on a private PostgreSQL."""

from __future__ import annotations

import decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_postgres import text_values as tv
from tests.support.examples import examples

SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def sql(postgres):
    conn = postgres.connect()
    conn.execute("SET DateStyle = ISO; SET IntervalStyle = postgres; SET TimeZone = 'UTC'")
    yield conn
    conn.close()


@SETTINGS
@given(
    st.integers(-4712, 294000),  # the server's own epoch*1e6 overflows bigint above ~294247
    st.integers(1, 12),
    st.integers(1, 28),
    st.integers(0, 86_399_999_999),
)
def test_timestamp_matches_server_epoch(sql, year: int, month: int, day: int, micros: int) -> None:
    if year == 0:
        year = 1
    ytext = f"{abs(year):04d}-{month:02d}-{day:02d}{' BC' if year < 0 else ''}"
    h, rem = divmod(micros, 3_600_000_000)
    mi, rem = divmod(rem, 60_000_000)
    s, us = divmod(rem, 1_000_000)
    literal = f"{ytext.replace(' BC', '')} {h:02d}:{mi:02d}:{s:02d}.{us:06d}{' BC' if year < 0 else ''}"
    text, epoch_micros, date_text, days = sql.execute(
        "SELECT t::text, (extract(epoch FROM t) * 1000000)::numeric::bigint, t::date::text,"
        " t::date - '1970-01-01'::date FROM (SELECT %s::timestamp AS t) x",
        (literal,),
    ).fetchone()
    assert tv.parse_timestamp(text) == epoch_micros
    assert tv.parse_date(date_text) == days


@SETTINGS
@given(st.integers(-15 * 3600, 15 * 3600).map(lambda s: s - s % 60), st.integers(0, 2_000_000_000_000_000))
def test_timestamptz_is_utc_micros(sql, offset_seconds: int, micros: int) -> None:
    sql.execute(f"SET TimeZone = '{-offset_seconds // 3600:+d}:{abs(offset_seconds) % 3600 // 60:02d}'")
    try:
        text, expected = sql.execute(
            "SELECT t::text, (extract(epoch FROM t) * 1000000)::numeric::bigint"
            " FROM (SELECT to_timestamp(%s::numeric / 1000000) AS t) x",
            (micros,),
        ).fetchone()
    finally:
        sql.execute("SET TimeZone = 'UTC'")
    assert tv.parse_timestamp(text) == expected


@SETTINGS
@given(st.integers(-200, 200), st.integers(-400, 400), st.integers(-(10**12), 10**12))
def test_interval_parts(sql, months: int, days: int, micros: int) -> None:
    text = sql.execute(
        "SELECT make_interval(months => %s, days => %s, secs => %s::numeric / 1000000)::text",
        (months, days, micros),
    ).fetchone()[0]
    assert tv.parse_interval(text) == tv.Interval(months, days, micros)


def test_interval_debezium_forms() -> None:
    i = tv.parse_interval("1 year 2 mons 3 days 04:05:06.5")
    assert i == tv.Interval(14, 3, (4 * 3600 + 5 * 60 + 6) * 1_000_000 + 500_000)
    assert i.iso8601() == "P1Y2M3DT4H5M6.5S"
    assert tv.Interval(1, 0, 0).approximate_micros() == round(30.4375 * 86_400_000_000)


def test_edge_values(sql) -> None:
    row = sql.execute(
        "SELECT 'infinity'::date::text, '-infinity'::timestamp::text, '24:00:00'::time::text,"
        " '04:05:06.789-08:30'::timetz::text, 'NaN'::numeric::text, '\\x00ff'::bytea::text,"
        " '(1.5,-2)'::point::text, ARRAY[ARRAY['a b', NULL], ARRAY['\"q\"', 'c,d']]::text,"
        " '{}'::int[]::text"
    ).fetchone()
    assert tv.parse_date(row[0]) == "infinity"
    assert tv.parse_timestamp(row[1]) == "-infinity"
    assert tv.parse_time(row[2]) == 86_400_000_000
    assert tv.parse_timetz(row[3]) == ((4 * 3600 + 5 * 60 + 6) * 1_000_000 + 789_000, -(8 * 3600 + 30 * 60))
    assert tv.parse_numeric(row[4]).is_nan()
    assert tv.parse_bytea(row[5]) == b"\x00\xff"
    assert tv.parse_point(row[6]) == (1.5, -2.0)
    assert tv.parse_array(row[7]) == [["a b", None], ['"q"', "c,d"]]
    assert tv.parse_array(row[8]) == []
    assert tv.parse_array("{1,2,NULL}", int) == [1, 2, None]


def test_money_and_hstore(sql) -> None:
    sql.execute("SET lc_monetary = 'C'")
    text = sql.execute("SELECT (-1234.5)::money::text").fetchone()[0]
    assert tv.parse_money(text) == decimal.Decimal("-1234.50")
    sql.execute("CREATE EXTENSION IF NOT EXISTS hstore")
    text = sql.execute("""SELECT 'a=>1, "b c"=>NULL, q=>"x\\"y"'::hstore::text""").fetchone()[0]
    assert tv.parse_hstore(text) == {"a": "1", "b c": None, "q": 'x"y'}


def test_errors_name_the_type() -> None:
    with pytest.raises(tv.TextValueError, match="interval"):
        tv.parse_interval("soon")
    with pytest.raises(tv.TextValueError, match="timestamp"):
        tv.parse_timestamp("2020-13")

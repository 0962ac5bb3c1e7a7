"""PyMySQL decoders of the snapshot's SELECTs: DATETIME/TIMESTAMP and DATE parsed by the datetime module's C code.

PyMySQL's `convert_datetime` matches a regular expression and builds the datetime from its
groups (about 4 µs a value, a fifth of a bench row's whole parse); `datetime.fromisoformat`
(CPython 3.11+ reads every `YYYY-MM-DD HH:MM:SS[.f...]` the server writes) takes 0.2 µs.
Any text it refuses (zero dates, a 31st of February under a lax sql_mode) goes to PyMySQL's
own converter, so every value is exactly what PyMySQL returns: the same datetime, or the text.

Reader processes (snapshot_reader_main.py) leave the values of the DEFERRED types as text: a
datetime, date, timedelta or Decimal pickles as a call (1-1.5 µs a value, most of a batch's
pickling), a str as its bytes. The task's process decodes them column by column
(`decode_column`) with the same decoders.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pymysql.converters
from pymysql.constants import FIELD_TYPE

_datetime = datetime.datetime.fromisoformat
_date = datetime.date.fromisoformat


def convert_datetime(text: str) -> Any:
    # Only the server's own shape, YYYY-MM-DD HH:MM:SS[.f{1,6}] (fromisoformat also reads week dates
    # and zones, which PyMySQL returns as text).
    if (
        isinstance(text, str)
        and 19 <= len(text) <= 26
        and text[4] == "-"
        and text[7] == "-"
        and text[10] == " "
        and text[13] == ":"
        and text[16] == ":"
        and (len(text) == 19 or (len(text) > 20 and text[19] == "." and text[20:].isdigit()))
    ):
        try:
            return _datetime(text)
        except ValueError:
            pass
    return pymysql.converters.convert_datetime(text)


def convert_date(text: str) -> Any:
    if isinstance(text, str) and len(text) == 10 and text[4] == "-" and text[7] == "-":
        try:
            return _date(text)
        except ValueError:
            pass
    return pymysql.converters.convert_date(text)


# PyMySQL's conversions (its encoders and decoders), with the faster decoders.
CONVERSIONS: dict[Any, Any] = {
    **pymysql.converters.conversions,
    FIELD_TYPE.DATETIME: convert_datetime,
    FIELD_TYPE.TIMESTAMP: convert_datetime,
    FIELD_TYPE.DATE: convert_date,
}


# Field types whose decoded values pickle slowly: reader processes send them as text (`decode_column`).
DEFERRED: frozenset[int] = frozenset(
    (FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.DATE, FIELD_TYPE.TIME, FIELD_TYPE.DECIMAL,
     FIELD_TYPE.NEWDECIMAL)
)  # fmt: skip
# The server writes these as YYYY-MM-DD[ HH:MM:SS[.f]]; fromisoformat reads that, and refuses every other
# text the server writes for them (zero dates, a 31st of February), which then goes value by value.
_BULK: dict[Any, Callable[[str], Any]] = {convert_datetime: _datetime, convert_date: _date}


def decode_column(decoder: Callable[[Any], Any], values: list[Any]) -> list[Any]:
    """`values` (text, or None for NULL) decoded by `decoder` as PyMySQL applies it (NULL stays None)."""
    bulk = _BULK.get(decoder)
    if bulk is not None:
        try:
            return list(map(bulk, values))
        except (ValueError, TypeError):
            pass
    return [None if v is None else decoder(v) for v in values]

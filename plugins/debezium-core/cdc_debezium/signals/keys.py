"""Chunk boundary keys in the offsets: the raw column values the database compares, as JSON text.

Debezium stores `incremental_snapshot_primary_key` / `_maximum_key` as a Java-serialized
`Object[]` in hex. There is no JVM here, so the same keys hold a JSON array whose values are
tagged by type (bytes, decimals, dates and times would not survive plain JSON), and a reader
gets back exactly the values the chunk query binds, so the database does the comparing in its
own collation and type order.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any


def _encode(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, bytes | bytearray | memoryview):
        return {"b64": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, Decimal):
        return {"dec": str(v)}
    if isinstance(v, dt.datetime):
        return {"dt": v.isoformat()}
    if isinstance(v, dt.date):
        return {"d": v.isoformat()}
    if isinstance(v, dt.time):
        return {"t": v.isoformat()}
    if isinstance(v, dt.timedelta):
        return {"td": [v.days, v.seconds, v.microseconds]}
    return {"s": str(v)}


def _decode(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    ((tag, x),) = v.items()
    if tag == "b64":
        return base64.b64decode(x)
    if tag == "dec":
        return Decimal(x)
    if tag == "dt":
        return dt.datetime.fromisoformat(x)
    if tag == "d":
        return dt.date.fromisoformat(x)
    if tag == "t":
        return dt.time.fromisoformat(x)
    if tag == "td":
        return dt.timedelta(days=x[0], seconds=x[1], microseconds=x[2])
    return x


def dumps(key: tuple[Any, ...] | None) -> str | None:
    return None if key is None else json.dumps([_encode(v) for v in key], separators=(",", ":"))


def loads(text: str | None) -> tuple[Any, ...] | None:
    return None if not text else tuple(_decode(v) for v in json.loads(text))

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
import logging
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

log = logging.getLogger(__name__)


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


def resume_after(
    table_id: str, primary_key: Sequence[str], stored_table: str | None, stored_key: str | None
) -> tuple[Any, ...] | None:
    """The key after which an interrupted initial snapshot resumes `table_id` (None: from its start).

    `stored_table` / `stored_key`: the offset's `snapshot_table` and `snapshot_last_key` (the MySQL and
    PostgreSQL connectors store both). A key that no longer fits the table's primary key (the key changed
    while the connector was down) reads the table again from its start, and says so.
    """
    if stored_table != table_id or stored_key is None:
        return None
    key = loads(stored_key)
    if key is None or len(key) != len(primary_key):
        log.warning(
            "Snapshot of %s: the stored key %s does not fit its primary key %s (it changed): reading it again",
            table_id, stored_key, list(primary_key),
        )  # fmt: skip
        return None
    return key

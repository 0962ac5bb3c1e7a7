"""The initial snapshot's chunked reads: a table in primary-key order, from after a stored key.

The snapshot reads every column as the server's text (snapshot.py's _RawText), so a chunk's
last key is that text; read back, each value is cast to its column's type in SQL, and the
server compares the row of keys in the columns' own types and collations, the order the
ORDER BY used. A table without a primary key cannot be cut by key: it is read whole (and an
interrupted snapshot reads it again from its start), as a table read by a
snapshot.select.statement.overrides statement is.
"""

from __future__ import annotations

from typing import Any

_KEY_TYPES_SQL = """
SELECT a.attname, format_type(a.atttypid, NULL) FROM pg_attribute a
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped AND a.attname = ANY(%s)
"""


def quote(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


def key_types(conn: Any, oid: int, key: tuple[str, ...]) -> list[str]:
    """The SQL type of each primary-key column of table `oid`, in the key's order (for the casts)."""
    types = dict(conn.execute(_KEY_TYPES_SQL, (oid, list(key))).fetchall())
    return [str(types[c]) for c in key]


def chunked_select(
    columns: str, relation: str, key: tuple[str, ...], types: list[str], after: tuple[Any, ...] | None
) -> tuple[str, tuple[Any, ...] | None]:
    """`SELECT columns FROM relation` in `key` order, from after the key values `after` (None: all rows)."""
    cols = ", ".join(quote(c) for c in key)
    sql = f"SELECT {columns} FROM {relation}"
    if after is not None:
        marks = ", ".join(f"%s::{t}" for t in types)
        sql += f" WHERE ({cols}) > ({marks})" if len(key) > 1 else f" WHERE {cols} > {marks}"
    return f"{sql} ORDER BY {cols}", after

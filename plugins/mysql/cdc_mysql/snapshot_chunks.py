"""Chunks of a parallel initial snapshot: a table's rows split into primary-key ranges the database compares.

Mirrors the table splitting of Debezium's parallel snapshot and Flink CDC's MySqlChunkSplitter
(evenly sized key ranges). Boundaries are keys read with `ORDER BY <key> LIMIT 1 OFFSET n`
on the snapshot's own connection, and each chunk selects `key < b1`, `b1 <= key < b2`, ...,
`key >= bk` with row-constructor comparisons for composite keys: the server compares under
the key columns' own collations and types (VARCHAR under a case- or accent-insensitive
collation, BINARY byte-wise, composite keys lexicographically), so the ranges partition the
table whatever the key's shape. Any total order works for that (the predicates are
complements of each other on NOT NULL key columns); the ORDER BY only makes the chunks even.
A boundary that does not come back as a value (a zero date reads as None) leaves the table
whole, since `key < NULL` would match nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pymysql.cursors

# Tables estimated below this many rows per chunk are read whole.
MIN_CHUNK_ROWS = 20_000


def q(ident: str) -> str:
    return "`" + ident.replace("`", "``") + "`"


@dataclass(frozen=True)
class Chunk:
    """One SELECT of a table: `sql` with `args`; `index`/`count` place it among its table's chunks."""

    table_id: str
    index: int
    count: int
    sql: str
    args: tuple[Any, ...]


def _key_expr(key: tuple[str, ...]) -> str:
    cols = ", ".join(q(c) for c in key)
    return cols if len(key) == 1 else f"({cols})"


def _placeholder(key: tuple[str, ...]) -> str:
    marks = ", ".join(["%s"] * len(key))
    return marks if len(key) == 1 else f"({marks})"


def boundaries(conn: Any, db: str, table: str, key: tuple[str, ...], estimate: int, pieces: int) -> list[tuple]:
    """Up to `pieces - 1` ascending keys splitting the table into pieces of about `estimate / pieces` rows."""
    if pieces < 2 or not key:
        return []
    step = max(1, estimate // pieces)
    order = ", ".join(q(c) for c in key)
    sql = f"SELECT {order} FROM {q(db)}.{q(table)} ORDER BY {order} LIMIT 1 OFFSET %s"
    found: list[tuple] = []
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        for i in range(1, pieces):
            cur.execute(sql, (i * step,))
            row = cur.fetchone()
            if row is None:
                break
            if any(v is None for v in row):
                return []
            if found and tuple(row) == found[-1]:
                continue
            found.append(tuple(row))
    return found


def plan_table(conn: Any, db: str, table: str, key: tuple[str, ...], estimate: int, max_pieces: int) -> list[Chunk]:
    """The chunks of one table (one whole-table chunk without a key or when it is small)."""
    table_id = f"{db}.{table}"
    base = f"SELECT * FROM {q(db)}.{q(table)}"
    pieces = min(max_pieces, estimate // MIN_CHUNK_ROWS) if key else 1
    bounds = boundaries(conn, db, table, key, estimate, pieces) if pieces > 1 else []
    if not bounds:
        return [Chunk(table_id, 0, 1, base, ())]
    expr, marks = _key_expr(key), _placeholder(key)
    chunks: list[Chunk] = []
    count = len(bounds) + 1
    for i in range(count):
        conds, args = [], []
        if i > 0:
            conds.append(f"{expr} >= {marks}")
            args.extend(bounds[i - 1])
        if i < len(bounds):
            conds.append(f"{expr} < {marks}")
            args.extend(bounds[i])
        chunks.append(Chunk(table_id, i, count, f"{base} WHERE {' AND '.join(conds)}", tuple(args)))
    return chunks

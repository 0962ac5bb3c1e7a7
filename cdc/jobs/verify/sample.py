"""`cdc verify --sample N`: a seeded random sample of N keys per table.

A key's rank is the MD5 (hex) of the seed and the key's canonical parts (`rank_parts`: the seed, then
each key column's canonical text, normalize.py, after a 0x1F separator, NULL as 0x01). A key is in the
sample when its rank is at or below the table's threshold: the N-th smallest rank among the source's
keys. Ranking by a hash of the seed makes the sample uniform over the keys and the same for the same
seed, and since the target's keys are ranked alike, a key only in the target whose rank falls under
the threshold is in the sample too (extra rows are found at the same rate as missing ones).

MD5 because both source databases compute it (MySQL/MariaDB `MD5()`, PostgreSQL `md5()`): when each key
column's SQL text is its canonical text (integer and plain text keys: `rank_sql`), the source computes
the ranks itself: one query returns the threshold (the N-th smallest rank, `ORDER BY … LIMIT`), and the
rows read are those of the sample alone (`WHERE rank <= threshold`). For other keys the threshold is
found in one pass over the source's key columns, and the sample filters the rows as they are read. On
the target, Delta, Iceberg and Parquet batches are filtered on their key columns before any row is
made a Python tuple (scope.py), and a PostgreSQL target computes the rank in its WHERE like a source.
Online, every source read is in the same snapshot as the comparison.
"""

from __future__ import annotations

import hashlib
import heapq
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cdc.jobs.verify.compare import _key_values

SEED_BITS = 32
SEPARATOR = "\x1f"
NULL = "\x01"


def new_seed() -> int:
    return secrets.randbits(SEED_BITS)


def rank_parts(seed: int, parts: Sequence[str | None]) -> str:
    """The rank of a key given as its columns' canonical texts (what `rank_sql` computes in SQL)."""
    text = str(seed) + "".join(SEPARATOR + (NULL if p is None else p) for p in parts)
    return hashlib.md5(text.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


def rank(seed: int, key: str, width: int = 1) -> str:
    """The rank of a canonical key (compare._key: one column's text, several as a JSON list)."""
    return rank_parts(seed, _key_values(key, width))


@dataclass(frozen=True)
class KeySample:
    """The keys of one table's sample, as a container of canonical keys (`k in sample`)."""

    seed: int
    threshold: str  # the largest rank in the sample
    size: int  # source keys in the sample
    width: int = 1  # key columns

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and rank(self.seed, key, self.width) <= self.threshold

    def holds(self, parts: Sequence[str | None]) -> bool:
        return rank_parts(self.seed, parts) <= self.threshold


def sample_keys(keys: Iterable[str], n: int, seed: int, width: int = 1) -> KeySample | None:
    """The sample of `n` of the source's canonical `keys`; None when the table holds no more than `n`
    (every key is compared)."""
    ranks = heapq.nsmallest(n + 1, (rank(seed, k, width) for k in keys))
    return from_ranks(ranks, n, seed, width)


def from_ranks(ranks: Sequence[str], n: int, seed: int, width: int) -> KeySample | None:
    """The sample, given the `n+1` smallest ranks (fewer: the table holds no more than `n` keys)."""
    if len(ranks) <= n:
        return None
    return KeySample(seed, ranks[n - 1], n, width)


# -- in SQL -----------------------------------------------------------------------------------------
def rank_sql(family: str, parts: Sequence[str], seed: int) -> tuple[str, list[Any]]:
    """The rank as an SQL expression over the key columns' canonical texts `parts` (SQL expressions of
    type text, from `part_sql`), and its parameters (the seed and separators, never formatted in)."""
    params: list[Any] = []
    pieces: list[str] = []
    for i, part in enumerate(parts):
        params.extend([(str(seed) if i == 0 else "") + SEPARATOR, NULL])
        if family == "mysql":
            pieces.append(f"%s, COALESCE({part}, %s)")
        else:
            pieces.append(f"%s::text || COALESCE({part}, %s::text)")
    if family == "mysql":
        return f"MD5(CONCAT({', '.join(pieces)}))", params
    return f"md5(convert_to({' || '.join(pieces)}, 'UTF8')) COLLATE \"C\"", params


def part_sql(family: str, kind: str | None, type_: str, expr: str, select: str | None = None) -> str | None:
    """A key column's canonical text as SQL, when the database's own text of the value is exactly its
    canonical text (normalize.canon); None otherwise (the ranks are then computed in Python).

    `expr`: the quoted column; `type_`: its SQL type as the source reports it; `select`: PostgreSQL's
    reading expression (uuid, enum … as text)."""
    if family == "mysql":
        if kind == "int" and "zerofill" not in type_.lower():
            return f"CAST({expr} AS CHAR)"
        if kind == "text":
            return f"CONVERT({expr} USING utf8mb4)"
        return None
    if kind == "int":
        return f"{expr}::text"
    if kind == "text":
        padded = type_.startswith("character(") or type_ in ("character", "bpchar", '"char"')
        return None if padded else f"({select or expr})::text"  # char(n)::text drops the padding
    return None

"""`cdc verify --sample N`: a seeded random sample of N keys per table.

A key is in the sample when its rank, a keyed BLAKE2b hash of the seed and the key's canonical text,
is at or below the table's threshold: the N-th smallest rank among the source's keys. Ranking by a
hash of the seed makes the sample uniform over the keys and the same for the same seed, and since the
target's keys are ranked alike, a key only in the target whose rank falls under the threshold is in
the sample too (extra rows are found at the same rate as missing ones). The threshold is found in one
pass over the source's key columns (in the same snapshot as the comparison, when online); the sample
is then a predicate on the canonical key (compare.compare's `only`), so neither side is read by key.
"""

from __future__ import annotations

import hashlib
import heapq
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

SEED_BITS = 32


def new_seed() -> int:
    return secrets.randbits(SEED_BITS)


def rank(seed: int, key: str) -> int:
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8, key=seed.to_bytes(8, "big"))
    return int.from_bytes(digest.digest(), "big")


@dataclass(frozen=True)
class KeySample:
    """The keys of one table's sample, as a container of canonical keys (`k in sample`)."""

    seed: int
    threshold: int  # the largest rank in the sample
    size: int  # source keys in the sample

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and rank(self.seed, key) <= self.threshold


def sample_keys(keys: Iterable[str], n: int, seed: int) -> KeySample | None:
    """The sample of `n` of the source's canonical `keys`; None when the table holds no more than `n`
    (every key is compared)."""
    ranks = heapq.nsmallest(n + 1, (rank(seed, k) for k in keys))
    if len(ranks) <= n:
        return None
    return KeySample(seed, ranks[n - 1], n)

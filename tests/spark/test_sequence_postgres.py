"""`__seq` of PostgreSQL events: a snapshot read at the slot's consistent point P ranks below every
change of a transaction whose commit record starts at P.

The exported snapshot holds the transactions committed before P; one whose commit record starts
exactly at P is streamed instead, and its changes' own LSNs are below P. Ranked (P, P), the stale
read outranked those changes and the lake kept it. A read now ranks (P, 0). Seeded source blocks
(with and without `lsn_commit`, `sequence` texts with a null commit, textual LSNs) give the same
`__seq` in the per-record decoder and the vectorized one.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from cdc_spark.decode import fast, sequence


def _read_at(p: int) -> dict:
    """A snapshot read's source block as the PostgreSQL connector writes it (no commit LSN)."""
    return {"lsn": p, "sequence": f'[null,"{p}"]', "snapshot": "true", "ts_ms": 1}


def _change(commit: int, lsn: int) -> dict:
    return {"lsn": lsn, "lsn_commit": commit, "sequence": f'["{commit}","{lsn}"]', "snapshot": "false", "ts_ms": 1}


@pytest.mark.parametrize("vectorized", [False, True])
def test_a_change_committed_at_the_consistent_point_outranks_the_snapshot_read(vectorized: bool) -> None:
    p = 0x16_B374_D848
    blocks = [
        _read_at(p),
        _change(p, p - 120),  # committed exactly at P: not in the snapshot
        _change(p - 200, p - 260),  # committed before P: in the snapshot, the read wins
        _change(p + 50, p + 10),
    ]
    if vectorized:
        seqs = fast.sequences(pa.array(blocks, fast._SOURCE)).to_pylist()
    else:
        seqs = [sequence.from_source(b) for b in blocks]
    read, at_p, before, after = seqs
    assert before < read < at_p < after
    assert sequence.unpack(read) == (p, 0, 0, 0)


def _random_block(rng: random.Random) -> dict:
    lsn = rng.randrange(1, 2**40)
    commit = rng.choice([None, lsn, lsn + rng.randrange(1, 5000)])
    block: dict = {"lsn": lsn, "snapshot": rng.choice(["true", "false", "last"]), "ts_ms": 1}
    shape = rng.randrange(4)
    if shape == 0:  # no sequence text: lsn_commit (or none)
        block["lsn_commit"] = commit
    elif shape == 1:  # the connector's text, a null commit for reads
        block["sequence"] = f'[{"null" if commit is None else f"{chr(34)}{commit}{chr(34)}"},"{lsn}"]'
    elif shape == 2:  # text overriding a different lsn_commit
        block["lsn_commit"] = rng.randrange(1, 2**40)
        block["sequence"] = f'["{commit or lsn}","{lsn}"]'
    else:  # Debezium's first event after a start: no last commit yet
        block["sequence"] = f'[null,"{lsn}"]'
        block["lsn_commit"] = None
    return block


@pytest.mark.parametrize("seed", [1, 7, 2026])
def test_the_vectorized_sequence_equals_the_per_record_one(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        blocks = [_random_block(rng) for _ in range(rng.randint(1, 40))]
        got = fast.sequences(pa.array(blocks, fast._SOURCE))
        assert got is not None
        assert got.to_pylist() == [sequence.from_source(b) for b in blocks]


def test_a_read_without_a_commit_lsn_ranks_at_its_lsn_and_zero() -> None:
    assert sequence.from_source({"lsn": "0/1F4"}) == sequence.pack(500) == sequence.postgres(None, 500)
    assert sequence.from_source({"lsn": 500, "lsn_commit": 400}) == sequence.postgres(400, 500)

"""`keys.resume_after`: where an interrupted initial snapshot resumes a table (MySQL and PostgreSQL alike).

Seeded keys of every type the chunk keys carry round-trip through the offset text; only the table
the offset names resumes after its key, and a key that no longer fits the primary key (it changed
while the connector was down) reads the table from its start with one warning.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from decimal import Decimal
from typing import Any

import pytest

from cdc_debezium.signals import keys


def _value(rng: random.Random) -> Any:
    return rng.choice([
        rng.randrange(-(2**63), 2**63), f"k-{rng.random()}", "", rng.randbytes(rng.randrange(0, 20)),
        Decimal(rng.randrange(10**12)) / 1000, dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(10_000)),
        dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=rng.randrange(10**12)),
    ])  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_named_table_resumes_after_its_key(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        columns = [f"c{i}" for i in range(rng.randint(1, 4))]
        key = tuple(_value(rng) for _ in columns)
        stored = keys.dumps(key)
        assert keys.resume_after("db.t", columns, "db.t", stored) == key
        assert keys.resume_after("db.other", columns, "db.t", stored) is None
        assert keys.resume_after("db.t", columns, "db.t", None) is None
        assert keys.resume_after("db.t", columns, None, stored) is None


def test_a_key_that_no_longer_fits_reads_the_table_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="cdc_debezium.signals.keys")
    assert keys.resume_after("db.t", ["a", "b"], "db.t", keys.dumps((1,))) is None
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "db.t" in warning and "['a', 'b']" in warning and "reading it again" in warning

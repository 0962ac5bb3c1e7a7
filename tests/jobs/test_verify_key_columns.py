"""`cdc verify` compares rows by the key the connector chose: its message.key.columns reading.

The selection logic alone, without servers: the source reader here is a stand-in that knows
only its family and a primary key (what `keys_for` asks of it).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from cdc.jobs.verify.job import Verifier
from cdc.jobs.verify.source import SourceTable


@dataclass
class _Source:
    family: str

    def primary_key(self, table: SourceTable) -> list[str]:
        return ["id"]


def _verifier(family: str, key_columns: str) -> Verifier:
    v = object.__new__(Verifier)
    v.specs, v.config, v.source = {}, {"message.key.columns": key_columns}, _Source(family)  # type: ignore[assignment]
    return v


@pytest.mark.parametrize(
    ("family", "table", "expected"),
    [
        ("mysql", SourceTable("Shop", "Orders"), ["code", "line"]),  # MySQL: names match case-insensitively
        ("postgres", SourceTable("Shop", "Orders"), ["id"]),  # PostgreSQL: they do not
        ("postgres", SourceTable("shop", "orders"), ["code", "line"]),
        ("mysql", SourceTable("shop", "items"), ["id"]),  # no entry: the primary key
    ],
)
def test_keys_follow_the_connectors_reading(family: str, table: SourceTable, expected: list[str]) -> None:
    assert _verifier(family, r"shop\.orders:code,line").keys_for(table) == expected

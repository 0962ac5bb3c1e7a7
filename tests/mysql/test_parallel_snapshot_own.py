"""The parallel snapshot's own connection (snapshot_parallel.OwnReader) reads exactly what the reader processes read.

The task's own connection reads a chunk whenever no reader has a batch waiting, which depends
on timing. Here the readers get no chunk at all (IN_FLIGHT = 0), so every chunk of the seeded
random tables of test_parallel_snapshot (datetimes and Decimals decoded by column, long and
NULL values, several key shapes) goes through OwnReader, and the records must equal the
one-thread snapshot's.
"""

from __future__ import annotations

from typing import Any

import pytest

from cdc_mysql import snapshot_chunks, snapshot_parallel
from tests.mysql.test_parallel_snapshot import TABLES, _fill, _snapshot


@pytest.mark.parametrize("seed", [31, 2027])
def test_the_own_connection_alone_gives_the_records_of_one_thread(
    mariadb_db: Any, seed: int, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshot_chunks, "MIN_CHUNK_ROWS", 40)
    _fill(mariadb_db, seed, 250)
    one = _snapshot(mariadb_db, 1, caplog)
    assert sum(one[0].values()) == 250 * len(TABLES)
    monkeypatch.setattr(snapshot_parallel, "IN_FLIGHT", 0)  # the reader processes get no chunk
    steps: list[int] = []
    step = snapshot_parallel.OwnReader.step

    def counted(self: Any) -> tuple[Any, ...]:
        message = step(self)
        kind = message[0]
        steps.append(len(message[2]) if kind == "rows" else len(message[2][0]) if kind == "cols" else 0)
        return message

    monkeypatch.setattr(snapshot_parallel.OwnReader, "step", counted)
    caplog.clear()
    own = _snapshot(mariadb_db, 2, caplog)
    assert sum(steps) == 250 * len(TABLES)  # every row came through the own connection
    assert own == one
    assert caplog.text.count("chunks on 2 connections") == 1

"""Acceptance (issue 19): every Debezium binlog test script loads on a private MariaDB, and under the
default config and each knob Debezium's ITs use, one connector over all of them snapshots and streams
every table without the task failing; snapshot and binlog give the same values.

The value-for-value assertions re-expressed from Debezium's ITs are in test_debezium_it_values.py.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from typing import Any

import pytest

from tests.debezium_material.mysql import script_names
from tests.mysql.debezium_scripts import ACCEPTANCE_KNOBS, MYSQL_ONLY, Loaded, RunCache, tables_without_events


def test_every_script_loads_except_the_mysql_only_ones(debezium_loaded: Loaded) -> None:
    assert set(debezium_loaded.failed) == set(MYSQL_ONLY), debezium_loaded.failed
    assert len(debezium_loaded.databases) == len(script_names()) - len(MYSQL_ONLY)
    assert len(debezium_loaded.tables) > 100


@pytest.mark.parametrize("knob", ACCEPTANCE_KNOBS)
def test_every_table_produces_events_without_a_failed_task(debezium_runs: RunCache, knob: str) -> None:
    run = debezium_runs[knob]
    assert run.error is None, f"{knob}: {run.error!r}"
    assert tables_without_events(debezium_runs.loaded, run) == []


@pytest.mark.parametrize("knob", ACCEPTANCE_KNOBS)
def test_snapshot_and_binlog_give_the_same_values(debezium_runs: RunCache, knob: str) -> None:
    run = debezium_runs[knob]
    loaded = debezium_runs.loaded
    differences, compared = {}, 0
    topics = {r.topic for r in run.records}
    for t in loaded.tables:
        if not t.rows or t.topic not in topics:
            continue
        compared += 1
        read, created, deleted = (
            Counter(_key(v) for v in rows)
            for rows in (run.snapshot(t.topic), run.created(t.topic), run.deleted(t.topic))
        )
        if not read == created == deleted:
            differences[t.topic] = (read - created) or (created - read) or (read - deleted)
    assert differences == {}, differences
    assert compared > 60


def _key(row: dict[str, Any]) -> str:
    return repr(sorted((k, _plain(v)) for k, v in row.items()))


def _plain(v: Any) -> Any:
    if isinstance(v, float) and math.isfinite(v):
        # A FLOAT32 field: the SELECT gives the shortest text, the binlog the 4-byte value.
        f32 = struct.unpack("<f", struct.pack("<f", v))[0]
        return ("f32", f32) if abs(f32 - v) <= abs(v) * 1e-7 else v
    if isinstance(v, dict):
        return sorted((k, _plain(x)) for k, x in v.items())
    return v

"""Issue 22's acceptance, CI-sized: an incremental snapshot of a 20k-row table while a seeded writer updates,
deletes and re-inserts random rows of it as fast as the server takes them.

MariaDB → `cdc run` (MySQL connector, embedded log, Spark, Delta) streaming from its start
(snapshot.mode=no_data); `cdc signal ... execute-snapshot` reads the table in chunks meanwhile.
Afterwards (tests/jobs/snapshot_under_load.py):

- the Delta table equals the source table row for row, every column (read with deltalake);
- the log holds every streamed change of the writer, per key in commit order, exactly once;
- every row the writer never touched arrived as an `r` event with its filled values;
- no key's lake state ever went back to an older change (delete.mode=soft; each Delta commit's
  added files replayed in order).

No timing is asserted: benchmarks/incremental_snapshot.py measures the delays at 1M rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.jobs.snapshot_under_load import (
    create_table,
    differences,
    lake_delays,
    lake_path,
    lake_rows,
    log_events,
    run_scenario,
    table_rows,
)
from tests.rig import MariaDbServer

pytestmark = pytest.mark.slow

ROWS = 20_000
CHUNK = 2048  # ten chunks: each one a window the writer's changes fall into
SEED = 2202


def test_the_lake_equals_a_table_snapshotted_while_a_writer_changes_it(
    tmp_path: Path, mariadb_db: MariaDbServer
) -> None:
    create_table(mariadb_db, ROWS)
    # delete.mode=soft: a deleted row keeps its last op number, so every Delta commit's rows say which
    # change of their key they show (lake_delays); the hard mode's tombstones have
    # test_incremental_snapshot_job.py's writer.
    run = run_scenario(tmp_path, mariadb_db, ROWS, SEED, delete_mode="soft", chunk=CHUNK)
    ops = run.ops
    assert len(ops) > 200, len(ops)  # the writer ran while the chunks were read
    assert any(op.stamp_us / 1e6 > run.signal_s for op in ops if op.kind == "c")

    diff = differences(table_rows(mariadb_db), lake_rows(lake_path(tmp_path)))
    assert not diff, "the lake differs from the table:\n" + "\n".join(diff)

    events = log_events(tmp_path, mariadb_db.database)
    streamed: dict[int, list[tuple[str, int]]] = {}
    reads: dict[int, dict] = {}
    for e in events:
        if e["op"] == "r":
            assert e["source"]["snapshot"] == "incremental", e["source"]
            reads[e["after"]["id"]] = e["after"]
        else:
            row = e["after"] if e["op"] != "d" else e["before"]
            streamed.setdefault(row["id"], []).append((e["op"], e["after"]["seq"] if e["after"] else -1))
    expected: dict[int, list[tuple[str, int]]] = {}
    for op in ops:
        expected.setdefault(op.key, []).append((op.kind, op.seq if op.kind != "d" else -1))
    missing = {k: (v, streamed.get(k)) for k, v in expected.items() if streamed.get(k) != v}
    assert not missing, f"{len(missing)} keys' streamed changes differ from the writer's: {list(missing.items())[:5]}"
    assert streamed.keys() == expected.keys()

    untouched = set(range(1, ROWS + 1)) - expected.keys()
    assert untouched <= reads.keys(), f"no r event for {sorted(untouched - reads.keys())[:10]}"
    assert all(reads[k]["seq"] == 0 and reads[k]["name"] == f"name-{k}" for k in untouched)
    assert reads.keys() <= set(range(1, ROWS + 1))

    seen = lake_delays(lake_path(tmp_path), ops, ROWS)
    assert not seen.regressions, seen.regressions[:10]  # no key ever showed an older change again
    assert not seen.unseen, seen.unseen[:10]
    assert seen.keys_per_version[-1][1] == ROWS  # every id reached the lake (deleted ones as __deleted rows)

"""A run killed before its first micro-batch was planned must not wedge every later run.

Seen in CI (tests/jobs/test_kill.py, seed 66755507): `cdc run` was killed while Spark wrote
`offsets/0`; the next run failed with STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, and so did
every run after it. The integration test recreates what such a kill leaves (the names are
read off a real checkpoint Spark wrote in the same test, not guessed); the property test
checks that nothing but those leftovers is ever removed.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.log.embedded import EmbeddedLog
from cdc_spark.checkpoint import clear_unplanned_leftovers
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows, run_available_now
from tests.support.examples import examples


def _leave_killed_first_batch(checkpoint: Path) -> list[Path]:
    """What a kill -9 between Spark's temp write and its rename of offsets/0 leaves."""
    offsets = checkpoint / "offsets"
    offsets.mkdir(parents=True)
    temp = offsets / f".0.{uuid.uuid4()}.tmp"
    temp.write_text('v1\n{"batchWatermarkMs":0,"batchTimes')  # cut mid-write
    crc = offsets / f".{temp.name}.crc"
    crc.write_bytes(b"crc\x00")
    (checkpoint / "commits").mkdir()
    return [temp, crc]


def test_restart_after_a_kill_before_the_first_batch(spark: Any, tmp_path: Path) -> None:
    rng = random.Random(66755507)
    table = Table("shop.inv.items")
    expected = {k: (f"n{k}", rng.randrange(1000)) for k in range(40)}
    state = tmp_path / "state"
    with EmbeddedLog(state) as log:
        produce(log, table.topic, [table.event("c", k, {"name": n, "qty": q}, k + 1) for k, (n, q) in expected.items()])
    source = {"state.dir": str(state), "topics": table.topic}

    # Spark's own names for what it writes: a finished checkpoint has `offsets/0` and its checksum.
    reference = tmp_path / "reference-ckpt"
    run_available_now(spark, source, {"target": "delta", "path": str(tmp_path / "reference-lake")}, str(reference))
    written = {p.name for p in (reference / "offsets").iterdir()}
    assert "0" in written and ".0.crc" in written, written

    checkpoint = tmp_path / "ckpt"
    leftovers = _leave_killed_first_batch(checkpoint)
    lake = tmp_path / "lake"
    run_available_now(spark, source, {"target": "delta", "path": str(lake)}, str(checkpoint))

    assert not any(p.exists() for p in leftovers)
    assert (checkpoint / "offsets" / "0").exists()
    rows = delta_rows(str(lake / "shop_inv_items"))
    assert {r["id"]: (r["name"], r["qty"]) for r in rows} == expected


def test_a_planned_batch_is_never_touched(tmp_path: Path) -> None:
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    (offsets / "0").write_text("v1\n{}\n{}")
    temp = offsets / f".1.{uuid.uuid4()}.tmp"
    temp.write_text("half")
    assert clear_unplanned_leftovers(str(tmp_path)) == []
    assert temp.exists()


def test_remote_checkpoints_are_left_to_spark(tmp_path: Path) -> None:
    assert clear_unplanned_leftovers("s3a://bucket/ckpt") == []
    _leave_killed_first_batch(tmp_path)
    assert len(clear_unplanned_leftovers(f"file://{tmp_path}")) == 2


_NAMES = st.one_of(
    st.integers(0, 30).map(str),  # a batch
    st.builds(lambda n, u: f".{n}.{u}.tmp", st.integers(0, 30), st.uuids()),  # a write in progress
    st.builds(lambda n, u: f"..{n}.{u}.tmp.crc", st.integers(0, 30), st.uuids()),
    st.integers(0, 30).map(lambda n: f".{n}.crc"),
    st.sampled_from(["metadata", "README", "x.tmp", ".hidden", "0.json", "_spark_metadata"]),
)


@settings(max_examples=examples(200), deadline=None)
@given(offsets=st.sets(_NAMES, max_size=6), commits=st.sets(_NAMES, max_size=6))
def test_only_temp_files_of_an_unplanned_query_go(offsets: set[str], commits: set[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for folder, names in (("offsets", offsets), ("commits", commits)):
            (root / folder).mkdir()
            for name in names:
                (root / folder / name).write_text("x")
        before = {p.relative_to(root) for p in root.rglob("*") if p.is_file()}
        removed = {p.relative_to(root) for p in clear_unplanned_leftovers(tmp)}
        after = {p.relative_to(root) for p in root.rglob("*") if p.is_file()}

        assert after == before - removed
        planned = any(n.isdigit() for n in offsets)
        temp = {f for f in before if f.name.startswith(".") and f.name.endswith((".tmp", ".crc"))}
        assert removed == (set() if planned else temp)


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_no_offsets_directory(tmp_path: Path, kind: str) -> None:
    if kind == "file":
        (tmp_path / "offsets").write_text("not a directory")
    assert clear_unplanned_leftovers(str(tmp_path)) == []

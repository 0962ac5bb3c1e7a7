"""The task half of the parallel Delta apply, without Spark: the guarded merge of one bucket
against a model, bucket assignment, and the file statistics the tasks write (unit tier)."""

from __future__ import annotations

import json
import random
import zlib

import pyarrow as pa
import pytest

from cdc_spark.apply import buckets
from cdc_spark.apply.errors import SchemaEvolutionError, TargetApplyError, ValueOutOfRangeError
from cdc_spark.apply.lake_tasks import guarded_merge, pack_error, unpack_error

SEEDS = range(40)


def _rows(items: list[tuple[object, ...]], with_extra: bool = False) -> pa.Table:
    """(k1, k2, seq, deleted, value) rows; `with_extra`: a column the stored rows lack."""
    cols = {
        "k1": pa.array([i[0] for i in items], pa.int64()),
        "k2": pa.array([i[1] for i in items], pa.string()),
        "v": pa.array([i[4] for i in items], pa.string()),
        "__seq": pa.array([bytes([0, i[2]]) for i in items], pa.binary()),
        "__deleted": pa.array([i[3] for i in items], pa.bool_()),
    }
    if with_extra:
        cols["extra"] = pa.array([f"x{i[2]}" for i in items], pa.string())
    return pa.table(cols)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("soft", [False, True])
def test_guarded_merge_matches_the_sequence_model(seed: int, soft: bool) -> None:
    """Per key the newer of stored row and event wins; an equal sequence (a replay) keeps the
    stored row; a hard delete removes the row, a soft one keeps it flagged; untouched stored
    rows of the files stay as they are; composite keys, NULL values, a column the stored rows
    lack."""
    rng = random.Random(seed)
    keys = [(rng.randrange(6), rng.choice(["a", "b", "é", ""])) for _ in range(rng.randrange(1, 12))]
    keys = list(dict.fromkeys(keys))
    stored_items = []
    for k in keys:
        if rng.random() < 0.6:
            seq = rng.randrange(1, 200)
            deleted = soft and rng.random() < 0.2
            stored_items.append((*k, seq, deleted, rng.choice([None, f"s{seq}"])))
    source_items = []
    for k in keys:
        if rng.random() < 0.7:
            seq = rng.randrange(1, 200)
            source_items.append((*k, seq, rng.random() < 0.3, rng.choice([None, f"e{seq}"])))
    extra = rng.random() < 0.5
    stored = _rows(stored_items)
    source = _rows(source_items, with_extra=extra)
    if extra:  # the task conforms the events to the table: the stored rows lack the new column
        source = source.select(["k1", "k2", "v", "__seq", "__deleted", "extra"])

    model: dict[tuple[object, object], tuple[int, bool, object]] = {}
    for k1, k2, seq, deleted, v in stored_items:
        model[(k1, k2)] = (seq, deleted, v)
    for k1, k2, seq, deleted, v in source_items:
        have = model.get((k1, k2))
        if have is None or seq > have[0]:
            model[(k1, k2)] = (seq, deleted, v)
    expected = {k: (s, d, v) for k, (s, d, v) in model.items() if soft or not d}

    out = guarded_merge(stored, source, ["k1", "k2"], keep_deletes=soft)
    got = {
        (r["k1"], r["k2"]): (r["__seq"][1], bool(r["__deleted"]), r["v"])
        for r in out.select(["k1", "k2", "__seq", "__deleted", "v"]).to_pylist()
    }
    assert out.num_rows == len(got), "a key twice in the bucket's new files"
    assert got == expected
    if extra:
        assert out.schema.names == source.schema.names  # stored rows get the new column as null


def test_buckets_are_crc32_of_the_canonical_key() -> None:
    """Fixed by the CRC-32 standard: the same key text gives the same bucket in any process."""
    assert buckets.bucket_of('{"id":1}', 16) == zlib.crc32(b'{"id":1}') % 16
    assert buckets.bucket_of('{"id":1}', 16) == 5  # a value computed once, kept as a regression guard
    spread = {buckets.bucket_of(json.dumps({"id": i}, separators=(",", ":")), 16) for i in range(500)}
    assert spread == set(range(16))


def test_file_statistics_are_delta_json() -> None:
    t = pa.table(
        {
            "id": pa.array([3, 1, None], pa.int64()),
            "name": pa.array(["b", "a", None]),
            "long": pa.array(["x" * 40, "y", None]),
            "day": pa.array([19000, 19001, None], pa.date32()),
            "__seq": pa.array([b"\x01", b"\x02", b"\x03"]),
        }
    )
    stats = json.loads(buckets.stats_json(t))
    assert stats["numRecords"] == 3
    assert stats["minValues"] == {"id": 1, "name": "a", "day": "2022-01-08"}
    assert stats["maxValues"] == {"id": 3, "name": "b", "day": "2022-01-09"}
    assert stats["nullCount"] == {"id": 1, "name": 1, "long": 1, "day": 1, "__seq": 0}


@pytest.mark.parametrize(
    "error",
    [
        SchemaEvolutionError("shop_items", "name", pa.string(), pa.int64()),
        TargetApplyError("shop_items", "id=7", RuntimeError("disk full")),
        ValueOutOfRangeError("shop_items", "day", pa.date32(), "year 10000"),
    ],
)
def test_a_task_error_is_raised_on_the_driver_as_it_was(error: BaseException) -> None:
    """A task's own error crosses to the driver with its class and message (naming the table,
    key and fix), not as a worker traceback."""
    back = unpack_error(pack_error(error))
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert "shop_items" in str(back)

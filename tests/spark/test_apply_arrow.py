"""The driver-side Arrow steps of the Delta targets, against simple Python models."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_spark.apply.arrowutil import rows_with_keys
from cdc_spark.apply.scd2 import chain
from tests.support.examples import examples


def _model_chain(rows: list[dict], keys: list[str]) -> list[dict]:
    """SCD2 chaining as a reader states it: first copy of each (key, sequence) wins, each
    version is valid until the key's next sequence."""
    out: dict[tuple, dict] = {}
    for r in rows:
        out.setdefault((*(r[k] for k in keys), r["__valid_from"]), dict(r))
    ordered = sorted(out.values(), key=lambda r: (*(r[k] for k in keys), r["__valid_from"]))
    for cur, nxt in zip(ordered, [*ordered[1:], None][: len(ordered)], strict=True):
        same = nxt is not None and all(cur[k] == nxt[k] for k in keys)
        cur["__valid_to"] = nxt["__valid_from"] if same else None
    return ordered


_event = st.fixed_dictionaries(
    {
        "a": st.integers(0, 3),
        "b": st.sampled_from(["x", "y"]),
        "__valid_from": st.integers(0, 6).map(lambda i: i.to_bytes(2, "big")),
        "v": st.integers(0, 1000),
    }
)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(_event, max_size=40), st.booleans())
def test_chain_equals_the_model(rows: list[dict], two_keys: bool) -> None:
    keys = ["a", "b"] if two_keys else ["a"]
    if not two_keys:
        rows = [{**r, "b": "x"} for r in rows]
    schema = pa.schema(
        [("a", pa.int64()), ("b", pa.string()), ("__valid_from", pa.binary()), ("v", pa.int64()),
         ("__valid_to", pa.binary())]
    )  # fmt: skip
    table = pa.Table.from_pylist([{**r, "__valid_to": None} for r in rows], schema=schema)
    assert chain(table, keys).to_pylist() == _model_chain([{**r, "__valid_to": None} for r in rows], keys)


def test_rows_with_keys_reads_only_the_wanted_pairs(tmp_path: Path) -> None:
    stored = pa.table({"a": [1, 1, 2, 2, 3], "b": ["x", "y", "x", "y", "x"], "v": [10, 11, 20, 21, 30]})
    ds.write_dataset(stored, tmp_path, format="parquet")
    dataset = ds.dataset(tmp_path, format="parquet")
    wanted = pa.table({"a": [1, 2, 2], "b": ["x", "y", "y"], "other": [0, 0, 0]})
    found = rows_with_keys(dataset, wanted, ["a", "b"])  # (1,y) and (2,x) pass per column: not wanted
    assert sorted(found.to_pylist(), key=lambda r: r["v"]) == [
        {"a": 1, "b": "x", "v": 10},
        {"a": 2, "b": "y", "v": 21},
    ]
    assert rows_with_keys(dataset, wanted, ["a"], ["a", "v"]).column("v").to_pylist() == [10, 11, 20, 21]


def test_a_value_the_lake_cannot_hold_names_the_table_and_column() -> None:
    """PostgreSQL's -infinity arrives (as Debezium sends it) as -9223372036832400000 ms: no
    microsecond timestamp holds it, and Arrow's cast error named neither table nor column."""
    import pytest

    from cdc_spark.apply.arrowutil import for_lake
    from cdc_spark.apply.errors import ValueOutOfRangeError

    rows = pa.table({"id": [1, 2], "at": pa.array([0, -9223372036832400000], pa.timestamp("ms"))})
    with pytest.raises(ValueOutOfRangeError, match=r"table shop_events: column 'at' holds a value outside.*infinity"):
        for_lake(rows, "shop_events")
    assert for_lake(rows.slice(0, 1), "shop_events").schema.field("at").type == pa.timestamp("us")


def test_local_delta_tables_are_read_through_arrows_own_filesystem(tmp_path: Path) -> None:
    """deltalake's default Python filesystem handler lets a prefetching Arrow thread call into a
    finalizing interpreter, which aborts the process at exit; the native one reads the same rows,
    partition directories with escaped values included."""
    import pyarrow.fs as pa_fs
    from deltalake import DeltaTable, write_deltalake

    from cdc_spark.apply.arrowutil import delta_dataset

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1, 2, 3, 4], "p": ["a b", "x/y", "%2F", "é:1"]}), partition_by=["p"])
    write_deltalake(path, pa.table({"id": [5], "p": ["a b"]}), mode="append")
    dt = DeltaTable(path)
    for where in (path, f"file://{path}"):
        dataset = delta_dataset(dt, where)
        assert isinstance(dataset.filesystem, pa_fs.SubTreeFileSystem)
        assert isinstance(dataset.filesystem.base_fs, pa_fs.LocalFileSystem)
        got = dataset.to_table().sort_by("id").to_pylist()
        assert got == dt.to_pyarrow_dataset().to_table().sort_by("id").to_pylist()
        assert [r["p"] for r in got] == ["a b", "x/y", "%2F", "é:1", "a b"]

"""`rows_with_keys` on real Delta tables that MERGEs rewrote (issue 16, defect 1), against a model.

deltalake ≥ 1.6 writes MERGE and compaction output whose Parquet files declare
string_view/binary_view while the table's dataset declares string/binary; a pyarrow scan
filter then failed on those files' statistics. The lookup must return exactly the stored
rows of the wanted keys for string, binary and composite keys, partitioned or not, with
values that share long prefixes (Delta keeps 32 characters of them in its statistics).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_spark.apply.arrowutil import delta_dataset, rows_with_keys
from tests.support.examples import examples

_texts = st.one_of(
    st.sampled_from(
        ["", " ", "a", "a ", "1", "01", "-0", "NaN", "é", "日本", "p" * 40 + "1", "p" * 40 + "2", "x" * 300]
    ),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=8),
)
_bytes = st.one_of(st.sampled_from([b"", b"\x00", b"\x00\x00", b"\xff", b"\x00" * 40 + b"\x01"]), st.binary(max_size=8))
SHAPES: dict[str, tuple[tuple[str, pa.DataType, st.SearchStrategy[Any]], ...]] = {
    "text": (("k", pa.string(), _texts),),
    "bytes": (("k", pa.binary(), _bytes),),
    "text_int": (("s", pa.string(), _texts), ("n", pa.int64(), st.integers(-2, 2))),
    "int_text": (("n", pa.int32(), st.integers(-2, 2)), ("s", pa.string(), _texts)),
    "bytes_text": (("b", pa.binary(), _bytes), ("s", pa.string(), _texts)),
}


@st.composite
def _case(draw: st.DrawFn) -> tuple[str, list[tuple], list[list[tuple]], list[tuple], bool, bool]:
    shape = draw(st.sampled_from(sorted(SHAPES)))
    key = st.tuples(*(gen for _, _, gen in SHAPES[shape]))
    first = draw(st.lists(key, min_size=1, max_size=12, unique=True))
    merges = draw(st.lists(st.lists(key, max_size=6, unique=True), min_size=2, max_size=3))
    known = first + [k for m in merges for k in m]
    wanted = draw(st.lists(st.one_of(st.sampled_from(known), key), min_size=0, max_size=8))
    return shape, first, merges, wanted, draw(st.booleans()), draw(st.booleans())


def _table(shape: str, keys: list[tuple], version: int) -> pa.Table:
    cols = SHAPES[shape]
    data: dict[str, pa.Array] = {
        name: pa.array([k[i] for k in keys], t) for i, (name, t, _) in enumerate(cols)
    }  # fmt: skip
    data["v"] = pa.array([version] * len(keys), pa.int64())
    data["p"] = pa.array([repr(k)[-1] for k in keys], pa.string())  # a partition column, when partitioned
    return pa.table(data)


@settings(
    max_examples=examples(60),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(_case())
def test_rows_with_keys_equals_the_model_after_merges(tmp_path: Path, case: tuple) -> None:
    shape, first, merges, wanted, partitioned, compact = case
    names = [name for name, _, _ in SHAPES[shape]]
    path = str(tmp_path / f"t{next(_counter)}")
    write_deltalake(path, _table(shape, first, 0), partition_by=["p"] if partitioned else None)
    model = {k: 0 for k in first}
    dt = DeltaTable(path)
    on = " AND ".join(f't."{n}" = s."{n}"' for n in names)
    for version, keys in enumerate(merges, 1):
        (
            dt.merge(_table(shape, keys, version), on, source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        model.update(dict.fromkeys(keys, version))
    if compact:
        dt.optimize.compact()
    found = rows_with_keys(delta_dataset(DeltaTable(path), path), _table(shape, wanted, -1), names, [*names, "v"])
    got = sorted((tuple(r[n] for n in names), r["v"]) for r in found.to_pylist())
    assert got == sorted((k, model[k]) for k in set(wanted) if k in model), (shape, partitioned, compact)
    assert found.schema.names == [*names, "v"]
    assert all(not pa.types.is_binary_view(t) and not pa.types.is_string_view(t) for t in found.schema.types)


_counter = itertools.count()

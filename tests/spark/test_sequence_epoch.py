"""`__seq` keeps MySQL events in order across binlog lineages (issue 16, defect 3).

After a failover or RESET MASTER the connector bumps an epoch and writes it in
`source.sequence` as `["<epoch>"]`; every event of a later epoch must rank above every event
of an earlier one, whatever their file numbers and positions, in the per-record decoder and
the vectorized one alike.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_spark.decode import fast, sequence
from tests.support.examples import examples

positions = st.tuples(
    st.integers(0, 50),  # epoch
    st.integers(1, 999_999),  # binlog file number
    st.integers(4, 2**40),  # pos
    st.integers(0, 5000),  # row
)


def _source(epoch: int, file_no: int, pos: int, row: int) -> dict:
    return {
        "file": f"mysql-bin.{file_no:06d}",
        "pos": pos,
        "row": row,
        "sequence": f'["{epoch}"]' if epoch else None,
        "ts_ms": 1,
        "snapshot": "false",
    }


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(st.lists(positions, min_size=1, max_size=30))
def test_epoch_file_pos_row_order_is_byte_order(points: list[tuple[int, int, int, int]]) -> None:
    sources = [_source(*p) for p in points]
    slow = [sequence.from_source(s) for s in sources]
    assert sorted(range(len(points)), key=lambda i: (points[i], i)) == sorted(
        range(len(points)), key=lambda i: (slow[i], i)
    )
    vectorized = fast.sequences(pa.array(sources, fast._SOURCE))
    assert vectorized is not None and vectorized.to_pylist() == slow


def test_a_later_epoch_outranks_a_higher_position() -> None:
    before = sequence.from_source(_source(0, 912, 987_654_321, 40))
    after = sequence.from_source(_source(1, 1, 4, 0))
    assert after > before
    assert sequence.from_source({"file": "mysql-bin.000001", "pos": 4, "sequence": None}) == sequence.mysql(
        "mysql-bin.000001", 4
    )


@pytest.mark.parametrize("text", ["bad", '["x"]', '["1","2"]', "[1]"])
def test_a_sequence_that_is_no_epoch_is_named(text: str) -> None:
    with pytest.raises(sequence.SequenceError, match="lineage epoch"):
        sequence.from_source({"file": "mysql-bin.000001", "pos": 4, "sequence": text})
    assert fast.sequences(pa.array([_source(0, 1, 4, 0) | {"sequence": text}], fast._SOURCE)) is None


def test_postgres_sequences_are_unchanged() -> None:
    src = {"lsn": 200, "sequence": '["150","200"]', "ts_ms": 1}
    assert sequence.from_source(src) == sequence.postgres(150, 200)
    assert fast.sequences(pa.array([src], fast._SOURCE)).to_pylist() == [sequence.postgres(150, 200)]

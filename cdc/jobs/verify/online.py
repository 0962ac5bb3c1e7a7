"""Online verify: the source read in one consistent snapshot at position X, the lake compared at X.

`cdc verify` while `cdc run` runs cannot compare "the source now" with "the lake now": the two are
never at the same point. Instead it

1. opens one transaction on the source whose snapshot is exactly at a log position X (snapshot.py:
   every change committed before X is visible in it, none committed at or after X is);
2. waits until the lake has applied every change up to X (catchup.py: the job's stored source
   offset reaches X, so every record up to X is in the log; then the Spark checkpoint commits
   the log up to where it ended at that moment, so the sink applied them);
3. compares the snapshot's rows with the lake's rows as they were at X, by key, as compare.py does.

The lake may meanwhile have applied changes after X too. Each stored row carries `__seq`, the
comparable sequence of the change that wrote it (cdc_spark/decode/sequence.py owns the format;
snapshot.py builds X's value with it), and the sink keeps per key only the change with the highest
sequence. A change with sequence ≤ seq(X) was committed before X (or is a snapshot read at X: the
source at X), one with a higher sequence after X. Once the lake applied everything up to X, a key's
stored row with `__seq` ≤ seq(X) is therefore the key's state at X, and a key whose stored row,
tombstone or delete marker is above seq(X) changed after X: its state at X is no longer in the
lake, and it is not compared (counted as "changed since"). The rules, per key (source: the row
in the snapshot at X; lake: what the sink stored; X = seq(X)):

| source at X | lake                                              | result                        |
|-------------|---------------------------------------------------|-------------------------------|
| row         | row, `__seq` ≤ X, same values                     | equal                         |
| row         | row, `__seq` ≤ X, other values                    | changed                       |
| row         | row, `__seq` > X                                  | changed since X: not compared |
| row         | no row; tombstone or soft delete with `__seq` > X | deleted since X: not compared |
| row         | no row; table truncated after X (`_cdc_truncates` > X) | changed since X          |
| row         | no row, no later delete (or one with `__seq` ≤ X) | missing                       |
| no row      | row, `__seq` ≤ X                                  | extra                         |
| no row      | row, `__seq` > X (created or changed after X)     | changed since X: not compared |
| no row      | no row (or only a delete)                         | equal                         |
| any         | the key twice among the rows compared             | duplicate                     |

SCD2 tables (`__valid_from` / `__valid_to`) keep every version, so their state at X is exact: the
version with `__valid_from` ≤ X < `__valid_to` (or open), absent when that version is a delete or
none exists yet. Every key is compared; "changed since" counts the keys with a version after X.

A row written to the lake by something else than the sink keeps whatever `__seq` it was given:
one copied from a neighbour (≤ X) is compared as usual, which is how drift made by hand is found.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator
from typing import Any

from cdc.jobs.verify.compare import RowSource, TableResult, _key, compare
from cdc.jobs.verify.normalize import Column, converter

Versions = Callable[[], Iterator[tuple[Any, ...]]]


def _seq(value: Any) -> bytes:
    return bytes(value) if value is not None else b""


def compare_at(
    result: TableResult,
    columns: list[Column],
    key_names: list[str],
    source_rows: RowSource,
    versions: Versions,
    tombstones: Versions,
    truncated: bytes | None,
    at: bytes,
    max_diffs: int,
    history: bool = False,
    keep_keys: bool = False,
    only: Container[str] | None = None,
    unfilled_defaults: bool = False,
) -> TableResult:
    """Compare the source's rows at X (`source_rows`, read in the snapshot at X) with the lake at X.

    `versions`: every stored row (target.TargetReader.versions: `columns`, then sequence, deleted,
    valid_to); `tombstones`: the remembered deletes (key columns, then sequence); `truncated`: the
    table's last truncate; `at`: seq(X); `history`: an SCD2 table (exact versions, see the module doc).
    """
    n = len(columns)
    key_idx = [next(i for i, c in enumerate(columns) if c.name == k) for k in key_names]
    key_convs = [converter(columns[i], True) for i in key_idx]

    def key_of(row: tuple[Any, ...], positions: list[int]) -> str:
        return _key([f(row[i]) for f, i in zip(key_convs, positions, strict=True)])

    if history:
        changed = {key_of(r, key_idx) for r in versions() if _seq(r[n]) > at}

        def at_rows() -> Iterator[tuple[Any, ...]]:
            for r in versions():
                valid_from, deleted, valid_to = _seq(r[n]), r[n + 1], r[n + 2]
                if valid_from <= at and (valid_to is None or _seq(valid_to) > at) and not deleted:
                    yield r[:n]

        compare(
            result,
            columns,
            key_names,
            source_rows,
            at_rows,
            max_diffs,
            keep_keys,
            only,
            unfilled_defaults=unfilled_defaults,
        )
        result.changed_since = sum(1 for k in changed if only is None or k in only)
        return result
    since = {key_of(r, key_idx) for r in versions() if _seq(r[n]) > at}
    tomb_idx = list(range(len(key_names)))
    since.update(key_of(r, tomb_idx) for r in tombstones() if _seq(r[len(key_names)]) > at)

    def current_rows() -> Iterator[tuple[Any, ...]]:
        for r in versions():
            if not r[n + 1] and _seq(r[n]) <= at:
                yield r[:n]

    compare(
        result,
        columns,
        key_names,
        source_rows,
        current_rows,
        max_diffs,
        keep_keys,
        only,
        exclude=since,
        unfilled_defaults=unfilled_defaults,
    )
    result.changed_since = sum(1 for k in since if only is None or k in only)
    if truncated is not None and truncated > at and result.missing:
        # The truncate removed the rows older than it: the source's rows at X are gone by design.
        result.changed_since += result.missing
        result.missing = 0
        result.samples = [d for d in result.samples if d.kind != "missing"]
        if result.keys is not None:
            result.keys["missing"] = []
        result.notes.append(
            "truncated in the source after the snapshot's position: the rows only in the source were not compared"
        )
    return result

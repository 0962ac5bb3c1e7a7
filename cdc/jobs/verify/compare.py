"""Compare one source table with its target: a digest per key on each side, joined by key.

Pass 1 reduces every row to (canonical key, 16-byte BLAKE2b of the canonical row), kept in
Arrow columns (tens of bytes per row, so a million-row table needs some tens of MB), and
joins the two sides with Arrow's hash join. Only when rows differ does pass 2 read both
sides again to fetch the sampled keys' values and name the columns that differ.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc.jobs.verify.normalize import Column, Converter, canon, converter

CHUNK = 100_000
_NULL = "\x00\x01"


@dataclass
class Difference:
    kind: str  # missing (in the target) | extra (in the target) | changed | duplicate (key in the target)
    key: dict[str, str | None]
    columns: list[tuple[str, str | None, str | None]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "key": self.key}
        if self.columns:
            out["columns"] = [{"column": c, "source": s, "target": t} for c, s, t in self.columns]
        return out


@dataclass
class TableResult:
    source: str
    target: str
    source_rows: int = 0
    target_rows: int = 0
    missing: int = 0
    extra: int = 0
    changed: int = 0
    duplicates: int = 0
    samples: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None  # why the table could not be compared
    # Every differing key (canonical text) by kind (missing, extra, changed, duplicate), when asked
    # for (`compare(keep_keys=True)`, for `cdc verify --repair`); not part of the JSON report.
    keys: dict[str, list[str]] | None = None
    # Online verify (online.py): keys the lake holds a change of after the source snapshot's position,
    # not compared (their later version is no difference); None when the comparison was not online.
    changed_since: int | None = None
    sampled: int | None = None  # --sample: the keys of the sample (source side), else None

    @property
    def differences(self) -> int:
        return self.missing + self.extra + self.changed + self.duplicates

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source,
            "target": self.target,
            "source_rows": self.source_rows,
            "target_rows": self.target_rows,
            "differences": self.differences,
            "missing": self.missing,
            "extra": self.extra,
            "changed": self.changed,
            "duplicates": self.duplicates,
            "samples": [d.to_json() for d in self.samples],
            "notes": self.notes,
            "skipped": self.skipped,
        }
        if self.changed_since is not None:
            out["changed_since"] = self.changed_since
        if self.sampled is not None:
            out["sampled"] = self.sampled
        return out


RowSource = Callable[[], Iterator[tuple[Any, ...]]]


def _converters(columns: list[Column], target: bool) -> list[Converter]:
    return [converter(c, target) for c in columns]


def _key(values: list[str | None]) -> str:
    """One key column's text as is (the common case, and cheap), several as a JSON list."""
    if len(values) == 1 and values[0] is not None and not values[0].startswith("["):
        return values[0]
    return json.dumps(values, ensure_ascii=False)


def _key_values(k: str, n: int) -> list[str | None]:
    return [k] if n == 1 and not k.startswith("[") else json.loads(k)


def _digest(values: list[str | None]) -> bytes:
    text = "\x1f".join(_NULL if v is None else v for v in values)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def digests(
    rows: Iterable[tuple[Any, ...]],
    columns: list[Column],
    key_idx: list[int],
    target: bool,
    defaults: list[str | None] | None = None,
    only: Container[str] | None = None,
    exclude: Container[str] | None = None,
) -> pa.Table:
    """(k: canonical key as JSON, h: row digest, a: digest with column DEFAULTs read as NULL) per row.

    `a` exists for rows holding a column's default (with `defaults`, compare's `unfilled_defaults`):
    after `ALTER TABLE … ADD COLUMN … DEFAULT` the database fills old rows without emitting change
    events, so a changelog (the Parquet target) has NULL there; the sink's tables are filled.
    `only`: the rows of these canonical keys alone (the others are skipped); `exclude`: skip these keys.
    """
    chunks: list[pa.Table] = []
    keys: list[str] = []
    hashes: list[bytes] = []
    alts: list[bytes | None] = []
    convs = _converters(columns, target)
    for row in rows:
        values = [f(v) for f, v in zip(convs, row, strict=True)]
        k = _key([values[i] for i in key_idx])
        if (only is not None and k not in only) or (exclude is not None and k in exclude):
            continue
        keys.append(k)
        hashes.append(_digest(values))
        alt = None
        if defaults:
            nulled = [None if d is not None and v == d else v for v, d in zip(values, defaults, strict=True)]
            alt = _digest(nulled) if nulled != values else None
        alts.append(alt)
        if len(keys) >= CHUNK:
            chunks.append(_chunk(keys, hashes, alts))
            keys, hashes, alts = [], [], []
    chunks.append(_chunk(keys, hashes, alts))
    return pa.concat_tables(chunks)


def _chunk(keys: list[str], hashes: list[bytes], alts: list[bytes | None]) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(keys, pa.string()),
            "h": pa.array(hashes, pa.binary(16)),
            "a": pa.array(alts, pa.binary(16)),
        }
    )


def _dedupe(side: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The side with one row per key, and the keys that occur more than once."""
    counts = side.group_by("k").aggregate([("h", "count")])
    dup = counts.filter(pc.greater(counts.column("h_count"), 1))
    if dup.num_rows == 0:
        return side, dup.select(["k"])
    rest = [c for c in side.column_names if c != "k"]
    first = side.group_by("k", use_threads=False).aggregate([(c, "first") for c in rest])
    return first.rename_columns([c.removesuffix("_first") for c in first.column_names]), dup.select(["k"])


def _first_keys(table: pa.Table, n: int) -> list[str]:
    if table.num_rows == 0 or n <= 0:
        return []
    keys = table.column("k")
    if pc.all(pc.match_substring_regex(keys, r"^\d+$")).as_py():  # integer keys: in numeric order
        order = pc.sort_indices(
            pa.table({"n": pc.utf8_length(keys), "k": keys}), sort_keys=[("n", "ascending"), ("k", "ascending")]
        )
    else:
        order = pc.sort_indices(keys)
    return pc.take(keys, order[:n]).to_pylist()


def _order(k: str) -> tuple[int, int, str]:
    return (0, len(k), k) if k.isdigit() else (1, 0, k)


def compare(
    result: TableResult,
    columns: list[Column],
    key_names: list[str],
    source_rows: RowSource,
    target_rows: RowSource,
    max_diffs: int,
    keep_keys: bool = False,
    only: Container[str] | None = None,
    exclude: Container[str] | None = None,
    unfilled_defaults: bool = False,
) -> TableResult:
    """Fill `result` with counts and up to `max_diffs` sample differences; `keep_keys`: every
    differing key too (`result.keys`); `only`: compare the rows of these canonical keys alone (a set,
    or a scope.TableScope: a key range, a sample); `exclude`: not the rows of these keys (online.py:
    changed since the snapshot).

    The sink's tables hold a column's DEFAULT in the rows stored before `ALTER TABLE … ADD COLUMN
    … DEFAULT` (it fills them), so a NULL there is a difference. `unfilled_defaults`: a target that
    only keeps events (the Parquet changelog) cannot have it, and a source row holding the
    column's DEFAULT where the target has NULL counts as equal, with a note."""
    key_idx = [next(i for i, c in enumerate(columns) if c.name == k) for k in key_names]
    defaults: list[str | None] = [
        None if not unfilled_defaults or c.default is None or i in key_idx else canon(c, c.default)
        for i, c in enumerate(columns)
    ]
    src = digests(
        source_rows(),
        columns,
        key_idx,
        False,
        defaults if any(d is not None for d in defaults) else None,
        only,
        exclude,
    )
    tgt = digests(target_rows(), columns, key_idx, target=True, only=only, exclude=exclude).select(["k", "h"])
    result.source_rows, result.target_rows = src.num_rows, tgt.num_rows
    src, src_dup = _dedupe(src)
    if src_dup.num_rows:
        result.notes.append(
            f"{src_dup.num_rows} key(s) occur more than once in the source, e.g. "
            f"{_key_text(key_names, _first_keys(src_dup, 1)[0])}: the key columns ({', '.join(key_names)}) "
            "do not identify rows; set sink.tables.<table>.keys"
        )
    tgt, tgt_dup = _dedupe(tgt)
    src = src.rename_columns(["k", "hs", "ha"])
    joined = src.join(tgt.rename_columns(["k", "ht"]), "k", join_type="full outer")
    missing = joined.filter(pc.is_null(joined.column("ht")))
    extra = joined.filter(pc.is_null(joined.column("hs")))
    both = joined.filter(pc.and_(pc.is_valid(joined.column("hs")), pc.is_valid(joined.column("ht"))))
    changed = both.filter(pc.not_equal(both.column("hs"), both.column("ht")))
    if tgt_dup.num_rows:  # counted as duplicates already
        changed = changed.filter(pc.invert(pc.is_in(changed.column("k"), tgt_dup.column("k"))))
    by_default = pc.fill_null(pc.equal(changed.column("ha"), changed.column("ht")), False)
    defaulted = pc.sum(by_default.cast(pa.int64())).as_py() or 0
    if defaulted:
        changed = changed.filter(pc.invert(by_default))
        result.notes.append(
            f"{defaulted} row(s) hold a column DEFAULT in the source where the target has NULL, counted as equal: "
            "rows unchanged since ALTER TABLE … ADD COLUMN … DEFAULT (the database emits no change events for them, "
            "and the changelog keeps only events)"
        )
    result.missing, result.extra, result.changed = missing.num_rows, extra.num_rows, changed.num_rows
    result.duplicates = tgt_dup.num_rows
    if keep_keys:
        result.keys = {
            kind: table.column("k").to_pylist()
            for kind, table in (("missing", missing), ("extra", extra), ("changed", changed), ("duplicate", tgt_dup))
        }
    if not result.differences or max_diffs <= 0:
        return result
    picked = sorted(
        [(k, "missing") for k in _first_keys(missing, max_diffs)]
        + [(k, "extra") for k in _first_keys(extra, max_diffs)]
        + [(k, "changed") for k in _first_keys(changed, max_diffs)]
        + [(k, "duplicate") for k in _first_keys(tgt_dup, max_diffs)],
        key=lambda p: (_order(p[0]), p[1]),
    )[:max_diffs]
    want = {k for k, kind in picked if kind == "changed"}
    src_values = _values_for(want, source_rows(), columns, key_idx, False) if want else {}
    tgt_values = _values_for(want, target_rows(), columns, key_idx, True) if want else {}
    for k, kind in picked:
        diff = Difference(kind, dict(zip(key_names, _key_values(k, len(key_names)), strict=True)))
        if kind == "changed" and k in src_values and k in tgt_values:
            s, t = src_values[k], tgt_values[k]
            diff.columns = [
                (c.name, a, b)
                for c, a, b, d in zip(columns, s, t, defaults, strict=True)
                if a != b and not (b is None and d is not None and a == d)
            ]
        result.samples.append(diff)
    return result


def _values_for(
    want: set[str], rows: Iterable[tuple[Any, ...]], columns: list[Column], key_idx: list[int], target: bool
) -> dict[str, list[str | None]]:
    """Canonical values of the rows whose key is in `want` (pass 2, only for sampled changes)."""
    found: dict[str, list[str | None]] = {}
    convs = _converters(columns, target)
    it = iter(rows)
    try:
        for row in it:
            k = _key([convs[i](row[i]) for i in key_idx])
            if k in want and k not in found:
                found[k] = [f(v) for f, v in zip(convs, row, strict=True)]
                if len(found) == len(want):
                    break
    finally:
        close = getattr(it, "close", None)
        if close is not None:  # a generator holding a server-side cursor: release it now
            close()
    return found


def _key_text(names: list[str], k: str) -> str:
    return ", ".join(f"{n}={v}" for n, v in zip(names, _key_values(k, len(names)), strict=True))

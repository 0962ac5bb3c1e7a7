"""The flattened form of a micro-batch's winners, shared by the two flattening paths
(`flatten.py`, row by row; `columns.py`, in Arrow): the row columns plus the sink's meta
columns, and how parts of different schema versions meet in one type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.decode.types import DEFAULT, TIME_UNIT, common_type, default_of, time_factor, time_unit

META_COLUMNS = ("__op", "__seq", "__source_ts_ms", "__deleted")
META_ARROW = [
    pa.field("__op", pa.string()),
    pa.field("__seq", pa.binary()),
    pa.field("__source_ts_ms", pa.int64()),
    pa.field("__deleted", pa.bool_()),
]


class ColumnTypeConflict(ValueError):
    """One column arrived with two different types in one micro-batch."""


@dataclass(frozen=True)
class FlatBatch:
    table: pa.Table
    key_columns: list[str]
    # Column → the winners' cells whose value the source did not send (Debezium's placeholder,
    # see unavailable.py); apply/unchanged.py settles each by sequence between the batch's
    # earlier events and the target's stored state.
    unchanged: Mapping[str, pa.Array] = dataclass_field(default_factory=dict)


Part = tuple[int, list[tuple[pa.Field, pa.Array]]]  # (rows, columns) of one schema version


def _finer(old: pa.Field, new: pa.Field) -> dict[bytes, bytes] | None:
    """The merged field's metadata: the newer's, with the older's DEFAULT (or none) and the finer
    of two time units (the coarser values are scaled to it)."""
    meta = dict(new.metadata or old.metadata or {})
    meta.pop(DEFAULT, None)
    if DEFAULT in (old.metadata or {}):
        meta[DEFAULT] = old.metadata[DEFAULT]
    units = [u for u in (time_unit(old), time_unit(new)) if u is not None]
    if len(units) == 2:
        meta[TIME_UNIT] = max(units, key=lambda u: time_factor(b"ms", u))
    return meta or None


def seq_span(seqs: pa.Array | pa.ChunkedArray) -> tuple[bytes, bytes]:
    """(earliest, latest) `__seq` of one part's events (merge_columns' `spans`)."""
    bounds = pc.min_max(seqs)
    return bounds["min"].as_py() or b"", bounds["max"].as_py() or b""


def merge_columns(
    topic: str, parts: list[Part], spans: list[tuple[bytes, bytes]] | None = None
) -> list[tuple[pa.Field, pa.Array]]:
    """Per column, the parts' arrays (one part per schema version) concatenated in the type that
    holds them all; a column a part lacks is null there, or its DEFAULT where all of the part's
    events precede every event that has the column (`spans`: each part's earliest and latest
    `__seq`): rows the database gave the default when the column was added, with no event."""
    fields: dict[str, pa.Field] = {}
    # Schema versions oldest first (by their earliest event) where known: a column's DEFAULT is
    # the one of the oldest version carrying it, nearest the ADD COLUMN that filled the rows
    # (a later SET DEFAULT did not change them).
    order = sorted(range(len(parts)), key=lambda i: spans[i][0]) if spans is not None else range(len(parts))
    for _, part in (parts[i] for i in order):
        for field, _ in part:
            old = fields.get(field.name)
            if old is None:
                fields[field.name] = field
                continue
            common = common_type(old.type, field.type)
            if common is None:
                raise ColumnTypeConflict(
                    f"topic {topic}: column {field.name!r} arrives as {old.type} and as {field.type} in one "
                    "micro-batch (events from both sides of a column type change), and no type holds both "
                    "exactly; the target table could not take the new type either. Fix: migrate the target "
                    f"column {field.name!r} to a type that holds both, or route the topic to a new table with "
                    "table.name.format (and re-snapshot it); then run `cdc run` again (or restart the query "
                    "from its checkpoint)."
                )
            fields[field.name] = pa.field(field.name, common, metadata=_finer(old, field))
    out = []
    for name, field in fields.items():
        chunks = []
        default = default_of(field) if spans is not None else None
        first = (
            min(spans[i][0] for i, (_, part) in enumerate(parts) if any(f.name == name for f, _ in part))
            if default is not None and spans is not None
            else None
        )
        for i, (n, part) in enumerate(parts):
            found = next(((f, a) for f, a in part if f.name == name), None)
            if found is None:
                # Events from before the column was added: the database gave those rows its DEFAULT.
                # Any other part lacking it (the column dropped since) holds NULL.
                early = default is not None and first is not None and spans is not None and spans[i][1] < first
                chunks.append(pa.repeat(default, n).cast(field.type) if early else pa.nulls(n, field.type))
                continue
            f, arr = found
            arr = arr.cast(field.type)
            unit, merged = time_unit(f), time_unit(field)
            if unit is not None and merged is not None and unit != merged:  # TIME(3) events beside TIME(6) ones
                arr = pc.multiply_checked(arr, pa.scalar(time_factor(unit, merged), field.type))
            chunks.append(arr)
        out.append((field, pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]))
    return out

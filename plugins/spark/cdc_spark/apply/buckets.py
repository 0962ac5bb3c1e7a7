"""The bucketed lake layout (Delta here, Iceberg in iceberg_layout.py): what lets Spark tasks
apply a micro-batch in parallel.

A table the sink creates is partitioned by one column, `__bucket`: each row's bucket is a
hash of its key (the change event's canonical key text, decode/events.py) modulo the table's
bucket count, kept in the table property `cdc.buckets` and fixed at creation. A key therefore
lives in exactly one bucket directory, and the task that owns a bucket can read the bucket's
files, apply the guarded changes and write their replacements without meeting another task's
key; the driver only commits the tasks' file actions (lake_parallel.py).

What a reader of the table sees: the row columns, the sink's `__seq`/`__op`/... columns, and
the `__bucket` partition column (an int, 0 ≤ b < cdc.buckets); readers that filter by key
may ignore it. OPTIMIZE (maintenance, or the user's own) compacts within a partition, so it
keeps the layout; VACUUM removes files no version references, including those a killed batch
wrote but never committed.

A table written by an earlier sink (no `cdc.buckets`, or other partition columns) is left in
its layout and applied on the driver as before (`layout_of` returns None); so are scd2
history tables, and tables a job sets `apply.on: driver` for. A table with partition.by
is partitioned by those columns, then `__bucket`; a task owns a bucket across all of them.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from pyspark.sql import Column

BUCKET = "__bucket"
PROPERTY = "cdc.buckets"
DEFAULT_BUCKETS = 16
# Delta's string statistics are prefixes in practice; longer values get none (still correct:
# a file without statistics for a column is never pruned by it).
_STATS_STRING_MAX = 32


def bucket_of(key: str, buckets: int) -> int:
    """A canonical key text's bucket: CRC-32 of its UTF-8 bytes modulo the bucket count. CRC-32
    is fixed by its standard, so the same key lands in the same bucket in every process and run
    (Python's hash() is salted per process). The sink computes it in Spark (`bucket_column`);
    this is the same rule for tools and readers asking which bucket holds a key."""
    return zlib.crc32(key.encode()) % buckets


def bucket_column(counts: Mapping[str, int]) -> Column:
    """`bucket_of` as a Spark column over the events' `topic` and canonical `key` (Spark's crc32
    is the standard CRC-32, as zlib's), with each topic's table's bucket count (`counts`)."""
    from pyspark.sql import functions as F

    sizes = set(counts.values())
    if len(sizes) == 1:
        n = F.lit(sizes.pop())
    else:
        n = F.create_map(*[F.lit(x) for pair in sorted(counts.items()) for x in pair])[F.col("topic")]
    return F.pmod(F.crc32(F.col("key").cast("binary")), n.cast("bigint")).cast("int")


@dataclass(frozen=True)
class DataFile:
    """One file of a bucket, as the table's log lists it, with the min/max statistics it has
    (column → (min, max)), which the tasks prune files by."""

    path: str  # relative to the table root, decoded (iceberg: the full path the manifests list)
    size: int
    bounds: Mapping[str, tuple[object, object]] = field(default_factory=dict)
    # delta, partition.by: the file's values of the table's own partition columns (typed, as
    # deltalake reads them from the log); its rows hold no such column, as Delta writes them.
    partition: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class FileAction:
    """A task's file action for the driver's commit: a file it wrote (`add`, its path relative
    to the table root) or one it replaced (`remove`, its path as the table lists it)."""

    kind: str  # add | remove
    path: str
    bucket: int
    size: int = 0
    stats: str | None = None  # delta adds: the file's statistics JSON (stats_json)
    partition: Mapping[str, str | None] = field(default_factory=dict)  # delta: partition.by values, as text


@dataclass(frozen=True)
class Layout:
    """A bucketed table as of the version the batch reads (picklable: shipped to the tasks)."""

    path: str  # the table root (iceberg: its location)
    buckets: int
    exists: bool
    version: int = -1
    schema: pa.Schema | None = None  # the row columns (without `__bucket`); None: no table yet
    files: dict[int, list[DataFile]] = field(default_factory=dict)  # bucket → its files
    kind: str = "delta"  # delta | iceberg (iceberg_layout.py)
    # iceberg: the table's columns with their field ids, `__bucket` included: the schema of
    # the files the tasks write (Iceberg readers find columns by id). Delta: None.
    file_schema: pa.Schema | None = None
    # delta: the table's partition.by columns, before `__bucket` (fixed at creation)
    partition_by: tuple[str, ...] = ()

    def in_bucket(self, bucket: int) -> list[DataFile]:
        return self.files.get(bucket, [])


def layout_of(path: str, default_buckets: int) -> Layout | None:
    """The table at `path` in the bucketed layout, a new one (not created yet), or None for a
    table in another layout (applied on the driver)."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(path):
        return Layout(path, default_buckets, exists=False)
    dt = DeltaTable(path)
    if not _bucketed(dt):
        return None
    count = dt.metadata().configuration[PROPERTY]
    partition_by = tuple(dt.metadata().partition_columns[:-1])
    schema = pa.schema([f for f in pa.schema(dt.schema().to_arrow()) if f.name != BUCKET])
    actions = pa.table(dt.get_add_actions(flatten=True))
    files: dict[int, list[DataFile]] = {}
    bounded = [c.removeprefix("min.") for c in actions.column_names if c.startswith("min.")]
    bounded = [c for c in bounded if f"max.{c}" in actions.column_names]
    for row in actions.to_pylist():
        bucket = int(row[f"partition.{BUCKET}"])
        bounds = {
            c: (row[f"min.{c}"], row[f"max.{c}"])
            for c in bounded
            if row[f"min.{c}"] is not None and row[f"max.{c}"] is not None
        }
        part = {c: row[f"partition.{c}"] for c in partition_by}
        files.setdefault(bucket, []).append(DataFile(unquote(row["path"]), int(row["size_bytes"]), bounds, part))
    return Layout(
        path, int(count), exists=True, version=dt.version(), schema=schema, files=files, partition_by=partition_by
    )


def in_layout(path: str) -> bool:
    """Whether the table at `path` is bucketed, or not there yet (the sink will create it so):
    the table's metadata only, not its files."""
    from deltalake import DeltaTable

    return not DeltaTable.is_deltatable(path) or _bucketed(DeltaTable(path, without_files=True))


def _bucketed(dt: DeltaTable) -> bool:
    """`cdc.buckets` set, and `__bucket` the last partition column (after partition.by's)."""
    meta = dt.metadata()
    columns = list(meta.partition_columns)
    return meta.configuration.get(PROPERTY) is not None and columns[-1:] == [BUCKET] and BUCKET not in columns[:-1]


def create(path: str, schema: pa.Schema, buckets: int, partition_by: tuple[str, ...] = ()) -> None:
    """The empty bucketed table (its files come in the batch's commit), partitioned by the
    table's partition.by columns, then `__bucket`. delta-rs checks table properties against
    Delta's own unless told not to; `cdc.buckets` is ours."""
    from deltalake import DeltaTable

    full = pa.schema([*schema, pa.field(BUCKET, pa.int32(), nullable=True)])
    DeltaTable.create(
        path,
        schema=full,
        mode="ignore",
        partition_by=[*partition_by, BUCKET],
        configuration={PROPERTY: str(buckets)},
        raise_if_key_not_exists=False,
    )


def file_name(bucket: int, unique: str) -> str:
    """A data file's path in the table, in the form Delta writers use."""
    return f"{BUCKET}={bucket}/part-00000-{unique}-c000.snappy.parquet"


def partition_text(value: object) -> str | None:
    """A partition value as the Delta log writes it (the protocol's "Partition Value
    Serialization"): null, a date as YYYY-MM-DD, a timestamp as `YYYY-MM-DD HH:MM:SS.ffffff`
    (UTC for a zoned one), a boolean as true/false, numbers and strings as their text."""
    import datetime as dt
    import decimal

    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, int | str | decimal.Decimal):
        return str(value)
    raise TypeError(f"a partition value of type {type(value).__name__} ({value!r})")


def full_path(root: str, relative: str) -> str:
    return os.path.join(root, relative)


def stats_json(table: pa.Table) -> str:
    """Delta's per-file statistics of `table` (numRecords, nullCount, and minValues/maxValues for
    integer, date and short string columns: the ones readers and our tasks prune by). Written
    here because deltalake 1.x writes statistics only for files it writes itself."""
    mins: dict[str, object] = {}
    maxs: dict[str, object] = {}
    nulls: dict[str, int] = {}
    for f in table.schema:
        col = table.column(f.name)
        if pa.types.is_nested(f.type):
            continue
        nulls[f.name] = col.null_count
        if col.null_count == len(col):
            continue
        t = f.type
        if pa.types.is_signed_integer(t):
            lo, hi = pc.min_max(col).values()
            mins[f.name], maxs[f.name] = lo.as_py(), hi.as_py()
        elif pa.types.is_date32(t):
            lo, hi = pc.min_max(col).values()
            mins[f.name], maxs[f.name] = lo.as_py().isoformat(), hi.as_py().isoformat()
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            longest = pc.max(pc.utf8_length(col)).as_py() or 0
            if longest <= _STATS_STRING_MAX:
                lo, hi = pc.min_max(col).values()
                mins[f.name], maxs[f.name] = lo.as_py(), hi.as_py()
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls})

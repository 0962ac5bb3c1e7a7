"""The Spark task's half of the parallel lake apply (Delta and Iceberg): one task owns whole
buckets (buckets.py) of each table and, for each, applies its keys' latest events to the
bucket's stored rows.

Per (table, bucket), in the task:
1. the bucket's events reduced to each key's latest (and the earlier events whose values a
   latest lacks), flattened, screened under errors.tolerance=all, conformed to the table;
2. the stored rows of the batch's keys found: files pruned by their key statistics, then the
   key column(s) of the rest read, then only the files holding a batch key read whole;
3. unsent values settled, remembered deletes applied, and the sequence guard decided per key
   exactly as the driver's MERGE does (delta.py): the newer of stored row and event wins;
4. the rewritten files and one file of new rows written as new Parquet files, never changed
   in place; their add actions and the replaced files' remove actions go back to the driver,
   which commits them all in one Delta transaction or Iceberg snapshot per table
   (lake_parallel.py). An Iceberg file carries the table's field ids and its `__bucket` column.

For an Iceberg table not created yet (the plan's `probe_main`/`probe_tombs`: its files need
the field ids the catalog assigns), the task reports the columns its rows would have instead
of writing them, and the driver creates the table and applies the batch again.

A task that fails leaves only files no table version references; the batch is replayed.
Memory: one bucket's events and the stored files holding its keys, whatever the batch size.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import socket
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pa_fs
import pyarrow.parquet as pq

from cdc_spark.apply import buckets as layout
from cdc_spark.apply.arrowutil import by_topic, drop_shadowed, for_lake, without_views
from cdc_spark.apply.config import SinkConfig, partition_columns
from cdc_spark.apply.errors import Refused, SinkConfigError, naming_keys, ours
from cdc_spark.apply.evolution import EVOLVE, TRY_EVOLVE, SchemaChange, check_lake_range, conform
from cdc_spark.apply.latest import latest_and_earlier, topic_marks
from cdc_spark.apply.refused import screen_lake
from cdc_spark.apply.unchanged import fill_from_stored, flatten_latest, needing
from cdc_spark.decode.flatbatch import FlatBatch

# What a task sends back, one row per file action, per applied table, per refused row.
RESULT = pa.schema(
    [
        ("kind", pa.string()),  # add | remove | columns | change | absent | applied | parked | blanked | kept | error
        ("topic", pa.string()),
        ("table", pa.string()),  # the lake table the action is for (the main table or its tombstones)
        ("path", pa.string()),
        ("size", pa.int64()),
        ("bucket", pa.int32()),
        ("stats", pa.string()),
        ("schema", pa.binary()),  # add, columns: the rows' Arrow schema (IPC); error: the packed error
        ("rows", pa.int64()),  # applied: rows written from the batch
        ("newest_ms", pa.int64()),  # applied: newest source commit time among the events
        ("partition", pa.int32()),  # parked: the event's topic partition and offset
        ("offset", pa.int64()),
        ("problem", pa.string()),
        ("error_class", pa.string()),
        ("deleted", pa.bool_()),
        ("worker", pa.string()),  # applied: the process that applied it (host:pid)
        ("values", pa.string()),  # add, remove (delta, partition.by): the file's partition values, JSON
    ]
)


@dataclass(frozen=True)
class TablePlan:
    """What the driver tells the tasks about one table (picklable)."""

    table: str
    main: layout.Layout
    tombs: layout.Layout | None  # delete.mode=hard: the remembered deletes, bucketed the same way
    soft: bool
    apply_main: bool  # False: the table already has this batch (a replay); only tombstones left
    apply_tombs: bool
    # Iceberg tables not created yet: report the rows' columns instead of writing files.
    probe_main: bool = False
    probe_tombs: bool = False


@dataclass(frozen=True)
class Plan:
    config: SinkConfig
    batch_id: int
    tables: Mapping[str, TablePlan]  # by table name
    schemas: Mapping[int, str] = field(default_factory=dict)  # the batch's value schemas (schemas.py)
    truncated: Mapping[str, bytes] = field(default_factory=dict)  # table → its last truncate's sequence


def filesystem(root: str) -> tuple[pa_fs.FileSystem, str]:
    """Arrow's filesystem for a table root (a local path, file://, s3://, gs://, ...)."""
    if "://" not in root:
        return pa_fs.LocalFileSystem(), os.path.abspath(root)
    fs, base = pa_fs.FileSystem.from_uri(root)
    return fs, base


def apply_buckets(batches: Iterator[pa.RecordBatch], plan: Plan) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over a partition holding whole buckets (a shuffle by table and bucket)."""
    received = list(batches)
    out = _Results()
    if received:
        rows = pa.Table.from_batches(received)
        for topic, part in sorted(by_topic(rows).items()):
            table = plan.config.table_for(topic)
            tp = plan.tables[table]
            marks = topic_marks(part["topic"], plan.truncated, plan.config.table_for)
            for bucket in sorted(pc.unique(part[layout.BUCKET]).to_pylist()):
                events = part.filter(pc.equal(part[layout.BUCKET], bucket))
                try:
                    BucketApply(plan, tp, topic, int(bucket), out).apply(events, marks)
                except Exception as e:
                    if not ours(e):
                        raise
                    # The driver raises it as it is (naming the table, key and fix), not as
                    # Spark's task failure with a worker traceback; nothing is committed.
                    out.add(kind="error", topic=topic, table=table, schema=pack_error(e))
                    yield out.batch()
                    return
    yield out.batch()


def pack_error(error: BaseException) -> bytes:
    """The task's own error for the driver to raise again (`unpack_error`): its class, args and
    attributes (the errors' constructors take other arguments than their args, so plain
    pickling of the instance cannot rebuild them)."""
    kind = type(error)
    try:
        return pickle.dumps((kind.__module__, kind.__qualname__, error.args, vars(error)))
    except Exception:  # an attribute that does not pickle: the message is what matters
        return pickle.dumps((kind.__module__, kind.__qualname__, error.args, {}))


def unpack_error(packed: bytes) -> BaseException:
    module, name, args, attributes = pickle.loads(packed)  # our own tasks' bytes, through Spark
    kind = getattr(importlib.import_module(module), name)
    error = kind.__new__(kind)
    BaseException.__init__(error, *args)
    vars(error).update(attributes)
    return error


class _Results:
    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []

    def add(self, **row: object) -> None:
        self.rows.append(row)

    def batch(self) -> pa.RecordBatch:
        columns = {f.name: [r.get(f.name) for r in self.rows] for f in RESULT}
        return pa.RecordBatch.from_pydict(columns, schema=RESULT)


class BucketApply:
    """One table's events of one bucket, applied to the bucket's files."""

    def __init__(self, plan: Plan, tp: TablePlan, topic: str, bucket: int, out: _Results) -> None:
        self.plan, self.tp, self.topic, self.bucket, self.out = plan, tp, topic, bucket, out
        self.config = plan.config

    def apply(self, events: pa.Table, marks: Mapping[str, bytes]) -> None:
        config, table = self.config, self.tp.table
        options = config.options_for(table)
        partial_topics = {self.topic} if options.ignore_null_updates else set()
        winners, earlier = latest_and_earlier(events, marks, config.placeholder, partial_topics)
        if winners.num_rows == 0:
            return
        flat = flatten_latest(self.topic, winners, earlier, self.plan.schemas, config.placeholder, options, table)
        newest = _newest(winners)  # refused rows count too: their events were read
        if config.errors_tolerance == "all":

            def reflatten(kept: pa.Table) -> FlatBatch:
                return flatten_latest(self.topic, kept, earlier, self.plan.schemas, config.placeholder, options, table)

            screened = screen_lake(table, winners, flat, reflatten)
            flat = screened.flat
            for refused in screened.refused:
                self._park(winners, refused)
            for problem in screened.blanked:
                self.out.add(kind="blanked", topic=self.topic, table=table, problem=problem)
            winners = screened.rows
        if flat.table.num_rows:
            with naming_keys(table, flat):  # errors name the table and key, and stop the query
                self._apply(flat)
        self.out.add(
            kind="applied",
            topic=self.topic,
            table=table,
            rows=flat.table.num_rows,
            newest_ms=newest,
            worker=f"{socket.gethostname()}:{os.getpid()}",
        )

    def _park(self, rows: pa.Table, refused: Refused) -> None:
        event = rows.slice(refused.row, 1).select(["partition", "offset"]).to_pylist()[0]
        self.out.add(
            kind="parked",
            topic=self.topic,
            table=self.tp.table,
            partition=event["partition"],
            offset=event["offset"],
            problem=refused.problem,
            error_class=refused.error_class,
            deleted=refused.deleted,
        )

    def _apply(self, flat: FlatBatch) -> None:
        tp, table, keys = self.tp, self.tp.table, flat.key_columns
        source = for_lake(flat.table, table)
        check_lake_range(table, source)
        behavior = self.config.options_for(table).schema_change_behavior
        if behavior in (EVOLVE, TRY_EVOLVE) and tp.main.schema is not None:
            # Which of the table's columns this bucket's events lack: the driver drops those no
            # bucket's events carry (lake_parallel.py), after the commit.
            absent = [
                f.name for f in tp.main.schema if f.name not in source.column_names and not f.name.startswith("__")
            ]
            self.out.add(kind="absent", topic=self.topic, table=table, bucket=self.bucket, problem=",".join(absent))
        source, change = conform(table, tp.main.schema or pa.schema([]), source, behavior, drops=False)
        if self._must_change(table, source, keys, change):
            return
        main = BucketFiles(tp.main, self.bucket)
        tombs = BucketFiles(tp.tombs, self.bucket) if tp.tombs is not None else None
        stored, holding = main.rows_with_keys(source, keys)
        if flat.unchanged:
            wanted = needing(source, flat.unchanged)
            deleted = tombs.rows_with_keys(wanted, keys)[0] if tombs is not None else None
            source, kept = fill_from_stored(source, flat.unchanged, stored, keys, deleted)
            if kept:  # the driver warns (the tasks' logs are not the job's)
                rows = needing(source, kept).num_rows
                self.out.add(kind="kept", topic=self.topic, table=table, rows=rows, problem=",".join(sorted(kept)))
        if tp.apply_main and tp.probe_main:
            self._columns(table, source)
        elif tp.apply_main:
            applied = source
            if tombs is not None:
                applied = drop_shadowed(source, tombs.rows_with_keys(source, keys)[0], keys)
            merged = guarded_merge(stored, applied, keys, keep_deletes=tp.soft)
            self._replace(main, table, holding, merged)
        if tombs is not None and tp.apply_tombs:
            deletes = source.filter(source.column("__deleted"))
            if deletes.num_rows:
                deletes = _tombstones(deletes, keys)
                remembered, files = tombs.rows_with_keys(deletes, keys)
                if tp.tombs is not None and tp.tombs.schema is not None:
                    deletes, _ = conform(table + "__tombstones", tp.tombs.schema, deletes)
                if tp.probe_tombs:
                    self._columns(table + "__tombstones", deletes)
                else:
                    self._replace(tombs, table + "__tombstones", files, guarded_merge(remembered, deletes, keys, True))

    def _must_change(self, table: str, source: pa.Table, keys: list[str], change: SchemaChange) -> bool:
        """Whether stored values must change before this bucket can be applied: a new type or a
        dropped column of the table (`change`), or a key type its tombstone table does not have
        yet (the key columns follow the table's). Each such table is reported (`change`) and
        nothing is written; the driver rewrites them (schema_rewrite.py), then applies the
        batch again to the rewritten files. A column added with a DEFAULT is such a change too
        (its stored rows take the default): the report carries the default (SchemaChange.reported)."""
        tp, must = self.tp, False
        if change.rewrites and tp.apply_main and tp.main.exists:
            self._columns(table, source, kind="change", change=change)
            must = True
        if tp.tombs is not None and tp.tombs.exists and tp.tombs.schema is not None:
            probe = _tombstones(source.slice(0, 0), keys)
            conformed, tomb_change = conform(table + "__tombstones", tp.tombs.schema, probe)
            if tomb_change.rewrites:
                self._columns(table + "__tombstones", conformed, kind="change")
                must = True
        return must

    def _columns(self, table: str, rows: pa.Table, kind: str = "columns", change: SchemaChange | None = None) -> None:
        """Report the columns `rows` have instead of writing them: for a table not created yet
        (`columns`), or one whose stored values must change first (`change`, whose added columns'
        DEFAULTs stay in their field metadata; only the schema's own metadata is left out)."""
        reported = change.reported(rows.schema) if change is not None else rows.schema
        schema = reported.remove_metadata().serialize().to_pybytes()
        self.out.add(kind=kind, topic=self.topic, table=table, bucket=self.bucket, schema=schema)

    def _replace(self, files: BucketFiles, table: str, old: list[layout.DataFile], rows: pa.Table) -> None:
        """Write `rows` (the bucket's new content for the files `old`) as new files (one per
        partition.by value); remove `old`."""
        schema = rows.schema.remove_metadata().serialize().to_pybytes()
        for path, size, values, written in files.write(rows) if rows.num_rows else []:
            self.out.add(
                kind="add",
                topic=self.topic,
                table=table,
                path=path,
                size=size,
                bucket=self.bucket,
                stats=layout.stats_json(written) if files.layout.kind == "delta" else None,
                schema=schema,
                values=json.dumps(values) if values else None,
            )
        for f in old:
            values = {c: layout.partition_text(v) for c, v in f.partition.items()}
            self.out.add(
                kind="remove",
                topic=self.topic,
                table=table,
                path=f.path,
                size=f.size,
                bucket=self.bucket,
                values=json.dumps(values) if values else None,
            )


class BucketFiles:
    """One bucket's files of a table: read what holds given keys, write a new file."""

    def __init__(self, lay: layout.Layout, bucket: int) -> None:
        self.layout, self.bucket = lay, bucket
        self.fs, self.base = filesystem(lay.path)

    def rows_with_keys(self, wanted: pa.Table, keys: list[str]) -> tuple[pa.Table, list[layout.DataFile]]:
        """The stored rows whose key is one of `wanted`'s, and the files that hold them."""
        schema = self.layout.schema
        if schema is None or wanted.num_rows == 0:
            return _empty(schema, wanted), []
        candidates = _pruned(self.layout.in_bucket(self.bucket), wanted, keys)
        if not candidates:
            return _empty(schema, wanted), []
        want = wanted.select(keys).cast(pa.schema([schema.field(k) for k in keys])).group_by(keys).aggregate([])
        holding: list[layout.DataFile] = []
        for f in candidates:
            ks = self._read(f, keys)
            if ks.num_rows and ks.join(want, keys, join_type="inner").num_rows:
                holding.append(f)
        if not holding:
            return _empty(schema, wanted), []
        stored = pa.concat_tables([self._read(f, schema.names) for f in holding])
        return stored, holding

    def _read(self, f: layout.DataFile, columns: list[str]) -> pa.Table:
        """A file's columns in the table's types (files written before a column was added lack
        it; deltalake ≥ 1.6 writes view types)."""
        schema = self.layout.schema
        assert schema is not None
        if self.layout.kind == "iceberg":  # the full path, as the manifests list it
            fs, path = filesystem(f.path)
        else:
            fs, path = self.fs, f"{self.base}/{f.path}"
        present = set(pq.read_schema(path, filesystem=fs).names) - set(f.partition)
        data = pq.read_table(path, columns=[c for c in columns if c in present], filesystem=fs)
        data = data.cast(without_views(data.schema))
        n = data.num_rows
        arrays = []
        for c in columns:
            kind = schema.field(c).type
            if c in present:
                arrays.append(data.column(c).cast(kind))
            elif c in f.partition:  # a partition.by column: its value is the file's, in the log
                arrays.append(pa.array([f.partition[c]] * n).cast(kind))
            else:  # a column added after the file was written
                arrays.append(pa.nulls(n, kind))
        return pa.Table.from_arrays(arrays, schema=pa.schema([schema.field(c) for c in columns]))

    def write(self, rows: pa.Table) -> list[tuple[str, int, dict[str, str | None], pa.Table]]:
        """New files of `rows`, one per value of the table's partition.by columns (Delta keeps
        those values in the log, not in the file): each file's path relative to the table root,
        its size, its partition values as the log writes them, and the rows it holds."""
        out = []
        for values, part in _by_partition(rows, self.layout.partition_by, self.layout.path):
            if self.layout.kind == "iceberg":
                relative = f"data/{layout.BUCKET}={self.bucket}/00000-0-{uuid.uuid4()}.parquet"
                part = _iceberg_file(part, self.bucket, self.layout.file_schema)
            else:
                # The log's partitionValues are what readers use; the directory is only the bucket's.
                relative = layout.file_name(self.bucket, str(uuid.uuid4()))
            path = f"{self.base}/{relative}"
            self.fs.create_dir(os.path.dirname(path), recursive=True)
            pq.write_table(part, path, filesystem=self.fs, compression="snappy")
            out.append((relative, self.fs.get_file_info(path).size, values, part))
        return out


def _by_partition(rows: pa.Table, columns: tuple[str, ...], table: str) -> list[tuple[dict[str, str | None], pa.Table]]:
    """`rows` split by the values of the partition.by `columns`, each part without them."""
    if not columns:
        return [({}, rows)]
    name = table.rstrip("/").rsplit("/", 1)[-1]
    partition_columns(name, {name: columns}, rows.column_names)  # each is a column, or one line saying which not
    indexed = rows.append_column("__row", pa.array(range(rows.num_rows), pa.int64()))
    groups = indexed.group_by(list(columns), use_threads=False).aggregate([("__row", "list")])
    out = []
    for group in groups.to_pylist():
        try:
            values = {c: layout.partition_text(group[c]) for c in columns}
        except TypeError as e:
            raise SinkConfigError(
                f"partition.by for table {name}: {e} cannot be a Delta partition "
                "value here; partition by a string, integer, decimal, date, timestamp or boolean column, or set "
                "apply.on: driver"
            ) from None
        part = rows.take(pa.array(group["__row_list"], pa.int64())).drop_columns(list(columns))
        out.append((values, part))
    return out


def _iceberg_file(rows: pa.Table, bucket: int, schema: pa.Schema | None) -> pa.Table:
    """`rows` as an Iceberg data file of the bucket: the table's columns in its order, with
    their field ids and `__bucket`. Columns the table does not have yet are left out: the
    driver sees them in the add's reported schema, adds them and applies the batch again."""
    assert schema is not None
    n = rows.num_rows
    arrays = []
    for f in schema:
        if f.name == layout.BUCKET:
            arrays.append(pa.array([bucket] * n, f.type))
        elif f.name in rows.column_names:
            arrays.append(rows.column(f.name).cast(f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _tombstones(deletes: pa.Table, keys: list[str]) -> pa.Table:
    """The tombstone rows of the batch's deletes: their keys, sequence and time."""
    now = pa.array([int(time.time() * 1000)] * deletes.num_rows, pa.int64())
    return deletes.select([*keys, "__seq"]).append_column("__deleted_at_ms", now)


def guarded_merge(stored: pa.Table, source: pa.Table, keys: list[str], keep_deletes: bool) -> pa.Table:
    """The new content of the files `stored` came from: per key, the newer of stored row and
    event by `__seq` (delta.py's MERGE). Deletes remove the row, or stay as rows with
    `__deleted=true` (`keep_deletes`: soft deletes, and the tombstone table itself)."""
    source = source.select([c for c in source.column_names if c != layout.BUCKET])
    if stored.num_rows == 0:
        winners = source
    else:
        stored = _aligned_to(stored, source.schema)
        s_keys = source.select([*keys, "__seq"]).rename_columns([*keys, "__s_seq"])
        t_keys = stored.select([*keys, "__seq"]).rename_columns([*keys, "__t_seq"])
        # Stored rows an event outranks go; the rest stay.
        t_join = stored.append_column("__t_row", pa.array(range(stored.num_rows), pa.int64()))
        t_join = t_join.select([*keys, "__t_row", "__seq"]).join(s_keys, keys, join_type="left outer")
        beaten = t_join.filter(pc.fill_null(pc.greater(t_join["__s_seq"], t_join["__seq"]), False))
        gone = pc.is_in(pa.array(range(stored.num_rows), pa.int64()), value_set=beaten["__t_row"].combine_chunks())
        kept = stored.filter(pc.invert(gone))
        # Events a stored row outranks (or equals: a replayed event) are dropped.
        s_join = source.append_column("__s_row", pa.array(range(source.num_rows), pa.int64()))
        s_join = s_join.select([*keys, "__s_row", "__seq"]).join(t_keys, keys, join_type="left outer")
        lost = s_join.filter(pc.fill_null(pc.less_equal(s_join["__seq"], s_join["__t_seq"]), False))
        out = pc.is_in(pa.array(range(source.num_rows), pa.int64()), value_set=lost["__s_row"].combine_chunks())
        winners = source.filter(pc.invert(out))
        winners = pa.concat_tables([kept, winners]) if kept.num_rows else winners
    if not keep_deletes and "__deleted" in winners.column_names:
        winners = winners.filter(pc.invert(pc.fill_null(winners["__deleted"], False)))
    return winners


def _aligned_to(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """`rows` with `schema`'s columns in its order and types (nulls where `rows` lacks one)."""
    arrays = [
        rows.column(f.name).cast(f.type) if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _pruned(files: list[layout.DataFile], wanted: pa.Table, keys: list[str]) -> list[layout.DataFile]:
    """The files whose key statistics admit one of `wanted`'s keys (single-column keys)."""
    if len(keys) != 1 or not files:
        return files
    values = pc.unique(wanted.column(keys[0])).to_pylist()
    values = [v for v in values if v is not None]
    if not values:
        return files
    out = []
    for f in files:
        lo, hi = f.bounds.get(keys[0], (None, None))
        # Writers may cut long string statistics short (a cut maximum is below the real one).
        cut = isinstance(hi, str) and len(hi) >= 32
        if lo is None or hi is None or cut:
            out.append(f)
            continue
        try:
            if any(lo <= v <= hi for v in values):  # type: ignore[operator]
                out.append(f)
        except TypeError:  # statistics in another type than the column's values: do not prune
            out.append(f)
    return out


def _empty(schema: pa.Schema | None, like: pa.Table) -> pa.Table:
    return (schema if schema is not None else like.schema).empty_table()


def _newest(events: pa.Table) -> int | None:
    if "__source_ts_ms" not in events.column_names or events.num_rows == 0:
        return None
    newest = pc.max(events["__source_ts_ms"]).as_py()
    return int(newest) if newest is not None else None

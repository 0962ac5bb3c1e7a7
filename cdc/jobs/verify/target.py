"""Reading the current rows of a sink's tables: Delta (delta-rs), Iceberg (pyiceberg), the
Parquet changelog (reduced to each key's latest event) and PostgreSQL (psycopg).

Current means what a reader of the table should see: rows marked `__deleted` are left
out, and of SCD2 history only the open version (`__valid_to IS NULL`) counts.

For the online verify (online.py) each reader also gives every stored row with its sequence
(`versions`: deleted rows and closed SCD2 versions too), the remembered deletes of a hard-delete
table (`tombstones`, the sibling `<table>__tombstones`) and the table's last truncate
(`truncated`, from `_cdc_truncates`), in the sink's own layout (cdc_spark.apply owns the names).

Each read takes an optional `scope` (scope.py: a key range, a sample, a set of keys): the readers push
its range into the scan (a Delta dataset filter, an Iceberg row filter, a PostgreSQL WHERE) and drop the
rows outside it from each Arrow batch before any row becomes a tuple.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from cdc.api import libpq_tls
from cdc.api.errors import ConfigException
from cdc.jobs.sink_config import sink_config
from cdc.jobs.source_db import sink_conninfo
from cdc.jobs.spec import JobSpec
from cdc.jobs.verify.scope import filtered

if TYPE_CHECKING:
    from cdc.jobs.verify.scope import TableScope

BATCH = 20_000
_EVENT_COLUMNS = ["key", "value", "__op", "__seq", "__source_ts_ms", "__deleted"]
DELETED, VALID_TO, VALID_FROM, SEQ = "__deleted", "__valid_to", "__valid_from", "__seq"


def table_name(topic: str) -> str:
    """The sink's table for a topic (SinkConfig.table_for with the default `${topic}` format)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", topic)


class TargetReader(Protocol):
    kind: str

    def name_for(self, topic: str) -> str: ...

    def describe(self, table: str) -> str: ...

    def columns(self, table: str) -> list[str] | None:
        """All column names, or None when the table does not exist."""
        ...

    def rows(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]: ...

    def versions(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        """Every stored row: `columns`, then its sequence (`__valid_from` of an SCD2 version, else
        `__seq`), whether it is a delete (`__deleted`), and `__valid_to` (None but for closed SCD2 versions)."""
        ...

    def tombstones(self, table: str, keys: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        """The remembered deletes of a hard-delete table: `keys`, then the delete's sequence."""
        ...

    def truncated(self, table: str) -> bytes | None:
        """The sequence of the table's last applied truncate (or completed snapshot), if any."""
        ...

    def close(self) -> None: ...


def _current_mask(batch: pa.RecordBatch | pa.Table) -> pa.Array | None:
    mask = None
    names = batch.schema.names
    if DELETED in names:
        mask = pc.invert(pc.fill_null(batch.column(DELETED), False))
    if VALID_TO in names:
        open_ = pc.is_null(batch.column(VALID_TO))
        mask = open_ if mask is None else pc.and_(mask, open_)
    return mask


def _arrow_rows(
    batches: Iterator[pa.RecordBatch], columns: list[str], scope: TableScope | None = None
) -> Iterator[tuple[Any, ...]]:
    for batch in batches:
        mask = _current_mask(batch)
        if mask is not None:
            batch = batch.filter(mask)
        batch = filtered(batch, scope)
        if batch.num_rows:
            yield from zip(*(batch.column(c).to_pylist() for c in columns), strict=True)


def _with_meta(columns: list[str], available: list[str]) -> list[str]:
    return list(dict.fromkeys([*columns, *(m for m in (DELETED, VALID_TO) if m in available)]))


def _version_columns(columns: list[str], available: list[str]) -> list[str]:
    seq = VALID_FROM if VALID_FROM in available else SEQ
    return list(dict.fromkeys([*columns, seq, *(m for m in (DELETED, VALID_TO) if m in available)]))


def _version_rows(
    batches: Iterator[pa.RecordBatch], columns: list[str], scope: TableScope | None = None
) -> Iterator[tuple[Any, ...]]:
    """`columns` + (sequence, deleted, valid_to) of every row (versions())."""
    for batch in batches:
        batch = filtered(batch, scope)
        if not batch.num_rows:
            continue
        names = batch.schema.names
        n = batch.num_rows
        seq = batch.column(VALID_FROM if VALID_FROM in names else SEQ).to_pylist()
        deleted = batch.column(DELETED).to_pylist() if DELETED in names else [False] * n
        valid_to = batch.column(VALID_TO).to_pylist() if VALID_TO in names else [None] * n
        values = [batch.column(c).to_pylist() for c in columns]
        yield from zip(*values, seq, deleted, valid_to, strict=True)


def _plain_rows(
    batches: Iterator[pa.RecordBatch], columns: list[str], scope: TableScope | None = None
) -> Iterator[tuple[Any, ...]]:
    for batch in batches:
        batch = filtered(batch, scope)
        if batch.num_rows:
            yield from zip(*(batch.column(c).to_pylist() for c in columns), strict=True)


def _truncate_mark(rows: list[dict[str, Any]], table: str) -> bytes | None:
    marks = [bytes(r["seq"]) for r in rows if r.get("table_name") == table and r.get("seq") is not None]
    return max(marks) if marks else None


def _scan(dataset: Any, columns: list[str], scope: TableScope | None) -> Iterator[pa.RecordBatch]:
    """The dataset's batches of `columns`, with the scope's range as the scan's filter (the files and row
    groups whose statistics lie outside it are not read)."""
    condition = scope.arrow_filter(dataset.schema) if scope is not None else None
    return dataset.to_batches(columns=columns, filter=condition, batch_size=BATCH)


class DeltaReader:
    name_for = staticmethod(table_name)
    kind = "delta"

    def __init__(self, root: str) -> None:
        self.root = root

    def describe(self, table: str) -> str:
        return os.path.join(self.root, table)

    def columns(self, table: str) -> list[str] | None:
        from deltalake import DeltaTable

        path = self.describe(table)
        if not DeltaTable.is_deltatable(path):
            return None
        return list(pa.schema(DeltaTable(path).schema().to_arrow()).names)

    def rows(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        dataset = self._dataset(table)
        wanted = _with_meta(columns, dataset.schema.names)
        return _arrow_rows(_scan(dataset, wanted, scope), columns, scope)

    def _dataset(self, table: str) -> Any:
        from deltalake import DeltaTable

        from cdc_spark.apply.arrowutil import delta_dataset

        path = self.describe(table)
        return delta_dataset(DeltaTable(path), path) if DeltaTable.is_deltatable(path) else None

    def versions(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        dataset = self._dataset(table)
        if dataset is None:
            return iter(())
        wanted = _version_columns(columns, dataset.schema.names)
        return _version_rows(_scan(dataset, wanted, scope), columns, scope)

    def tombstones(self, table: str, keys: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        from cdc_spark.apply.delta import TOMBSTONE_SUFFIX

        dataset = self._dataset(table + TOMBSTONE_SUFFIX)
        if dataset is None:
            return iter(())
        return _plain_rows(_scan(dataset, [*keys, SEQ], scope), [*keys, SEQ], scope)

    def truncated(self, table: str) -> bytes | None:
        from cdc_spark.apply.delta import TRUNCATES

        dataset = self._dataset(TRUNCATES)
        if dataset is None:
            return None
        return _truncate_mark(dataset.to_table(columns=["table_name", "seq"]).to_pylist(), table)

    def close(self) -> None:
        pass


class IcebergReader:
    name_for = staticmethod(table_name)
    kind = "iceberg"

    def __init__(self, catalog: Mapping[str, Any], namespace: str) -> None:
        """`catalog`: the sink's catalog mapping, opened as the sink opens it (any pyiceberg catalog)."""
        from cdc_spark.apply.iceberg_catalog import open_catalog, parse_catalog

        spec = parse_catalog(catalog)
        # No SQLite catalog file yet means no tables yet (opening it would create one).
        missing = spec.sqlite_file is not None and not os.path.exists(spec.sqlite_file)
        self.catalog = None if missing else open_catalog(spec)
        self.namespace = namespace

    def describe(self, table: str) -> str:
        return f"{self.namespace}.{table}"

    def _load(self, table: str) -> Any:
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        if self.catalog is None:
            return None
        try:
            return self.catalog.load_table((self.namespace, table))
        except (NoSuchTableError, NoSuchNamespaceError):
            return None

    def columns(self, table: str) -> list[str] | None:
        tbl = self._load(table)
        return None if tbl is None else list(tbl.schema().as_arrow().names)

    @staticmethod
    def _scan(tbl: Any, columns: list[str], scope: TableScope | None) -> Iterator[pa.RecordBatch]:
        """The table's batches of `columns`, the scope's range as the scan's row filter (pyiceberg skips
        the files whose manifest statistics lie outside it)."""
        condition = scope.iceberg_filter(tbl.schema().as_arrow()) if scope is not None else None
        scan = (
            tbl.scan(selected_fields=tuple(columns))
            if condition is None
            else tbl.scan(selected_fields=tuple(columns), row_filter=condition)
        )
        return iter(scan.to_arrow_batch_reader())

    def rows(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        tbl = self._load(table)
        wanted = _with_meta(columns, tbl.schema().as_arrow().names)
        return _arrow_rows(self._scan(tbl, wanted, scope), columns, scope)

    def versions(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        tbl = self._load(table)
        if tbl is None:
            return iter(())
        wanted = _version_columns(columns, tbl.schema().as_arrow().names)
        return _version_rows(self._scan(tbl, wanted, scope), columns, scope)

    def tombstones(self, table: str, keys: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        from cdc_spark.apply.iceberg import TOMBSTONE_SUFFIX

        tbl = self._load(table + TOMBSTONE_SUFFIX)
        if tbl is None:
            return iter(())
        return _plain_rows(self._scan(tbl, [*keys, SEQ], scope), [*keys, SEQ], scope)

    def truncated(self, table: str) -> bytes | None:
        from cdc_spark.apply.iceberg import TRUNCATES

        tbl = self._load(TRUNCATES)
        if tbl is None:
            return None
        return _truncate_mark(tbl.scan(selected_fields=("table_name", "seq")).to_arrow().to_pylist(), table)

    def close(self) -> None:
        pass


class ParquetChangelogReader:
    """The changelog keeps every event; the current row of a key is its latest event's row.

    The winners of a topic are decoded with the sink's own flattening (cdc_spark.decode),
    so the columns and types are those a Delta table of the same topic would have.
    """

    kind = "parquet"

    @staticmethod
    def name_for(topic: str) -> str:
        return topic  # the changelog is partitioned by the topic itself

    def __init__(self, root: str) -> None:
        self.root = root
        self._cache: dict[str, list[pa.Table] | None] = {}

    def describe(self, table: str) -> str:
        return f"{self.root} (topic {table})"

    def _flat(self, topic: str) -> list[pa.Table] | None:
        """Each key's latest event since the last truncate, deletes included (`__deleted`)."""
        if topic not in self._cache:
            self._cache[topic] = self._read(topic)
        return self._cache[topic]

    def _events(self, topic: str) -> pa.Table | None:
        import pyarrow.dataset as ds

        if not os.path.isdir(self.root):
            return None
        dataset = ds.dataset(self.root, format="parquet", partitioning="hive")
        if "topic" not in dataset.schema.names:
            return None
        events = dataset.to_table(columns=[*_EVENT_COLUMNS, "batch_id"], filter=ds.field("topic") == topic)
        return events if events.num_rows else None

    def _read(self, topic: str) -> list[pa.Table] | None:
        events = self._events(topic)
        if events is None:
            return None
        truncates = events.filter(pc.equal(events.column("__op"), "t"))
        if truncates.num_rows:
            last = pc.max(truncates.column("__seq"))
            events = events.filter(pc.greater(events.column("__seq"), last))
        events = events.filter(pc.not_equal(events.column("__op"), "t"))
        order = pc.sort_indices(
            events, sort_keys=[("key", "ascending"), ("__seq", "descending"), ("batch_id", "descending")]
        )
        events = events.take(order)
        keys = events.column("key").combine_chunks()
        # Sorted by key, then newest first: a key's winner is the first row of its run.
        first = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))
        winners = events.filter(pa.concat_arrays([pa.array([True]), first])) if events.num_rows else events
        winners = winners.select(_EVENT_COLUMNS).set_column(1, "value", winners.column("value").cast(pa.binary()))
        from cdc_spark.decode.flatten import flatten

        return [flatten(topic, winners.slice(i, BATCH)).table for i in range(0, winners.num_rows, BATCH)]

    def columns(self, table: str) -> list[str] | None:
        flat = self._flat(table)
        if flat is None:
            return None
        return list(dict.fromkeys(n for t in flat for n in t.column_names))

    def _tables(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[pa.Table]:
        for t in self._flat(table) or []:
            missing = [c for c in columns if c not in t.column_names]
            for c in missing:
                t = t.append_column(c, pa.nulls(t.num_rows))
            yield filtered(t, scope)

    def rows(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        for t in self._tables(table, columns, scope):
            if DELETED in t.column_names:
                t = t.filter(pc.invert(pc.fill_null(t.column(DELETED), False)))
            yield from zip(*(t.column(c).to_pylist() for c in columns), strict=True)

    def versions(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        return _version_rows((b for t in self._tables(table, columns, scope) for b in t.to_batches()), columns)

    def tombstones(self, table: str, keys: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        return iter(())  # a delete is the key's latest event itself (versions())

    def truncated(self, table: str) -> bytes | None:
        events = self._events(table)
        if events is None:
            return None
        truncates = events.filter(pc.equal(events.column("__op"), "t"))
        return bytes(pc.max(truncates.column("__seq")).as_py()) if truncates.num_rows else None

    def close(self) -> None:
        self._cache.clear()


class PostgresReader:
    name_for = staticmethod(table_name)
    kind = "postgres"

    def __init__(self, dsn: str, schema: str) -> None:
        import psycopg

        self.schema = schema
        try:
            self.conn = psycopg.connect(dsn, connect_timeout=10, autocommit=True)
        except psycopg.Error as e:
            fix = libpq_tls.advice(str(e), "sink.") or "check sink.dsn"
            raise ConfigException(
                f"cannot connect to the sink database ({libpq_tls.first_line(e)}); {fix}", "sink.dsn"
            ) from None

    def describe(self, table: str) -> str:
        return f"{self.schema}.{table}"

    def columns(self, table: str) -> list[str] | None:
        rows = self.conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position",
            (self.schema, table),
        ).fetchall()
        return [r[0] for r in rows] or None

    def rows(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        from psycopg import sql

        available = self.columns(table) or []
        where = [sql.SQL("{} IS NOT TRUE").format(sql.Identifier(DELETED))] if DELETED in available else []
        if VALID_TO in available:
            where.append(sql.SQL("{} IS NULL").format(sql.Identifier(VALID_TO)))
        yield from self._select(table, sql.SQL(", ").join(map(sql.Identifier, columns)), where, scope)

    def _types(self, table: str) -> dict[str, str]:
        rows = self.conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
            (self.schema, table),
        ).fetchall()
        return {r[0]: r[1] for r in rows}

    def _select(
        self, table: str, columns: Any, where: list[Any], scope: TableScope | None
    ) -> Iterator[tuple[Any, ...]]:
        """`SELECT columns FROM table WHERE …`, with the scope's range and sample where they can be pushed
        down (scope.postgres_where)."""
        from psycopg import sql

        pushed = scope.postgres_where(self._types(table)) if scope is not None else None
        params: list[Any] | None = None
        if pushed is not None:
            where = [*where, pushed[0]]
            params = pushed[1]
        query = sql.SQL("SELECT {} FROM {}{}").format(
            columns,
            sql.Identifier(self.schema, table),
            sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where) if where else sql.SQL(""),
        )
        yield from self._stream(query, params)

    def _stream(self, query: Any, params: list[Any] | None = None) -> Iterator[tuple[Any, ...]]:
        with self.conn.transaction(), self.conn.cursor(name="cdc_verify_target") as cur:
            cur.itersize = BATCH
            cur.execute(query, params)
            for row in cur:
                yield tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)

    def versions(self, table: str, columns: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        from psycopg import sql

        available = self.columns(table)
        if available is None:
            return
        seq = VALID_FROM if VALID_FROM in available else SEQ
        meta = [
            sql.Identifier(seq),
            sql.Identifier(DELETED) if DELETED in available else sql.SQL("false"),
            sql.Identifier(VALID_TO) if VALID_TO in available else sql.SQL("NULL"),
        ]
        yield from self._select(table, sql.SQL(", ").join([*map(sql.Identifier, columns), *meta]), [], scope)

    def tombstones(self, table: str, keys: list[str], scope: TableScope | None = None) -> Iterator[tuple[Any, ...]]:
        from psycopg import sql

        from cdc_spark.apply.postgres import TOMBSTONE_SUFFIX

        if self.columns(table + TOMBSTONE_SUFFIX) is None:
            return
        columns = sql.SQL(", ").join(map(sql.Identifier, [*keys, SEQ]))
        yield from self._select(table + TOMBSTONE_SUFFIX, columns, [], scope)

    def truncated(self, table: str) -> bytes | None:
        from psycopg import sql

        from cdc_spark.apply.postgres import TRUNCATES

        if self.columns(TRUNCATES) is None:
            return None
        row = self.conn.execute(
            sql.SQL("SELECT seq FROM {} WHERE table_name = %s").format(sql.Identifier(self.schema, TRUNCATES)),
            (table,),
        ).fetchone()
        return bytes(row[0]) if row and row[0] is not None else None

    def close(self) -> None:
        self.conn.close()


def open_target(job: JobSpec) -> TargetReader:
    s = job.sink
    kind = s["type"]
    if kind == "delta":
        return DeltaReader(str(s["path"]))
    if kind == "parquet":
        return ParquetChangelogReader(str(s["path"]))
    if kind == "iceberg":
        conf = sink_config(job)
        return IcebergReader(conf["catalog"], conf["namespace"])
    if kind == "postgres":
        return PostgresReader(sink_conninfo(s), str(s.get("schema", "public")))  # with sink.ssl* (TLS)
    raise ConfigException(f"sink.type {kind!r}: cdc verify reads delta, iceberg, parquet and postgres", "sink.type")

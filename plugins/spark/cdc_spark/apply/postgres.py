"""PostgreSQL warehouse tables through psycopg, one connection per Spark partition.

Each partition holds whole keys (the winners were shuffled by key), so partitions upsert
in parallel without touching each other's rows:

    COPY the partition's rows into a temp table
    INSERT … ON CONFLICT (key) DO UPDATE … WHERE target.__seq < excluded.__seq

delete.mode=hard deletes rows only when the delete is newer and remembers it in
`<table>__tombstones`, which filters late older upserts; soft keeps `__deleted=true` rows.
A truncate is remembered the same way, per table, in `_cdc_truncates`.
A replayed batch changes nothing: every statement is guarded by the sequence.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator, Mapping

import psycopg
import pyarrow as pa
import pyarrow.csv as pacsv
from psycopg import sql

from cdc_spark.apply.arrowutil import by_topic, bytea_text
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.errors import SchemaEvolutionError
from cdc_spark.decode.flatten import FlatBatch, flatten

TOMBSTONE_SUFFIX = "__tombstones"
# One row per truncated table: the last truncate's sequence, which later, older events lose to.
TRUNCATES = "_cdc_truncates"
_WIDER = {"smallint": 0, "integer": 1, "bigint": 2}


def pg_type(t: pa.DataType) -> str:
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t):
        return "smallint"
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return "integer"
    if pa.types.is_integer(t):
        return "bigint"
    if pa.types.is_float32(t):
        return "real"
    if pa.types.is_floating(t):
        return "double precision"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytea"
    if pa.types.is_decimal(t):
        return f"numeric({t.precision},{t.scale})"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp with time zone" if t.tz else "timestamp without time zone"
    return "text"


def _numeric(t: str) -> tuple[int, int] | None:
    m = re.fullmatch(r"numeric\((\d+),(\d+)\)", t)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _fits(existing: str, incoming: str) -> bool:
    if existing == incoming or existing == "text":
        return existing == incoming or incoming == "text"
    if existing in _WIDER and incoming in _WIDER:
        return _WIDER[incoming] <= _WIDER[existing]
    if existing == "double precision" and incoming in ("real", "smallint", "integer"):
        return True
    old, new = _numeric(existing), _numeric(incoming)
    if old and new:
        return new[1] == old[1] and new[0] <= old[0]
    return existing == "numeric" and incoming.startswith("numeric")  # unconstrained numeric takes any


def _widens(existing: str, incoming: str) -> bool:
    """A type change PostgreSQL applies in place without loss (ALTER COLUMN … TYPE)."""
    if existing in _WIDER and incoming in _WIDER:
        return _WIDER[incoming] > _WIDER[existing]
    if existing == "real" and incoming == "double precision":
        return True
    old, new = _numeric(existing), _numeric(incoming)
    return bool(old and new and new[1] == old[1] and new[0] > old[0])


class PostgresWriter:
    """One connection; `apply` is one table's rows of one partition, in one transaction."""

    def __init__(self, config: SinkConfig) -> None:
        self.config = config
        self.conn = psycopg.connect(config.dsn or "", autocommit=True)

    def close(self) -> None:
        self.conn.close()

    def ident(self, table: str) -> sql.Composed:
        return sql.Identifier(self.config.schema, table)

    def _columns(self, table: str) -> dict[str, str]:
        rows = self.conn.execute(
            "SELECT column_name, data_type, numeric_precision, numeric_scale FROM information_schema.columns "
            "WHERE table_schema=%s AND table_name=%s ORDER BY ordinal_position",
            (self.config.schema, table),
        ).fetchall()
        return {
            name: (f"numeric({p},{s})" if dtype == "numeric" and p is not None else dtype) for name, dtype, p, s in rows
        }

    def ensure_table(self, table: str, schema: pa.Schema, keys: list[str]) -> None:
        """Create or widen the table under an advisory lock (partitions race for the DDL)."""
        wanted = {f.name: pg_type(f.type) for f in schema}
        existing = self._columns(table)
        if existing and all(c in existing and _fits(existing[c], t) for c, t in wanted.items()):
            return
        with self.conn.transaction():
            self.conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"cdc-spark:{self.config.schema}.{table}",)
            )
            existing = self._columns(table)
            if not existing:
                cols = [sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(t)) for c, t in wanted.items()]
                cols.append(sql.SQL("PRIMARY KEY ({})").format(sql.SQL(", ").join(map(sql.Identifier, keys))))
                self.conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.config.schema)))
                self.conn.execute(sql.SQL("CREATE TABLE {} ({})").format(self.ident(table), sql.SQL(", ").join(cols)))
            for c, t in wanted.items():
                if c not in existing:
                    self.conn.execute(
                        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}").format(
                            self.ident(table), sql.Identifier(c), sql.SQL(t)
                        )
                    )
                elif _widens(existing[c], t):
                    self._widen(table, c, t, keys)
                elif not _fits(existing[c], t):
                    raise SchemaEvolutionError(f"{self.config.schema}.{table}", c, existing[c], t)
            if self.config.delete_mode == "hard":
                key_types = [sql.SQL("{} {}").format(sql.Identifier(k), sql.SQL(wanted[k])) for k in keys]
                self.conn.execute(
                    sql.SQL(
                        "CREATE TABLE IF NOT EXISTS {} ({}, __seq bytea NOT NULL, __deleted_at_ms bigint NOT NULL, "
                        "PRIMARY KEY ({}))"
                    ).format(
                        self.ident(table + TOMBSTONE_SUFFIX),
                        sql.SQL(", ").join(key_types),
                        sql.SQL(", ").join(map(sql.Identifier, keys)),
                    )
                )

    def _widen(self, table: str, column: str, wider: str, keys: list[str]) -> None:
        """int → bigint, real → double precision, numeric(p,s) → numeric(p2,s): in place, keys too."""
        tombs = table + TOMBSTONE_SUFFIX
        for name in [table] + ([tombs] if column in keys and self._columns(tombs) else []):
            self.conn.execute(
                sql.SQL("ALTER TABLE {} ALTER COLUMN {} TYPE {}").format(
                    self.ident(name), sql.Identifier(column), sql.SQL(wider)
                )
            )

    def truncate_marks(self) -> dict[str, bytes]:
        """table → the sequence of its last applied truncate (TRUNCATES)."""
        if not self._columns(TRUNCATES):
            return {}
        rows = self.conn.execute(sql.SQL("SELECT table_name, seq FROM {}").format(self.ident(TRUNCATES))).fetchall()
        return {name: bytes(seq) for name, seq in rows}

    def truncate(self, table: str, seq: bytes) -> None:
        """Delete the rows older than the truncate and remember its sequence, in one transaction."""
        self.conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.config.schema)))
        self.conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (table_name text PRIMARY KEY, seq bytea NOT NULL, "
                "truncated_at_ms bigint NOT NULL)"
            ).format(self.ident(TRUNCATES))
        )
        with self.conn.transaction():
            self.conn.execute(
                sql.SQL(
                    "INSERT INTO {} AS t VALUES (%s, %s, %s) ON CONFLICT (table_name) DO UPDATE "
                    "SET seq = EXCLUDED.seq, truncated_at_ms = EXCLUDED.truncated_at_ms WHERE t.seq < EXCLUDED.seq"
                ).format(self.ident(TRUNCATES)),
                (table, seq, int(time.time() * 1000)),
            )
            if self._columns(table):
                self.conn.execute(sql.SQL("DELETE FROM {} WHERE __seq < %s").format(self.ident(table)), (seq,))

    def apply(self, table: str, batch: FlatBatch) -> None:
        data = batch.table
        keys = batch.key_columns
        self.ensure_table(table, data.schema, keys)
        cols = data.column_names
        c_ids = sql.SQL(", ").join(map(sql.Identifier, cols))
        on = sql.SQL(" AND ").join(sql.SQL("t.{0} = s.{0}").format(sql.Identifier(k)) for k in keys)
        target = self.ident(table)
        updates = sql.SQL(", ").join(
            sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in cols if c not in keys
        )
        upsert = sql.SQL(
            "INSERT INTO {t} AS t ({c}) SELECT {c} FROM _cdc_stage s {where} "
            "ON CONFLICT ({k}) DO UPDATE SET {u} WHERE t.__seq < EXCLUDED.__seq"
        )
        with self.conn.transaction():
            self.conn.execute(
                sql.SQL("CREATE TEMP TABLE _cdc_stage ON COMMIT DROP AS SELECT {c} FROM {t} WITH NO DATA").format(
                    c=c_ids, t=target
                )
            )
            _copy(self.conn, data)
            k_ids = sql.SQL(", ").join(map(sql.Identifier, keys))
            if self.config.delete_mode == "soft":
                self.conn.execute(upsert.format(t=target, c=c_ids, where=sql.SQL(""), k=k_ids, u=updates))
                return
            tombs = self.ident(table + TOMBSTONE_SUFFIX)
            self.conn.execute(
                sql.SQL("DELETE FROM _cdc_stage s USING {tb} t WHERE {on} AND t.__seq >= s.__seq").format(
                    tb=tombs, on=on
                )
            )
            self.conn.execute(
                sql.SQL(
                    "DELETE FROM {tg} t USING _cdc_stage s WHERE {on} AND s.__deleted AND t.__seq < s.__seq"
                ).format(tg=target, on=on)
            )
            self.conn.execute(
                upsert.format(t=target, c=c_ids, where=sql.SQL("WHERE NOT s.__deleted"), k=k_ids, u=updates)
            )
            self.conn.execute(
                sql.SQL(
                    "INSERT INTO {tb} AS t ({k}, __seq, __deleted_at_ms) SELECT {k}, __seq, %s FROM _cdc_stage "
                    "WHERE __deleted ON CONFLICT ({k}) DO UPDATE SET __seq = EXCLUDED.__seq, "
                    "__deleted_at_ms = EXCLUDED.__deleted_at_ms WHERE t.__seq < EXCLUDED.__seq"
                ).format(tb=tombs, k=k_ids),
                (int(time.time() * 1000),),
            )

    def maintain(self, tables: list[str]) -> None:
        cutoff = int(time.time() * 1000) - self.config.delete_retention_ms
        for table in tables:
            if self._columns(table + TOMBSTONE_SUFFIX):
                self.conn.execute(
                    sql.SQL("DELETE FROM {} WHERE __deleted_at_ms < %s").format(self.ident(table + TOMBSTONE_SUFFIX)),
                    (cutoff,),
                )


def _copy(conn: psycopg.Connection, data: pa.Table) -> None:
    """COPY through Arrow's C++ CSV writer (bytea as \\x hex text, NULL as an unquoted empty field)."""
    arrays = []
    for col in data.columns:
        if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
            col = bytea_text(col)
        arrays.append(col)
    buf = io.BytesIO()
    pacsv.write_csv(
        pa.Table.from_arrays(arrays, names=data.column_names),
        buf,
        pacsv.WriteOptions(include_header=False, quoting_style="needed"),
    )
    cols = sql.SQL(", ").join(map(sql.Identifier, data.column_names))
    with conn.cursor().copy(sql.SQL("COPY _cdc_stage ({}) FROM STDIN (FORMAT csv)").format(cols)) as cp:
        cp.write(buf.getvalue())


def apply_partition(
    batches: Iterator[pa.RecordBatch],
    config: SinkConfig,
    schemas: Mapping[int, str] | None = None,
    truncated: Mapping[str, bytes] | None = None,
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over a partition holding whole keys: each key's latest event newer than
    its table's last truncate (`truncated`, by table), flattened per topic, upserted; yields counts."""
    from cdc_spark.apply.latest import latest_rows, topic_marks

    received = list(batches)
    topics: list[str] = []
    counts: list[int] = []
    rows = None
    if received:
        rows = pa.Table.from_batches(received)
        rows = latest_rows(rows, topic_marks(rows["topic"], truncated or {}, config.table_for))
    if rows is not None and rows.num_rows:
        writer = PostgresWriter(config)
        try:
            for topic, part in sorted(by_topic(rows).items()):
                writer.apply(config.table_for(topic), flatten(topic, part, schemas))
                topics.append(topic)
                counts.append(part.num_rows)
        finally:
            writer.close()
    yield pa.RecordBatch.from_arrays(
        [pa.array(topics, pa.string()), pa.array(counts, pa.int64())], names=["topic", "rows"]
    )

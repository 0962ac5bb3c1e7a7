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

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from psycopg import sql

from cdc.api import libpq_tls
from cdc.api.data.calendar import civil_from_days
from cdc_spark.apply.arrowutil import by_topic, bytea_text
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.errors import (
    AS_IT_IS,
    PARK,
    REPLAYED,
    RUN_AGAIN,
    Refused,
    SchemaChangeRefusedError,
    SchemaEvolutionError,
    SinkConfigError,
    batch_keys,
    naming_keys,
    row_key,
)
from cdc_spark.apply.evolution import (
    DEFAULT_BEHAVIOR,
    EVOLVE,
    EXCEPTION,
    IGNORE,
    LENIENT,
    TRY_EVOLVE,
    converted,
    in_coarser_unit,
)
from cdc_spark.apply.refused import partition_rows
from cdc_spark.apply.unchanged import sent_of, since_of, warn_kept_rows
from cdc_spark.decode.flatten import META_COLUMNS, FlatBatch
from cdc_spark.decode.types import (
    NEGATIVE_INFINITY,
    POSITIVE_INFINITY,
    SQL_TYPE,
    TIME_UNIT,
    default_of,
    time_factor,
    time_unit,
)

TOMBSTONE_SUFFIX = "__tombstones"
# One row per truncated table: the last truncate's sequence, which later, older events lose to.
TRUNCATES = "_cdc_truncates"
_WIDER = {"smallint": 0, "integer": 1, "bigint": 2}
_INT_DIGITS = {"smallint": 5, "integer": 10, "bigint": 19}  # decimal digits each holds
# Staging only, per column i with values the source did not send: the cells as sent (the
# placeholder where unsent, else NULL), the sequence of the batch's event deciding each, and
# which cells are masked (an update's NULL under ignore_null_updates is sent as NULL too).
_UNSENT = "__cdc_unsent_{}"
_SINCE = "__cdc_since_{}"
_MASKED = "__cdc_masked_{}"


class WarehouseValueError(RuntimeError):
    """A value PostgreSQL cannot store in its column; the message names table, column, key and fix.
    `problem` is the message without the fix: what a dead-lettered row's error says."""

    def __init__(self, problem: str, fix: str) -> None:
        self.problem = problem
        super().__init__(f"{problem}. Fix: {fix}.")


def column_type(field: pa.Field) -> str:
    """The PostgreSQL type of one batch column: what the source schema says (SQL_TYPE, e.g. numeric
    for a VariableScaleDecimal carried as exact text), else what its Arrow type maps to."""
    sql = (field.metadata or {}).get(SQL_TYPE)
    return sql.decode() if sql else pg_type(field.type)


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
    m = re.fullmatch(r"numeric\((\d+),(-?\d+)\)", t)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _numeric_union(existing: str, incoming: str) -> str | None:
    """The numeric type holding every value of both (as many integer digits and as much scale
    as either has), or None when either is not numeric."""
    if not (existing.startswith("numeric") and incoming.startswith("numeric")):
        return None
    old, new = _numeric(existing), _numeric(incoming)
    if old is None or new is None:  # unconstrained numeric takes any
        return "numeric"
    scale = max(old[1], new[1])
    digits = max(old[0] - old[1], new[0] - new[1]) + scale
    return f"numeric({digits},{scale})" if digits <= 1000 else "numeric"


def _fits(existing: str, incoming: str) -> bool:
    if existing == incoming or existing == "text":
        return existing == incoming or incoming == "text"
    if existing in _WIDER and incoming in _WIDER:
        return _WIDER[incoming] <= _WIDER[existing]
    if existing == "double precision" and incoming in ("real", "smallint", "integer"):
        return True
    return _numeric_union(existing, incoming) == existing  # e.g. numeric(10,2) into numeric(12,4)


def _widens(existing: str, incoming: str) -> str | None:
    """The type PostgreSQL changes the column to, in place and without loss (ALTER COLUMN … TYPE),
    so that it holds the incoming values too; None when there is none."""
    if existing in _WIDER and incoming in _WIDER:
        return incoming if _WIDER[incoming] > _WIDER[existing] else None
    if existing == "real" and incoming == "double precision":
        return incoming
    if existing == "date" and incoming.startswith("timestamp"):  # MySQL DATE → DATETIME: midnight
        return incoming
    numeric = _numeric(incoming)
    if existing in _WIDER and numeric is not None and numeric[0] - numeric[1] >= _INT_DIGITS[existing]:
        return incoming  # BIGINT → BIGINT UNSIGNED (precise: numeric(20,0))
    union = _numeric_union(existing, incoming)  # precision up, scale up, or both (scale 2 → 4)
    return union if union is not None and union != existing else None


def _is_meta(column: str) -> bool:
    return column in META_COLUMNS or column.startswith("__")


def _dropped(existing: Mapping[str, str], wanted: Mapping[str, str]) -> list[str]:
    """The table's source columns the batch's rows no longer carry."""
    return [c for c in existing if c not in wanted and not _is_meta(c)]


# The Arrow type of a stored PostgreSQL column, for try_evolve's conversion (others: left to PostgreSQL).
_ARROW_OF = {
    "smallint": pa.int16(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "real": pa.float32(),
    "double precision": pa.float64(),
    "boolean": pa.bool_(),
    "text": pa.string(),
    "character varying": pa.string(),
    "date": pa.date32(),
    "timestamp without time zone": pa.timestamp("us"),
    "timestamp with time zone": pa.timestamp("us", "UTC"),
    "bytea": pa.binary(),
}


def _arrow_of(pg: str) -> pa.DataType | None:
    numeric = _numeric(pg)
    if numeric is not None and 0 < numeric[0] <= 38 and numeric[1] >= 0:
        return pa.decimal128(*numeric)
    return _ARROW_OF.get(pg)


class PostgresWriter:
    """One connection; `apply` is one table's rows of one partition, in one transaction."""

    def __init__(self, config: SinkConfig) -> None:
        self.config = config
        try:
            self.conn = psycopg.connect(config.dsn or "", autocommit=True, **config.tls)
        except psycopg.OperationalError as e:
            fix = libpq_tls.advice(str(e), "")  # a TLS refusal: a setting to change, not an outage
            if fix is None:
                raise
            raise SinkConfigError(
                f"cannot connect to the PostgreSQL target ({libpq_tls.first_line(e)}): {fix}; {RUN_AGAIN}"
            ) from None

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

    def ensure_table(
        self, table: str, schema: pa.Schema, keys: list[str], behavior: str = DEFAULT_BEHAVIOR
    ) -> dict[str, str]:
        """Create the table, or change it as its schema.change.behavior lets the batch's columns
        (apply/evolution.py says each), under an advisory lock (partitions race for the DDL);
        returns its columns (name → type)."""
        wanted = {f.name: column_type(f) for f in schema}
        existing = self._columns(table)
        drops = behavior in (EXCEPTION, EVOLVE, TRY_EVOLVE)
        if (
            existing
            and all(c in existing and _fits(existing[c], t) for c, t in wanted.items())
            and not (drops and _dropped(existing, wanted))
        ):
            return existing
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
            name = f"{self.config.schema}.{table}"
            for c, t in wanted.items():
                if c not in existing:
                    if existing and behavior == EXCEPTION and not _is_meta(c):
                        raise SchemaChangeRefusedError(name, c, "absent", t, behavior, LENIENT)
                    default = default_of(schema.field(c)) if existing and not _is_meta(c) else None
                    self._add_column(table, c, t, default)
                elif _fits(existing[c], t):
                    continue
                elif wider := _widens(existing[c], t):
                    if behavior == EXCEPTION:
                        raise SchemaChangeRefusedError(name, c, existing[c], t, behavior, LENIENT)
                    if behavior != IGNORE:  # ignore: PostgreSQL converts on the way in, refusing what does not fit
                        unit = time_unit(schema.field(c))  # TIME(3) in ms → TIME(6) in us: stored values scaled
                        scale = time_factor(b"ms", unit) if unit is not None and existing[c] == "integer" else 1
                        self._widen(table, c, wider, keys, scale=scale)
                elif behavior == EVOLVE:
                    self._widen(table, c, t, keys, using=True)
                elif behavior == EXCEPTION:
                    raise SchemaChangeRefusedError(name, c, existing[c], t, behavior, EVOLVE)
                elif behavior == LENIENT:
                    raise SchemaEvolutionError(name, c, existing[c], t)
                # try_evolve (values converted to the old type by apply) and ignore keep the column
            for c in _dropped(existing, wanted) if drops else []:
                if behavior == EXCEPTION:
                    raise SchemaChangeRefusedError(name, c, existing[c], "dropped", behavior, LENIENT)
                self.conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN {}").format(self.ident(table), sql.Identifier(c)))
            if self.config.delete_mode_for(table) == "hard":
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
        return self._columns(table)

    def _add_column(self, table: str, column: str, pg: str, default: pa.Scalar | None) -> None:
        """ADD COLUMN; with the source column's DEFAULT (a table that had rows before it), the
        stored rows take it, as the source's did, and the default is dropped again: later rows
        hold what their events say (PostgreSQL keeps the value of the stored rows, 11+ without
        rewriting them)."""
        ident = self.ident(table)
        if default is None:
            self.conn.execute(
                sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}").format(
                    ident, sql.Identifier(column), sql.SQL(pg)
                )
            )
            return
        self.conn.execute(
            sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {} DEFAULT {}::{}").format(
                ident, sql.Identifier(column), sql.SQL(pg), sql.Literal(_pg_literal(default)), sql.SQL(pg)
            )
        )
        self.conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} DROP DEFAULT").format(ident, sql.Identifier(column)))

    def _widen(self, table: str, column: str, wider: str, keys: list[str], using: bool = False, scale: int = 1) -> None:
        """int → bigint, real → double precision, numeric(p,s) → numeric(p2,s2): in place, keys too.
        `using` (evolve, an incompatible type): the stored values cast, PostgreSQL refusing one that
        does not (the batch stops, the table unchanged: the DDL is in the batch's transaction).
        `scale`: the stored values multiplied (a time-of-day in a finer unit)."""
        tombs = table + TOMBSTONE_SUFFIX
        for name in [table] + ([tombs] if column in keys and self._columns(tombs) else []):
            if scale != 1:
                cast = sql.SQL(" USING {}::{} * {}").format(sql.Identifier(column), sql.SQL(wider), sql.Literal(scale))
            elif using:
                cast = sql.SQL(" USING {}::{}").format(sql.Identifier(column), sql.SQL(wider))
            else:
                cast = sql.SQL("")
            self.conn.execute(
                sql.SQL("ALTER TABLE {} ALTER COLUMN {} TYPE {}{}").format(
                    self.ident(name), sql.Identifier(column), sql.SQL(wider), cast
                )
            )

    def _times(
        self, table: str, data: pa.Table, timed: list[pa.Field], existing: Mapping[str, str], behavior: str
    ) -> pa.Table:
        """Time-of-day columns in the unit the stored column holds (integer: ms, bigint: us): a
        coarser incoming unit multiplied up; a finer one into an integer column that keeps ms
        (ignore) divided when exact, else refused. (A finer one otherwise widens the column:
        ensure_table scales the stored values.)"""
        for f in timed:
            stored = {"integer": b"ms", "bigint": b"us"}.get(existing.get(f.name, ""))
            unit = time_unit(f)
            if stored is None or unit is None or unit == stored:
                continue
            i = data.schema.get_field_index(f.name)
            col = data.column(i).cast(pa.int64())
            if time_factor(b"ms", unit) < time_factor(b"ms", stored):
                scaled = pc.multiply_checked(col, time_factor(unit, stored))
                data = data.set_column(i, pa.field(f.name, pa.int64(), metadata={TIME_UNIT: stored}), scaled)
            elif behavior == IGNORE:
                name = f"{self.config.schema}.{table}"
                coarse = in_coarser_unit(name, f.name, col, unit, stored, existing[f.name])
                data = data.set_column(i, pa.field(f.name, pa.int32()), coarse.cast(pa.int32()))
        return data

    def conform(self, table: str, data: pa.Table) -> pa.Table:
        """The batch's rows as the table's schema.change.behavior lets them in: ignore leaves new
        columns out; try_evolve converts a column of an incompatible new type to the stored type
        (NULL where a value does not convert, with a warning). The other changes are DDL
        (ensure_table)."""
        behavior = self.config.options_for(table).schema_change_behavior
        timed = [f for f in data.schema if time_unit(f) is not None]
        if behavior not in (IGNORE, TRY_EVOLVE) and not timed:
            return data
        existing = self._columns(table)
        if not existing:
            return data
        data = self._times(table, data, timed, existing, behavior)
        if behavior not in (IGNORE, TRY_EVOLVE):
            return data
        for f in data.schema:
            if f.name not in existing:
                if behavior == IGNORE and not _is_meta(f.name):
                    data = data.drop_columns([f.name])
                continue
            t, stored = column_type(f), existing[f.name]
            if behavior == TRY_EVOLVE and not _fits(stored, t) and not _widens(stored, t):
                arrow = _arrow_of(stored)
                if arrow is not None:
                    i = data.schema.get_field_index(f.name)
                    name = f"{self.config.schema}.{table}"
                    data = data.set_column(i, f.name, converted(name, f.name, data.column(f.name), arrow))
        return data

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

    def apply(self, table: str, batch: FlatBatch, refused: list[Refused] | None = None) -> None:
        """Upsert one table's rows. A value PostgreSQL refuses raises WarehouseValueError; with
        `refused` (errors.tolerance=all) its row is left out instead and recorded there."""
        keys = batch.key_columns
        data = self.conform(table, batch.table)
        columns = self.ensure_table(table, data.schema, keys, self.config.options_for(table).schema_change_behavior)
        data, left_out = _refuse_nul(f"{self.config.schema}.{table}", data, keys, refused)
        cols = data.column_names
        c_ids = sql.SQL(", ").join(map(sql.Identifier, cols))
        on = sql.SQL(" AND ").join(sql.SQL("t.{0} = s.{0}").format(sql.Identifier(k)) for k in keys)
        target = self.ident(table)
        # A row image is the whole row: columns the source dropped become NULL on update, as
        # in the Delta and Iceberg targets (a stale value would outlive the column's removal).
        dropped = [c for c in columns if c not in cols and c not in META_COLUMNS]
        updates = sql.SQL(", ").join(
            [sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in cols if c not in keys]
            + [sql.SQL("{0} = NULL").format(sql.Identifier(c)) for c in dropped]
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
            if batch.unchanged:
                data = self._stage_unchanged(data, batch.unchanged)
            _copy(self.conn, data, f"{self.config.schema}.{table}", keys, refused, left_out)
            if batch.unchanged:
                self._keep_unchanged(table, batch.unchanged, keys)
            k_ids = sql.SQL(", ").join(map(sql.Identifier, keys))
            if self.config.delete_mode_for(table) == "soft":
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

    def _stage_unchanged(self, data: pa.Table, masks: Mapping[str, pa.Array]) -> pa.Table:
        """`data` with the staging columns of its values the source did not send (_UNSENT, _SINCE),
        which are added to `_cdc_stage` (the cells as sent in the column's own type)."""
        types = dict(
            self.conn.execute(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = '_cdc_stage'::regclass AND attnum > 0 AND NOT attisdropped"
            ).fetchall()
        )
        n = data.num_rows
        for i, (name, mask) in enumerate(masks.items()):
            self.conn.execute(
                sql.SQL("ALTER TABLE _cdc_stage ADD COLUMN {} {}, ADD COLUMN {} bytea, ADD COLUMN {} boolean").format(
                    sql.Identifier(_UNSENT.format(i)),
                    sql.SQL(types[name]),
                    sql.Identifier(_SINCE.format(i)),
                    sql.Identifier(_MASKED.format(i)),
                )
            )
            sent = sent_of(masks, name, data)
            data = data.append_column(_UNSENT.format(i), pc.if_else(mask, sent, pa.nulls(n, sent.type)))
            since = pc.if_else(mask, since_of(masks, name, n), pa.nulls(n, pa.binary()))
            data = data.append_column(_SINCE.format(i), since)
            data = data.append_column(_MASKED.format(i), pc.fill_null(mask, False))
        return data

    def _keep_unchanged(self, table: str, masks: Mapping[str, pa.Array], keys: list[str]) -> None:
        """Staged values the source did not send, settled by sequence as fill_from_stored does
        (apply/unchanged.py): where the key's stored state is at least as new as the batch's
        own source (_SINCE; NULL: none), the stored row's value, or the placeholder where that
        state is a delete (a soft-deleted row, a newer tombstone)."""
        target = self.ident(table)
        unsent = [sql.Identifier(_UNSENT.format(i)) for i in range(len(masks))]
        since = [sql.Identifier(_SINCE.format(i)) for i in range(len(masks))]
        masked = [sql.Identifier(_MASKED.format(i)) for i in range(len(masks))]
        names = [sql.Identifier(c) for c in masks]
        values = [sql.Identifier(f"__cdc_stored_{i}") for i in range(len(masks))]
        any_unsent = sql.SQL(" OR ").join(sql.SQL("w.{}").format(m) for m in masked)
        joins = [sql.SQL("LEFT JOIN {} t ON {}").format(target, _key_match("t", "w", keys))]
        tomb: sql.Composable = sql.SQL("NULL::bytea")
        if self.config.delete_mode_for(table) == "hard":
            tombs = self.ident(table + TOMBSTONE_SUFFIX)
            joins.append(sql.SQL("LEFT JOIN {} tb ON {}").format(tombs, _key_match("tb", "w", keys)))
            tomb = sql.SQL("tb.__seq")
        # The key's newest stored state: its row, or the delete a tombstone remembers.
        tomb_newer = sql.SQL("coalesce({0} > t.__seq, {0} IS NOT NULL)").format(tomb)
        state = sql.SQL(
            "SELECT {k}, CASE WHEN {tn} THEN {tb} ELSE t.__seq END AS seq, "
            "(t.__seq IS NOT NULL AND t.__deleted IS NOT TRUE AND NOT {tn}) AS live, {v} "
            "FROM _cdc_stage w {j} WHERE {a}"
        ).format(
            k=sql.SQL(", ").join(sql.SQL("w.{0} AS {0}").format(sql.Identifier(k)) for k in keys),
            tn=tomb_newer,
            tb=tomb,
            v=sql.SQL(", ").join(sql.SQL("t.{} AS {}").format(c, v) for c, v in zip(names, values, strict=True)),
            j=sql.SQL(" ").join(joins),
            a=any_unsent,
        )
        sets = sql.SQL(", ").join(
            sql.SQL(
                "{c} = CASE WHEN NOT s.{m} OR d.seq IS NULL OR d.seq < s.{s} THEN s.{c} "
                "WHEN d.live THEN d.{v} ELSE s.{u} END"
            ).format(c=c, u=u, s=si, v=v, m=m)
            for c, u, si, v, m in zip(names, unsent, since, values, masked, strict=True)
        )
        self.conn.execute(
            sql.SQL("UPDATE _cdc_stage s SET {} FROM ({}) d WHERE {}").format(sets, state, _key_match("s", "d", keys))
        )
        # Left holding the placeholder: a stored delete decided, or neither the batch nor the target had
        # it. A quiet cell (an update's NULL, sent as NULL) left NULL is not counted: NULL = NULL is not true.
        kept = sql.SQL(" OR ").join(
            sql.SQL("(s.{u} IS NOT NULL AND s.{c}::text = s.{u}::text)").format(u=u, c=c)
            for u, c in zip(unsent, names, strict=True)
        )
        missing = self.conn.execute(sql.SQL("SELECT count(*) FROM _cdc_stage s WHERE {}").format(kept)).fetchone()
        if missing and missing[0]:
            warn_kept_rows(f"{self.config.schema}.{table}", missing[0], list(masks))

    def maintain(self, tables: list[str]) -> None:
        cutoff = int(time.time() * 1000) - self.config.delete_retention_ms
        for table in tables:
            if self._columns(table + TOMBSTONE_SUFFIX):
                self.conn.execute(
                    sql.SQL("DELETE FROM {} WHERE __deleted_at_ms < %s").format(self.ident(table + TOMBSTONE_SUFFIX)),
                    (cutoff,),
                )


def _key_match(left: str, right: str, keys: list[str]) -> sql.Composable:
    return sql.SQL(" AND ").join(
        sql.SQL("{}.{} = {}.{}").format(
            sql.Identifier(left), sql.Identifier(k), sql.Identifier(right), sql.Identifier(k)
        )
        for k in keys
    )


def _refuse_nul(
    table: str, data: pa.Table, keys: list[str], refused: list[Refused] | None = None
) -> tuple[pa.Table, np.ndarray | None]:
    """PostgreSQL's text cannot hold U+0000, which MySQL and the lakes store: name the column and
    the key of the first row holding it. With `refused` (errors.tolerance=all), every such row is
    recorded there instead, and marked in the mask returned (the rows to leave out); a delete's
    such values are set to null instead (a hard delete stores only the key, a soft one keeps the
    row without that value). Returns `data` so changed."""
    left_out: np.ndarray | None = None
    deleted = data.column("__deleted").to_pylist() if "__deleted" in data.column_names else None
    for f in data.schema:
        if not (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)) or f.name in META_COLUMNS:
            continue
        holds = pc.fill_null(pc.match_substring(data.column(f.name), "\x00"), False)
        if not pc.any(holds).as_py():
            continue
        if refused is None:
            raise _nul(table, f.name, row_key(data, keys, pc.index(holds, True).as_py()))
        left_out = np.zeros(data.num_rows, bool) if left_out is None else left_out
        blanked = []
        for i in np.flatnonzero(holds.to_numpy(zero_copy_only=False)).tolist():
            if left_out[i]:
                continue
            error = _nul(table, f.name, row_key(data, keys, i))
            if deleted is not None and deleted[i] and f.name not in keys:
                blanked.append(i)
                refused.append(Refused.of(i, error, deleted=True))
            else:
                left_out[i] = True
                refused.append(Refused.of(i, error))
        if blanked:
            hit = np.zeros(data.num_rows, bool)
            hit[blanked] = True
            column = data.column(f.name).combine_chunks()
            nulled = pc.if_else(pa.array(hit), pa.nulls(data.num_rows, column.type), column)
            data = data.set_column(data.schema.get_field_index(f.name), f, nulled)
    return data, left_out


def _nul(table: str, column: str, key: str) -> WarehouseValueError:
    return WarehouseValueError(
        f"table {table}: column {column!r} holds a NUL character (U+0000) in the row with key {key}, which "
        "PostgreSQL text cannot store",
        f"no PostgreSQL text type holds it, and {AS_IT_IS}: {PARK}. Then remove the character at the source: "
        "the row's next change is applied as usual",
    )


_UNIX_DAYS = (-719_162, 2_932_896)  # 0001-01-01 .. 9999-12-31: the years Arrow's CSV writer prints
_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
_DATE_INFINITY = {2**31 - 1: "infinity", -(2**31): "-infinity"}  # the source's ±infinity dates
_TS_INFINITY = {POSITIVE_INFINITY: "infinity", NEGATIVE_INFINITY: "-infinity"}  # Debezium's, any unit


def _pg_date(days: int, time: str = "") -> str:
    """PostgreSQL input text of a date (+ time): years ≤ 0 are BC (year 0 is 1 BC)."""
    y, m, d = civil_from_days(days)
    text = f"{max(y, 1 - y):04d}-{m:02d}-{d:02d}{time}"
    return text + " BC" if y <= 0 else text


def _pg_temporal(col: pa.Array) -> pa.Array:
    """Dates and timestamps as PostgreSQL text when some lie outside the years 1-9999 that Arrow's
    CSV writer prints: ±infinity (as Debezium encodes it) becomes 'infinity', BC years get ' BC'."""
    t = col.type
    per_day = 1 if pa.types.is_date32(t) else _PER_DAY[t.unit]
    ints = col.cast(pa.int32() if pa.types.is_date32(t) else pa.int64())
    bounds = pc.min_max(ints)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo is None or (lo >= _UNIX_DAYS[0] * per_day and hi < (_UNIX_DAYS[1] + 1) * per_day):
        return col
    specials = _DATE_INFINITY if per_day == 1 else _TS_INFINITY
    zone = "+00" if pa.types.is_timestamp(t) and t.tz else ""
    digits = len(str(per_day // 86_400)) - 1
    out: list[str | None] = []
    for v in ints.to_pylist():
        if v is None or v in specials:
            out.append(None if v is None else specials[v])
            continue
        days, rest = divmod(v, per_day)
        if per_day == 1:
            out.append(_pg_date(days))
            continue
        seconds, fraction = divmod(rest, per_day // 86_400)
        clock = f" {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if digits:
            clock += f".{fraction:0{digits}d}"
        out.append(_pg_date(days, clock + zone))
    return pa.array(out, pa.string())


def _pg_text(col: pa.Array) -> pa.Array:
    """A column as the text COPY sends: bytea as \\x hex, dates and timestamps as PostgreSQL
    writes them (±infinity, BC years), the rest as it is (the CSV writer prints it)."""
    if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
        return bytea_text(col)
    if pa.types.is_date32(col.type) or pa.types.is_timestamp(col.type):
        return _pg_temporal(col)
    return col


def _pg_literal(value: pa.Scalar) -> str:
    """A value as text PostgreSQL reads into its column's type (for a DEFAULT, cast to the type):
    the same text COPY sends for it."""
    text = _pg_text(pa.repeat(value, 1))
    return str(text.cast(pa.string())[0].as_py())


def _copy(
    conn: psycopg.Connection,
    data: pa.Table,
    table: str,
    keys: list[str],
    refused: list[Refused] | None = None,
    left_out: np.ndarray | None = None,
) -> None:
    """COPY through Arrow's C++ CSV writer (bytea as \\x hex text, NULL as an unquoted empty field).
    With `refused` (errors.tolerance=all), the rows PostgreSQL refuses are recorded there and left
    out of the staging table, as are those `left_out` marks (`_copy_around`)."""
    arrays = []
    for col in data.columns:
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        arrays.append(_pg_text(col))
    text = pa.Table.from_arrays(arrays, names=data.column_names)
    cols = sql.SQL(", ").join(map(sql.Identifier, data.column_names))
    if refused is not None:
        _copy_around(conn, data, text, cols, table, keys, refused, left_out)
        return
    try:
        _copy_csv(conn, text, cols)
    except psycopg.errors.DataError as e:
        raise _refused(e, data, table, keys) from None


def _copy_csv(conn: psycopg.Connection, text: pa.Table, cols: sql.Composable) -> None:
    buf = io.BytesIO()
    pacsv.write_csv(text, buf, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
    with conn.cursor().copy(sql.SQL("COPY _cdc_stage ({}) FROM STDIN (FORMAT csv)").format(cols)) as cp:
        cp.write(buf.getvalue())


def _copy_around(
    conn: psycopg.Connection,
    data: pa.Table,
    text: pa.Table,
    cols: sql.Composable,
    table: str,
    keys: list[str],
    refused: list[Refused],
    left_out: np.ndarray | None,
) -> None:
    """The COPY of `text` (`data` as CSV columns) without the rows PostgreSQL refuses.

    Each attempt COPYs a run of rows in a savepoint. A refused COPY stages nothing, and the line
    it names is the refused row: the rows before it are copied again, the row is left out (a
    delete is copied again without the refused value, which its old row image does not need),
    and the rows after it are tried next. Each row is copied about twice at most."""
    deleted = data.column("__deleted").to_pylist() if "__deleted" in data.column_names else None
    rows = np.arange(data.num_rows) if left_out is None else np.flatnonzero(~left_out)
    pending: list[tuple[np.ndarray, pa.Table]] = [(rows, text.take(rows))]
    blanked: set[tuple[int, str]] = set()
    while pending:
        rows, part = pending.pop()
        if len(rows) == 0:
            continue
        try:
            with conn.transaction():  # a savepoint: a refused COPY keeps what earlier ones staged
                _copy_csv(conn, part, cols)
            continue
        except psycopg.errors.DataError as e:
            original = data.take(rows)
            at, column = _refused_at(e, original)
            error = _refused(e, original, table, keys)
            if not 0 <= at < len(rows):
                raise error from None  # no row to leave out: stop as under errors.tolerance=none
        row = int(rows[at])
        pending.append((rows[at + 1 :], part.slice(at + 1)))
        if (
            deleted is not None
            and deleted[row]
            and column in data.column_names
            and column not in keys
            and column not in META_COLUMNS
            and (row, column) not in blanked
        ):
            blanked.add((row, column))
            refused.append(Refused.of(row, error, deleted=True))
            one = part.slice(at, 1)
            i = one.schema.get_field_index(column)
            pending.append((rows[at : at + 1], one.set_column(i, one.field(i), pa.nulls(1, one.field(i).type))))
        else:
            refused.append(Refused.of(row, error))
        pending.append((rows[:at], part.slice(0, at)))


# PostgreSQL's context of a COPY error: `COPY _cdc_stage, line 3, column qty: "abc"`.
_COPY_CONTEXT = re.compile(r"COPY _cdc_stage, line (\d+)(?:, column (.+?): |, column (.+)$|:|$)", re.M)


def _refused_at(error: psycopg.errors.DataError, data: pa.Table) -> tuple[int, str | None]:
    """The row of `data` (-1: unknown) and the column (None: unknown) of the value PostgreSQL refused."""
    found = _COPY_CONTEXT.search((error.diag.context or "").strip())
    if not found:
        return -1, None
    return _row_of_line(data, int(found.group(1))), found.group(2) or found.group(3)


def _refused(error: psycopg.errors.DataError, data: pa.Table, table: str, keys: list[str]) -> WarehouseValueError:
    """The value PostgreSQL refused while loading the batch, by column and by the key of its row."""
    diag = error.diag
    row, column = _refused_at(error, data)
    where = f"column {column!r}" if column else "a column"
    rows = f"the row with key {row_key(data, keys, row)}" if 0 <= row < data.num_rows else batch_keys(data, keys)
    cause = (diag.message_primary or str(error)).rstrip(".")
    if diag.message_detail:
        cause += f" ({diag.message_detail.rstrip('.')})"
    cause = " ".join(cause.split())
    return WarehouseValueError(
        f"table {table}: PostgreSQL refused the value of {where} in {rows}: {cause}",
        f"widen the target column (ALTER TABLE {table} ALTER COLUMN {column or '<column>'} TYPE <a type that holds "
        f"it>) and {RUN_AGAIN.removeprefix('then ')}: {REPLAYED} ({AS_IT_IS}); or {PARK}",
    )


def _row_of_line(data: pa.Table, line: int) -> int:
    """The row of `data` whose CSV record ends on line `line` of the COPY, counted as PostgreSQL
    counts (copyfromparse.c, CopyReadLineText): one per record, plus one per line break inside a
    quoted value, which is '\\n' once the first record has set the line ending and '\\r' before
    (so the first record's '\\n's do not count). Only text values hold line breaks here: bytea is
    hex and dates are written without."""
    breaks = np.zeros(data.num_rows, np.int64)
    for col in data.columns:
        if (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) and data.num_rows:
            breaks += pc.fill_null(pc.count_substring(col, "\n"), 0).to_numpy()
            breaks[0] += (pc.count_substring(col.slice(0, 1), "\r").to_pylist()[0] or 0) - (
                pc.count_substring(col.slice(0, 1), "\n").to_pylist()[0] or 0
            )
    last_lines = np.cumsum(breaks + 1)  # the line each row's record ends on
    return int(np.searchsorted(last_lines, line))


def apply_partition(
    batches: Iterator[pa.RecordBatch],
    config: SinkConfig,
    schemas: Mapping[int, str] | None = None,
    truncated: Mapping[str, bytes] | None = None,
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over a partition holding whole keys: each key's latest event newer than
    its table's last truncate (`truncated`, by table), flattened per topic, upserted; yields counts
    per table and, under errors.tolerance=all, the refused rows (refused.PARTITION_RESULT)."""
    from cdc_spark.apply.latest import latest_and_earlier, topic_marks
    from cdc_spark.apply.unchanged import flatten_latest

    received = list(batches)
    topics: list[str] = []
    counts: list[int] = []
    parked: list[tuple[str, int, int, Refused]] = []  # errors.tolerance=all: refused rows' events
    rows = None
    if received:
        rows = pa.Table.from_batches(received)
        marks = topic_marks(rows["topic"], truncated or {}, config.table_for)
        partial_topics = config.null_update_topics(pc.unique(rows["topic"]).to_pylist())
        rows, earlier = latest_and_earlier(rows, marks, config.placeholder, partial_topics)
    if rows is not None and rows.num_rows:
        before = by_topic(earlier) if earlier.num_rows else {}
        writer = PostgresWriter(config)
        try:
            for topic, part in sorted(by_topic(rows).items()):
                table = config.table_for(topic)
                options = config.options_for(table)
                flat = flatten_latest(topic, part, before.get(topic), schemas, config.placeholder, options, table)
                # Row i of `flat` is event i of `part`: a refused row is known by its event's position.
                lined_up = flat.table.num_rows == part.num_rows
                refused: list[Refused] | None = [] if config.errors_tolerance == "all" and lined_up else None
                with naming_keys(f"{config.schema}.{table}", flat):  # errors name the table and key
                    writer.apply(table, flat, refused)
                topics.append(topic)
                counts.append(part.num_rows)
                if refused:
                    events = part.select(["partition", "offset"]).to_pylist()
                    parked += [(topic, events[r.row]["partition"], events[r.row]["offset"], r) for r in refused]
        finally:
            writer.close()
    yield partition_rows(topics, counts, parked)

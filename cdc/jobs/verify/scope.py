"""Which keys of one table `cdc verify` compares: a key range (key_range.py), a sample (sample.py), the keys
`--repair` checks again; and how each reader reads only those.

`TableScope` is one predicate on canonical keys (`key in scope`), the truth compare.compare applies to
both sides' rows. The readers push as much of it as their engine can into the read itself, so that the
rows outside it are not read, or at least never become Python tuples:

| reader             | range                                 | sample                                         |
|--------------------|---------------------------------------|------------------------------------------------|
| MySQL, PostgreSQL  | `WHERE key >= %s AND key <= %s`       | `WHERE MD5(seed, key) <= %s` (integer, text keys) |
| Delta              | dataset filter (file statistics)      | batches filtered on their key columns          |
| Iceberg            | scan row filter (manifest statistics) | batches filtered on their key columns          |
| Parquet changelog  | batches filtered on their key columns | batches filtered on their key columns          |
| PostgreSQL target  | WHERE on typed columns                | WHERE md5(…) (integer, text columns)           |

A source key of another type (dates, decimals, composite keys holding one) is sampled by reading its
key columns once for the threshold, then filtering the rows as they arrive.

What is pushed down may hold more than the scope (never less); what it holds beyond, the truth drops.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from cdc.jobs.verify.compare import _key, _key_values
from cdc.jobs.verify.key_range import ColumnRange
from cdc.jobs.verify.normalize import Column, converter
from cdc.jobs.verify.sample import KeySample, part_sql, rank_sql, sample_keys

Where = tuple[str, list[Any]]  # SQL text with %s placeholders (identifiers' `%` doubled), and its parameters

_PG_INTS = ("smallint", "integer", "bigint")
_PG_TEXTS = ("text", "character varying")


@dataclass
class TableScope:
    """The keys of one table to compare (every key when nothing restricts them)."""

    key_columns: list[Column]
    range: ColumnRange | None = None
    sample: KeySample | None = None
    keys: Container[str] | None = None  # only these canonical keys (`--repair`'s check afterwards)
    _convs: list[Callable[[Any], str | None]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._convs = [converter(c, True) for c in self.key_columns]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.key_columns]

    @property
    def restricts(self) -> bool:
        return self.range is not None or self.sample is not None or self.keys is not None

    # -- the truth ---------------------------------------------------------------------------------
    def holds(self, parts: Sequence[str | None]) -> bool:
        """Whether the key of these canonical parts is in the range and the sample (not `keys`)."""
        if self.range is not None and not self.range.holds(parts[0]):
            return False
        return self.sample is None or self.sample.holds(parts)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        if self.keys is not None and key not in self.keys:
            return False
        return self.holds(_key_values(key, len(self.key_columns)))

    # -- the source --------------------------------------------------------------------------------
    def rank_sql(self, family: str, seed: int, expr: Callable[[Column], str]) -> Where | None:
        """The sample's rank as the source computes it, or None when a key column's SQL text is not its
        canonical text (`expr`: a column's SQL reading, as the source quotes it)."""
        parts = [part_sql(family, c.kind, c.type, expr(c)) for c in self.key_columns]
        if any(p is None for p in parts):
            return None
        return rank_sql(family, [p for p in parts if p is not None], seed)

    def source_where(self, family: str, expr: Callable[[Column], str]) -> Where | None:
        """The WHERE (without the keyword) that reads the range and, where the source can rank keys,
        the sample; None when it reads every row."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.range is not None:
            text, values = self.range.source_sql(expr(self.range.column), family)
            if text:
                clauses.append(text)
                params.extend(values)
        if self.sample is not None:
            ranked = self.rank_sql(family, self.sample.seed, expr)
            if ranked is not None:
                clauses.append(f"{ranked[0]} <= %s")
                params.extend([*ranked[1], self.sample.threshold])
        return (" AND ".join(clauses), params) if clauses else None

    # -- the target --------------------------------------------------------------------------------
    def arrow_filter(self, schema: pa.Schema) -> Any:
        """The range as a pyarrow dataset expression on a target of `schema`, or None."""
        if self.range is None or self.range.column.name not in schema.names:
            return None
        return self.range.arrow_filter(schema.field(self.range.column.name).type)

    def iceberg_filter(self, schema: pa.Schema) -> Any:
        """The range as a pyiceberg row filter on a target of (Arrow) `schema`, or None."""
        if self.range is None or self.range.column.name not in schema.names:
            return None
        return self.range.iceberg_filter(schema.field(self.range.column.name).type)

    def postgres_where(self, types: dict[str, str]) -> tuple[Any, list[Any]] | None:
        """The WHERE (psycopg.sql, without the keyword) for a PostgreSQL target whose columns have these
        information_schema data types; None when nothing can be pushed down."""
        from psycopg import sql

        if any("%" in name for name in self.names):
            return None  # a placeholder-like identifier: the truth filters instead
        clauses: list[Any] = []
        params: list[Any] = []
        if self.range is not None and self.range.column.name in types:
            pushed = self.range.postgres_sql(types[self.range.column.name])
            if pushed is not None:
                clauses.append(pushed[0])
                params.extend(pushed[1])
        if self.sample is not None:
            parts = [_pg_target_part(c, types.get(c.name, "")) for c in self.key_columns]
            if all(p is not None for p in parts):
                text, values = rank_sql("postgres", [p for p in parts if p is not None], self.sample.seed)
                clauses.append(sql.SQL(text + " <= %s"))
                params.extend([*values, self.sample.threshold])
        if not clauses:
            return None
        return sql.SQL(" AND ").join(clauses), params

    def batch_mask(self, batch: pa.RecordBatch | pa.Table) -> pa.Array | None:
        """Which rows of a target batch are in the scope, computed on its key columns alone (before any
        row is materialized); None when nothing restricts the keys."""
        if not self.restricts or not batch.num_rows:
            return None
        columns = [batch.column(n).to_pylist() for n in self.names]
        keep = []
        for values in zip(*columns, strict=True):
            parts = [f(v) for f, v in zip(self._convs, values, strict=True)]
            keep.append(self.holds(parts) and (self.keys is None or _key(parts) in self.keys))
        return pa.array(keep, pa.bool_())


def _pg_target_part(column: Column, data_type: str) -> str | None:
    """A PostgreSQL target column's canonical text as SQL (for the sample's rank), when its text is it."""
    from psycopg import sql

    ident = sql.Identifier(column.name).as_string(None)
    if column.kind == "int" and data_type in _PG_INTS:
        return f"{ident}::text"
    if column.kind == "text" and data_type in _PG_TEXTS:
        return f"{ident}::text"
    return None


def filtered(batch: pa.RecordBatch | pa.Table, scope: TableScope | None) -> pa.RecordBatch | pa.Table:
    """`batch` without the rows outside `scope`."""
    mask = scope.batch_mask(batch) if scope is not None else None
    return batch if mask is None else batch.filter(mask)


def draw_sample(
    source: Any, table: Any, scope: TableScope, n: int, seed: int, progress: Callable[[str], None]
) -> KeySample | None:
    """`n` random keys of the source table within `scope`'s range (None: it holds no more than `n`).

    Where the source ranks keys itself, one query returns the threshold; else its key columns are read."""
    width = len(scope.key_columns)
    ranked = scope.rank_sql(source.family, seed, source.sql_expr)
    where = scope.source_where(source.family, source.sql_expr)  # the range alone: no sample yet
    if ranked is not None:
        progress(f"{table.qualified}: sampling {n} keys (seed {seed}) in the database")
        found = source.nth_smallest(table, ranked, where, n)
        return KeySample(seed, found[0], n, width) if len(found) > 1 else None
    progress(f"{table.qualified}: sampling {n} keys (seed {seed}) from the key columns")
    convs = [converter(c, False) for c in scope.key_columns]
    rows = source.rows(table, scope.key_columns, scope if scope.range is not None else None)
    return sample_keys((_key([f(v) for f, v in zip(convs, row, strict=True)]) for row in rows), n, seed, width)

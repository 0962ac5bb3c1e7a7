"""Shared steps of the Spark tests: run a query to the end, read targets, build raw batches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

from cdc_spark.pipeline import start_query
from cdc_spark.source.reader import ARROW_SCHEMA


def run_available_now(spark: Any, source: Mapping[str, str], sink: Mapping[str, Any], checkpoint: str) -> Any:
    """Catch up to the current end of the topics and stop; returns the finished query."""
    query = start_query(spark, source, sink, checkpoint, available_now=True)
    query.awaitTermination(180)
    if query.exception() is not None:
        raise query.exception()  # type: ignore[misc]
    return query


def raw_frame(
    spark: Any,
    topic: str,
    records: Sequence[tuple[bytes | None, bytes | None]],
    partition: int = 0,
    first_offset: int = 0,
) -> Any:
    """A DataFrame shaped like the `cdc` source's output (for calling the applier directly)."""
    n = len(records)
    table = pa.Table.from_arrays(
        [
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(range(first_offset, first_offset + n), pa.int64()),
            pa.array([k for k, _ in records], pa.binary()),
            pa.array([v for _, v in records], pa.binary()),
            pa.array([0] * n, pa.int64()),
        ],
        schema=ARROW_SCHEMA,
    )
    return spark.createDataFrame(table)


def visible(rows: list[dict[str, Any]], columns: Sequence[str] = ("id", "name", "qty")) -> dict[int, tuple]:
    """id → row values, leaving out soft-deleted rows."""
    return {r["id"]: tuple(r.get(c) for c in columns) for r in rows if not r.get("__deleted")}


def delta_rows(path: str) -> list[dict[str, Any]]:
    if not DeltaTable.is_deltatable(path):
        return []
    return DeltaTable(path).to_pyarrow_table().to_pylist()


def postgres_rows(dsn: str, table: str, schema: str = "public") -> list[dict[str, Any]]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (f'"{schema}"."{table}"',)).fetchone()
        if exists is None or next(iter(exists.values())) is None:
            return []
        return list(conn.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall())


def iceberg_rows(catalog: Mapping[str, Any], namespace: str, table: str) -> list[dict[str, Any]]:
    """The table's rows read with pyiceberg's own `load_catalog` (not the sink's code): a SQL catalog
    named `cdc` for a `uri` of SQLite, as the sink names it, or whatever `type` says."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import NoSuchTableError

    props = {k: v for k, v in catalog.items() if k != "name"}
    try:
        loaded = load_catalog(str(catalog.get("name", "cdc")), **props).load_table((namespace, table))
        return loaded.scan().to_arrow().to_pylist()
    except NoSuchTableError:
        return []

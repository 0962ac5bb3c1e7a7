"""A range of one embedded-log partition read straight into Arrow record batches.

This is the embedded log's public bulk-read API (`EmbeddedLog.read_arrow`): readers that want
columns, such as the Spark source, use it instead of querying the log's SQLite tables, so the
table layout stays known to `cdc.log.embedded` alone.

ADBC's SQLite driver builds the Arrow arrays in C: about 2-3x faster than sqlite3 rows plus
`pa.array` for 1-3 KB values. It infers column types from the values, so nullable blobs are
read as `COALESCE(x, x'')` plus an `IS NULL` flag and put back together here. pyarrow and
adbc-driver-sqlite come with the `cdc[arrow]` extra; the rest of the log needs neither.

ADBC carries its own copy of SQLite, which must not have the file open while Python's has it
open in the same process (sqlite_copies, issue 19). So each batch is read through a
connection of its own, opened and closed within the batch (never held while the caller has a
batch): ADBC when no `sqlite3` connection to the log is open in this process, else `sqlite3`.
Each batch is its own snapshot, as each poll of a `LogReader` is; a log that is busy is
waited for or retried, for up to the log's busy timeout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from cdc.log.base import LogError
from cdc.log.embedded_locks import BusyTimeout, Deadline, retry_busy
from cdc.log.sqlite_copies import SQLITE_COPIES, SqliteCopies, connect_counted

if TYPE_CHECKING:
    import pyarrow as pa

BATCH_ROWS = 10_000


class RecordsDeletedError(LogError):
    """Records of the range were deleted (retention, delete-records) before they were read.

    Each batch is read in a snapshot of its own, so retention may move the partition's start
    past the next batch while a range is being read. The log's start is read with every batch;
    a start beyond the batch's first wanted offset means records in between may be gone
    unread. `position` is that first wanted offset, `start` the partition's start then.
    """

    def __init__(self, topic: str, partition: int, position: int, start: int) -> None:
        self.topic, self.partition, self.position, self.start = topic, partition, position, start
        super().__init__(
            f"{topic}-{partition}: offsets from {position} were deleted from the embedded log (its start is now "
            f"{start}) while they were being read"
        )


def arrow_schema(headers: bool = False) -> pa.Schema:
    """The batches' schema: `offset`, `timestamp_ms`, `key`, `value` (null keys and values stay
    null), and with `headers` the record's headers in the log's encoding (`decode_headers`)."""
    import pyarrow as pa

    fields = [
        ("offset", pa.int64()),
        ("timestamp_ms", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
    if headers:
        fields.append(("headers", pa.binary()))
    return pa.schema(fields)


def read_arrow(
    path: Path,
    busy_timeout_ms: int,
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    headers: bool = False,
    batch_rows: int = BATCH_ROWS,
    connect: Callable[[], sqlite3.Connection] | None = None,
    copies: SqliteCopies = SQLITE_COPIES,
) -> Iterator[pa.RecordBatch]:
    """Records `start <= offset < end` of `topic`/`partition` in `path`, in offset order, as
    batches of at most `batch_rows` rows with `arrow_schema(headers)`. Empty batches are skipped.
    `connect` opens a `sqlite3` connection to the log (EmbeddedLog.connect) for the batches that
    cannot use ADBC; by default a plain one."""
    if connect is None:
        connect = partial(connect_counted, path, busy_timeout_ms / 1000, copies, isolation_level=None)
    position = start
    while position < end:
        query = _Query(topic, partition, position, end, batch_rows, headers)
        deadline = Deadline(busy_timeout_ms / 1000)
        try:
            with copies.adbc(path) as use_adbc:
                if use_adbc:
                    batch, log_start = retry_busy(lambda q=query: _adbc_batch(path, busy_timeout_ms, q), deadline)
            if not use_adbc:
                batch, log_start = _sqlite3_batch(connect, query, deadline)
        except BusyTimeout as e:
            raise LogError(
                f"reading {topic}-{partition} of the embedded log {path} failed: it stayed locked for "
                f"{e.waited_s:.1f} s (busy timeout {busy_timeout_ms} ms); find what holds it with `fuser {path}`"
            ) from e
        if log_start > position:  # read after the batch: any deletion that reached it shows here
            raise RecordsDeletedError(topic, partition, position, log_start)
        if batch.num_rows:
            yield batch
        if batch.num_rows < batch_rows:
            return
        position = batch.column(0)[batch.num_rows - 1].as_py() + 1


class _Query:
    """One batch's SELECT: the next `limit` records from `position`, below `end`."""

    def __init__(self, topic: str, partition: int, position: int, end: int, limit: int, headers: bool) -> None:
        self.headers, self.limit = headers, limit
        self.params = (topic, partition, position, end, limit)

    START_SQL = "SELECT start_offset FROM partitions WHERE topic=? AND partition=?"

    @property
    def start_params(self) -> tuple[str, int]:
        return self.params[0], self.params[1]

    def sql(self, nullable_as_flags: bool) -> str:
        if nullable_as_flags:  # ADBC: one inferred type per column, so no NULL blobs
            columns = "offset, timestamp, COALESCE(key, x''), key IS NULL, COALESCE(value, x''), value IS NULL"
            if self.headers:
                columns += ", COALESCE(headers, x'')"  # no headers decode as none
        else:
            columns = "offset, timestamp, key, value" + (", COALESCE(headers, x'')" if self.headers else "")
        return (
            f"SELECT {columns} FROM records WHERE topic=? AND partition=? AND offset>=? AND offset<? "
            "ORDER BY offset LIMIT ?"
        )


def _adbc_batch(path: Path, busy_timeout_ms: int, query: _Query) -> tuple[pa.RecordBatch, int]:
    """The batch through an ADBC connection that is closed again before this returns, and the
    partition's start offset read after it."""
    import adbc_driver_sqlite.dbapi as adbc
    import pyarrow as pa
    from adbc_driver_sqlite import StatementOptions

    conn = adbc.connect(str(path), autocommit=True)
    try:
        cur = conn.cursor()
        try:
            cur.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            cur.execute("PRAGMA mmap_size=2147418112")  # reads through a memory map skip SQLite's page copies
            cur.adbc_statement.set_options(**{StatementOptions.BATCH_ROWS.value: str(query.limit)})
            cur.execute(query.sql(nullable_as_flags=True), query.params)
            table = cur.fetch_arrow_table()
            cur.execute(_Query.START_SQL, query.start_params)
            found = cur.fetchone()
        finally:
            cur.close()
    finally:
        conn.close()
    schema = arrow_schema(query.headers)
    log_start = int(found[0]) if found else 0
    if table.num_rows == 0:
        return _empty(schema), log_start
    columns = [table.column(i).combine_chunks() for i in range(table.num_columns)]
    arrays = [
        columns[0].cast(pa.int64()),
        columns[1].cast(pa.int64()),
        _nullable(columns[2], columns[3]),
        _nullable(columns[4], columns[5]),
    ]
    if query.headers:
        arrays.append(columns[6].cast(pa.binary()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema), log_start


def _sqlite3_batch(
    connect: Callable[[], sqlite3.Connection], query: _Query, deadline: Deadline
) -> tuple[pa.RecordBatch, int]:
    """The batch through a `sqlite3` connection of the log, closed again before this returns, and
    the partition's start offset read after it."""
    import pyarrow as pa

    conn = connect()
    try:
        rows = retry_busy(
            lambda: conn.execute(query.sql(nullable_as_flags=False), query.params).fetchall(), deadline, conn
        )
        found = retry_busy(lambda: conn.execute(_Query.START_SQL, query.start_params).fetchone(), deadline, conn)
    finally:
        conn.close()
    schema = arrow_schema(query.headers)
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    batch = pa.RecordBatch.from_arrays(
        [pa.array(col, type=field.type) for col, field in zip(columns, schema, strict=True)], schema=schema
    )
    return batch, int(found[0]) if found else 0


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


def _nullable(values: pa.Array, is_null: pa.Array) -> pa.Array:
    """`values` with nulls where the IS NULL flag is set (no copy when there is none)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values, mask = values.cast(pa.binary()), pc.cast(is_null, pa.bool_())
    if not pc.any(mask).as_py():
        return values
    return pc.if_else(mask, pa.scalar(None, pa.binary()), values)

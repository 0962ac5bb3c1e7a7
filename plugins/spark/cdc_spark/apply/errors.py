"""Errors of the apply engine: each is one line that names the table, the key or column,
the cause, and says what to do.

The targets raise value errors where they find the bad value, often without knowing the
table's key columns; `naming_keys`, around each table's apply, names the key of the row
(`RowValueError.name_key`) and wraps other libraries' errors in `TargetApplyError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from cdc_spark.decode.flatten import FlatBatch

# What a user does once the cause is fixed: `cdc run` users run it again; others restart their query.
RUN_AGAIN = "then run `cdc run` again (or restart the query)"
REPLAYED = "the batch is applied again from the checkpoint, nothing is lost"
# The way out for rows a target refuses for their values (Kafka Connect's errant record reporting).
PARK = (
    "set errors.tolerance=all with a dead-letter table (errors.deadletterqueue.path; in a cdc job "
    "errors.deadletter.table) or topic (errors.deadletterqueue.topic.name) and "
    f"{RUN_AGAIN.removeprefix('then ')}: the batch is then applied without the rows the target refuses, "
    "which are parked there with their error"
)
# Why a fix at the source does not unblock the batch.
AS_IT_IS = "a fix at the source does not help this batch, which is replayed from the checkpoint as it is"
_VALUE_CHARS = 40  # a key value longer than this is cut
_FIRST_KEYS = 3  # keys named when the offending one is unknown
_CAUSE_CHARS = 400  # another library's message longer than this is cut


def value_text(value: object) -> str:
    """One key value on one line: strings and bytes quoted as Python does (a trailing space, an empty
    key or a line break shows), long values cut after _VALUE_CHARS characters with '…'."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        text = repr(bytes(value))
    elif isinstance(value, str):
        text = repr(value)
    else:
        text = " ".join(str(value).split())
    if len(text) <= _VALUE_CHARS:
        return text
    quote = text[-1] if text[-1] in "'\"" else ""
    return text[: _VALUE_CHARS - 1].rstrip("\\") + "…" + quote  # no escape cut in half: '\\…'


def key_text(values: Mapping[str, object], columns: Sequence[str]) -> str:
    """`id=42` for one key column, `(order_id=7, line_no=2)` for several."""
    parts = [f"{c}={value_text(values.get(c))}" for c in columns]
    return parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def _in_table_order(table: pa.Table, key_columns: Sequence[str]) -> list[str]:
    """The key columns in the table's column order (a batch's key columns come sorted by name)."""
    names = table.column_names
    return sorted(key_columns, key=lambda k: names.index(k) if k in names else len(names))


def row_key(table: pa.Table, key_columns: Sequence[str], row: int) -> str:
    """The key text of one row of `table`."""
    keys = _in_table_order(table, key_columns)
    return key_text(table.slice(row, 1).select(keys).to_pylist()[0], keys)


def batch_keys(table: pa.Table, key_columns: Sequence[str]) -> str:
    """`key id=1` for one row, else the count and the first few: `the batch's 12 keys (first: id=1, …)`."""
    n = table.num_rows
    if not key_columns or any(k not in table.column_names for k in key_columns):
        return f"the batch's {n} rows"
    keys = _in_table_order(table, key_columns)
    return keys_line(n, [key_text(r, keys) for r in table.slice(0, _FIRST_KEYS).select(keys).to_pylist()])


def keys_line(n: int, first: Sequence[str]) -> str:
    """`key id=1` for one key, else the count and the first few (`key_text`s) of the `n`."""
    first = list(first)[:_FIRST_KEYS]
    if n == 1:
        return f"key {first[0]}"
    if n <= _FIRST_KEYS:
        return f"the batch's {n} keys ({', '.join(first)})"
    return f"the batch's {n} keys (first: {', '.join(first)}, …)"


def one_line(error: BaseException) -> str:
    """`Class: message` of another library's error, on one line and cut after _CAUSE_CHARS: the
    message's first line and PostgreSQL's DETAIL/HINT lines, without what follows (deltalake
    appends a backtrace of numbered frames)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    kept = lines[:1] + [line for line in lines[1:] if line.startswith(("DETAIL:", "HINT:"))]
    message = " ".join(" ".join(kept).split())
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return text if len(text) <= _CAUSE_CHARS else text[: _CAUSE_CHARS - 1] + "…"


class SinkConfigError(ValueError):
    """A sink setting is missing or wrong."""


class CatalogOpenError(RuntimeError):
    """The Iceberg catalog does not answer or refuses (an unreachable REST server, a wrong credential,
    a database the SQL catalog cannot open): the catalog (without secrets) and the cause on one line."""

    def __init__(self, catalog: str, cause: str) -> None:
        super().__init__(
            f"cannot open the Iceberg {catalog}: {cause}. Fix: check catalog.uri, that the catalog is reachable "
            f"from here and its credentials (credential, token, …), {RUN_AGAIN}."
        )


class PoisonEventError(RuntimeError):
    """An event cannot be applied and `errors.tolerance=none` stops the stream."""


class RowValueError(RuntimeError):
    """A value of one row that the target cannot store.

    Raised where the value is found, with `row` (that row of the batch, one-row table); the
    caller that knows the table's key columns names its key (`name_key`) before it propagates.
    `problem` is the message without the advice: what a dead-lettered row's error says."""

    def __init__(self, table: str, column: str, *, row: pa.Table | None = None, key: str | None = None) -> None:
        self.table, self.column, self.row, self.key = table, column, row, key
        super().__init__(self.message())

    @property
    def problem(self) -> str:
        raise NotImplementedError

    def message(self) -> str:
        raise NotImplementedError

    def name_key(self, key_columns: Sequence[str]) -> None:
        """Name the key of the offending row in the message, if the row is known."""
        if self.key is not None or self.row is None or self.row.num_rows == 0 or not key_columns:
            return
        if any(k not in self.row.column_names for k in key_columns):
            return
        self.key = row_key(self.row, key_columns, 0)
        self.args = (self.message(),)


class SchemaEvolutionError(RuntimeError):
    """A source column changed to a type that does not hold its old values (lenient refuses it)."""

    def __init__(self, table: str, column: str, old: object, new: object) -> None:
        self.table, self.column, self.old, self.new = table, column, old, new
        super().__init__(
            f"table {table}: column {column!r} changed type from {old} to {new}, which does not hold every "
            f"stored value, so schema.change.behavior=lenient (the default) stops here. Fix: set the table's "
            f"schema.change.behavior to evolve (retype the column, casting stored values), try_evolve (keep "
            f"{old}, incoming values that do not convert become NULL) or ignore (keep {old}, stop on a value "
            f"that does not fit), or route the topic to a new table with table.name.format; {RUN_AGAIN}."
        )


class SchemaChangeRefusedError(SchemaEvolutionError):
    """A schema change the table's `schema.change.behavior` refuses (exception: any change;
    ignore: a value that does not fit the column's old type). Names the policy that accepts it."""

    def __init__(
        self, table: str, column: str, old: object, new: object, behavior: str, accept: str, value: object = None
    ) -> None:
        self.table, self.column, self.old, self.new = table, column, old, new
        self.behavior, self.accept = behavior, accept
        if old == "absent":
            what = f"new column {column!r} ({new})"
        elif new == "dropped":
            what = f"column {column!r} ({old}) dropped at the source"
        else:
            what = f"column {column!r} changed type from {old} to {new}"
        if behavior == "ignore":
            why = f"schema.change.behavior=ignore keeps {old}, and the value {value_text(value)} does not fit it"
        else:
            why = f"schema.change.behavior={behavior} refuses schema changes"
        RuntimeError.__init__(
            self,
            f"table {table}: {what}; {why}. Fix: set the table's schema.change.behavior to {accept} (sink.tables."
            f"<table>.schema.change.behavior, or sink.schema.change.behavior for every table), or migrate the "
            f"target yourself; {RUN_AGAIN}.",
        )


class ValueOutOfRangeError(RowValueError):
    """A value the source sends but the lake's type cannot hold (e.g. PostgreSQL's ±infinity
    timestamps, which Debezium sends as their extreme epoch values)."""

    def __init__(
        self,
        table: str,
        column: str,
        lake_type: object,
        cause: object,
        *,
        row: pa.Table | None = None,
        key: str | None = None,
    ) -> None:
        self.lake_type, self.cause = lake_type, cause
        super().__init__(table, column, row=row, key=key)

    @property
    def problem(self) -> str:
        cause = " ".join(str(self.cause).split())
        where = f"key {self.key}: {cause}" if self.key is not None else cause
        return (
            f"table {self.table}: column {self.column!r} holds a value outside what the lake's {self.lake_type} can "
            f"store ({where})"
        )

    def message(self) -> str:
        return (
            f"{self.problem}. For timestamps this is usually PostgreSQL's 'infinity' or '-infinity', which Debezium "
            "sends as 9223372036825200000 / -9223372036832400000 ms. Fix: the lake's tables cannot hold it, and "
            f"{AS_IT_IS}: {PARK}. Then change such values at the source (e.g. to '9999-12-31'): the row's next "
            "change is applied as usual."
        )


@dataclass(frozen=True)
class Refused:
    """A row of one table's batch that the target refuses for its values, found under
    errors.tolerance=all: it is left out of the apply and its event goes to the dead letters.

    `row`: the row of the batch (FlatBatch table); `problem`: one line naming the table, the key,
    the column and the cause; `error_class`: the error the row raises under errors.tolerance=none;
    `deleted`: the row is a delete, applied without the refused value of its old row image
    (which no target needs), not left out."""

    row: int
    problem: str
    error_class: str
    deleted: bool = False

    @classmethod
    def of(cls, row: int, error: BaseException, deleted: bool = False) -> Refused:
        kind = type(error)
        problem = str(getattr(error, "problem", error))
        return cls(row, problem, f"{kind.__module__}.{kind.__qualname__}", deleted)


class TargetApplyError(RuntimeError):
    """Another library (deltalake, pyiceberg, pyarrow, psycopg) failed while applying one table's
    batch: the table, the key (or the batch's keys) and the library's error on one line; the
    library's exception is the `__cause__`."""

    def __init__(self, table: str, keys: str, cause: BaseException) -> None:
        self.table, self.keys = table, keys
        super().__init__(
            f"table {table}: cannot apply {keys}: {one_line(cause)}. Fix: fix the cause, {RUN_AGAIN}: {REPLAYED}."
        )


def ours(error: BaseException) -> bool:
    """cdc's and the sink's own errors already name the table and say what to do."""
    return type(error).__module__.split(".", 1)[0] in ("cdc", "cdc_spark")


@contextmanager
def naming_keys(table: str, batch: FlatBatch) -> Iterator[None]:
    """Around one table's apply: a `RowValueError` gets the key of its row named; another
    library's error becomes a `TargetApplyError` naming the table and the batch's keys. Either
    propagates: the query stops, and the batch is replayed from the checkpoint on the next run."""
    try:
        yield
    except RowValueError as e:
        e.name_key(batch.key_columns)
        raise
    except Exception as e:
        if ours(e):
            raise
        raise TargetApplyError(table, batch_keys(batch.table, batch.key_columns), e) from e


class BatchTooLargeError(RuntimeError):
    """A micro-batch's per-key winners do not fit what the Spark driver accepts in one collect.

    Delta and Iceberg commit on the driver (delta-rs and pyiceberg are single-committer), so
    each batch's winners are collected there; spark.driver.maxResultSize (1 GiB by default)
    and the driver's heap bound that collect. Spark replays a failed batch with the same
    offsets, so a smaller maxEventsPerTrigger only helps the batches after it.
    """

    def __init__(self, batch_id: int, cause: str) -> None:
        self.batch_id = batch_id
        super().__init__(
            f"micro-batch {batch_id} is too large to apply: its latest events per key must be collected on "
            f"the Spark driver (Delta and Iceberg commit there), and Spark refused: {cause}. Fix: raise "
            "spark.driver.maxResultSize and spark.driver.memory above that size (in a cdc job: spark.conf), "
            f"{RUN_AGAIN}; the batch is replayed from the checkpoint with the same offsets. To keep later "
            "batches smaller, lower maxEventsPerTrigger (in a cdc job: spark.maxEventsPerTrigger)."
        )


_DRIVER_LIMITS = ("spark.driver.maxResultSize", "java.lang.OutOfMemoryError")


def driver_limit(error: BaseException) -> str | None:
    """The line of a Spark failure that says a collect hit the driver's result size or heap, if it did."""
    for line in str(error).splitlines():
        if any(marker in line for marker in _DRIVER_LIMITS):
            cause = line.strip().removeprefix("Caused by: ").split("stage failure: ", 1)[-1]
            return cause.strip().rstrip(".")
    return None

"""Errors of the apply engine: each names the table/column/event and says what to do."""

from __future__ import annotations


class SinkConfigError(ValueError):
    """A sink setting is missing or wrong."""


class PoisonEventError(RuntimeError):
    """An event cannot be applied and `errors.tolerance=none` stops the stream."""


class SchemaEvolutionError(RuntimeError):
    """A source column changed type in a way the target cannot follow."""

    def __init__(self, table: str, column: str, old: object, new: object) -> None:
        self.table, self.column, self.old, self.new = table, column, old, new
        super().__init__(
            f"table {table}: column {column!r} changed type from {old} to {new}, which cannot be applied "
            f"in place. Fix: migrate the target column yourself (e.g. ALTER TABLE {table} ALTER COLUMN "
            f"{column} TYPE <{new}>, or rewrite the Delta/Iceberg table with the new type), or route the "
            "topic to a new table with table.name.format; then restart the query from its checkpoint."
        )


class TypeWideningError(SchemaEvolutionError):
    """A lossless widening (int → bigint, float → double, decimal precision up) that the lake table
    cannot apply in place: delta-rs has no ALTER COLUMN TYPE (Delta's typeWidening feature), and
    pyiceberg promotions are not applied automatically here."""

    def __init__(self, table: str, column: str, old: object, new: object) -> None:
        self.table, self.column, self.old, self.new = table, column, old, new
        RuntimeError.__init__(
            self,
            f"table {table}: column {column!r} widened from {old} to {new}. The values fit, but the table's "
            f"column type must change first, and deltalake (delta-rs) cannot change a column type in place. "
            f"Fix: rewrite the table with the wider type, e.g. for Delta: dt = DeltaTable(path); "
            f"write_deltalake(path, dt.to_pyarrow_table().cast(<schema with {column}: {new}>), mode='overwrite', "
            f"schema_mode='overwrite'), or for Iceberg: table.update_schema().update_column({column!r}, <{new} type>)"
            ".commit(); then restart the query from its checkpoint (batches already applied stay skipped).",
        )


class ValueOutOfRangeError(RuntimeError):
    """A value the source sends but the lake's type cannot hold (e.g. PostgreSQL's ±infinity
    timestamps, which Debezium sends as their extreme epoch values)."""

    def __init__(self, table: str, column: str, lake_type: object, cause: object) -> None:
        self.table, self.column = table, column
        super().__init__(
            f"table {table}: column {column!r} holds a value outside what the lake's {lake_type} can store "
            f"({cause}). For timestamps this is usually PostgreSQL's 'infinity' or '-infinity', which Debezium "
            "sends as 9223372036825200000 / -9223372036832400000 ms. Fix: change such values at the source "
            "(e.g. to '9999-12-31'), or leave the column out with column.exclude.list; then restart the query."
        )


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
            "then restart; the batch is replayed from the checkpoint with the same offsets. To keep later "
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

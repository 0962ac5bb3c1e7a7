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

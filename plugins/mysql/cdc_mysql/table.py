"""Source-neutral table definitions: the same shape whether read from TableMap metadata or information_schema."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One column. `type` is a normalised MySQL type name (see `MySqlValueConverters.schema_for`)."""

    name: str
    type: str
    nullable: bool = True
    unsigned: bool = False
    length: int | None = None  # BIT bits, BINARY bytes, DECIMAL precision
    scale: int | None = None
    fsp: int = 0
    charset: str | None = None
    values: tuple[str, ...] = ()  # ENUM/SET members in definition order


@dataclass(frozen=True, slots=True)
class TableDef:
    db: str
    name: str
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.db}.{self.name}"


@dataclass(frozen=True, slots=True)
class ColumnMeta:
    """What information_schema adds to a column: schema history fields and the default value.

    `type` is the normalised type the default was written for; a TableMap column of another
    type (the reader lags behind an ALTER) gets no default from it.
    """

    type: str
    type_name: str  # Debezium's typeName, e.g. INT UNSIGNED
    jdbc_type: int
    length: int | None = None
    scale: int | None = None
    auto_incremented: bool = False
    generated: bool = False
    comment: str | None = None
    default: str | None = None  # Debezium's defaultValueExpression: the literal, unquoted


@dataclass(frozen=True, slots=True)
class TableMeta:
    """Table-level facts for schema changes and history (not needed to decode rows)."""

    default_charset: str | None
    comment: str | None
    columns: dict[str, ColumnMeta]  # by column name, in ordinal order

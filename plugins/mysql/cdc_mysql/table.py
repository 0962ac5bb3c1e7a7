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

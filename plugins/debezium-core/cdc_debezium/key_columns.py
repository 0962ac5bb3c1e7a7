"""`message.key.columns`: which columns make a table's message key, the one parser of the setting.

Debezium's format (RelationalDatabaseConnectorConfig.MSG_KEY_COLUMNS, read by its KeyMapper):
entries `<fully-qualified table regex>:<column>,<column>` separated by `;`; the first entry
whose regex matches the whole table id (`db.table` for MySQL, `schema.table` for PostgreSQL)
names the key. MySQL compares table names case-insensitively, as the server does on the
platforms Debezium documents; PostgreSQL's identifiers are case-sensitive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cdc.api import ConfigException

__all__ = ["MESSAGE_KEY_COLUMNS", "KeyColumns"]

MESSAGE_KEY_COLUMNS = "message.key.columns"
_ENTRY = re.compile(r"^\s*[^:;\s]+\s*:\s*[^:;]+$")


@dataclass(frozen=True)
class KeyColumns:
    """The parsed setting: (table regex, key columns) per entry, in the order given."""

    rules: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = ()

    @classmethod
    def parse(cls, value: str | None, *, case_sensitive: bool = True) -> KeyColumns:
        """Parse the setting; a malformed entry or table regex raises ConfigException naming it."""
        rules = []
        for part in (value or "").split(";"):
            if not part.strip():
                continue
            if not _ENTRY.match(part):
                raise ConfigException(
                    f"Invalid value {part.strip()!r} for configuration {MESSAGE_KEY_COLUMNS}: expected "
                    "'<db>.<table regex>:<column>,<column>' entries separated by ';' (PostgreSQL: "
                    "'<schema>.<table regex>:…')",
                    MESSAGE_KEY_COLUMNS,
                    value,
                )
            table, cols = part.split(":", 1)
            try:
                pattern = re.compile(table.strip(), 0 if case_sensitive else re.IGNORECASE)
            except re.error as e:
                raise ConfigException(
                    f"Invalid value {part.strip()!r} for configuration {MESSAGE_KEY_COLUMNS}: the table part "
                    f"{table.strip()!r} is not a valid regular expression ({e})",
                    MESSAGE_KEY_COLUMNS,
                    value,
                ) from None
            rules.append((pattern, tuple(c.strip() for c in cols.split(",") if c.strip())))
        return cls(tuple(rules))

    def for_table(self, table_id: str) -> tuple[str, ...] | None:
        """The key columns of the first entry matching the whole `table_id`, or None."""
        for pattern, cols in self.rules:
            if pattern.fullmatch(table_id):
                return cols
        return None

    def __bool__(self) -> bool:
        return bool(self.rules)

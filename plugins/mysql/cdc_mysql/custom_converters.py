"""Debezium's `converters` (CustomConverter) for MySQL: TinyIntOneToBooleanConverter, the others recognised.

`converters=<alias>,…` names the converters; `<alias>.type` is the class and `<alias>.*` its settings.
`io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter` (also under its
`io.debezium.connector.mysql.converters` name) turns TINYINT columns of display width 1 (every width
with `<alias>.length.checker=false`), chosen by `<alias>.selector` (regexes of `db.table.column`; all
by default), into BOOLEAN fields: a value above 0 is true; a NOT NULL column's missing value is its
default, else false. Any other converter class is accepted with "recognised, not supported": its
columns keep the standard type mapping.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc.api import SchemaBuilder
from cdc_debezium.filters import compile_list
from cdc_mysql.table import ColumnDef, ColumnMeta

log = logging.getLogger(__name__)

TINYINT_ONE_TO_BOOLEAN = (
    "io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter",
    "io.debezium.connector.mysql.converters.TinyIntOneToBooleanConverter",
)


@dataclass(frozen=True)
class TinyIntToBoolean:
    selector: list[re.Pattern[str]]
    length_checker: bool

    def applies(self, column_id: str, col: ColumnDef, meta: ColumnMeta | None) -> bool:
        type_name = meta.type_name if meta is not None else col.type.upper()
        if type_name.upper() not in ("TINYINT", "TINYINT UNSIGNED"):
            return False
        if self.length_checker and (meta is None or meta.length != 1):
            return False
        return not self.selector or any(p.fullmatch(column_id) for p in self.selector)


@dataclass(frozen=True)
class CustomConverters:
    tinyint: list[TinyIntToBoolean] = field(default_factory=list)
    unsupported: dict[str, str] = field(default_factory=dict)  # alias → class

    @classmethod
    def from_config(cls, props: Mapping[str, Any]) -> CustomConverters:
        aliases = [a.strip() for a in str(props.get("converters") or "").split(",") if a.strip()]
        tinyint, unsupported = [], {}
        for alias in aliases:
            kind = str(props.get(f"{alias}.type") or "").strip()
            if kind in TINYINT_ONE_TO_BOOLEAN:
                selector = str(props.get(f"{alias}.selector") or "")
                checker = str(props.get(f"{alias}.length.checker") or "true").strip().lower() != "false"
                patterns = compile_list(f"{alias}.selector", [p.strip() for p in selector.split(",") if p.strip()])
                tinyint.append(TinyIntToBoolean(patterns, checker))
            else:
                unsupported[alias] = kind
        return cls(tinyint, unsupported)

    def warn_unsupported(self) -> list[str]:
        lines = [
            f"converters={alias} ({kind or 'no type'}): recognised, not supported: its columns keep the standard "
            "type mapping (only TinyIntOneToBooleanConverter is built in)"
            for alias, kind in self.unsupported.items()
        ]
        for line in lines:
            log.warning("%s", line)
        return lines

    def column(self, column_id: str, col: ColumnDef, meta: ColumnMeta | None) -> tuple[SchemaBuilder, Any] | None:
        """(schema builder, converter) when a converter takes the column, else None."""
        if not any(rule.applies(column_id, col, meta) for rule in self.tinyint):
            return None
        default = _default(meta) if not col.nullable else None

        def to_bool(v: Any) -> Any:
            if v is None:
                return None if col.nullable else default
            if isinstance(v, bool):
                return v
            return int(v) > 0

        return SchemaBuilder.bool(), to_bool


def _default(meta: ColumnMeta | None) -> bool:
    if meta is None or meta.default is None:
        return False
    text = meta.default.strip().lower()
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(float(text)) > 0
    except ValueError:
        return False

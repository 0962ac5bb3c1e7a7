"""`field.name.adjustment.mode` and `schema.name.adjustment.mode` of the PostgreSQL connector.

The rule (Debezium's SchemaNameAdjuster) has one owner, cdc.api.name_adjustment, which MySQL and
the Avro converter use too; this module keeps the connector's key names.
"""

from __future__ import annotations

from collections.abc import Callable

from cdc.api import name_adjustment

MODES = name_adjustment.MODES
FIELD_KEY = "field.name.adjustment.mode"
SCHEMA_KEY = "schema.name.adjustment.mode"


def adjuster(mode: str, full_names: bool = False) -> Callable[[str], str]:
    """The adjuster of a mode: field names (`full_names=False`) or schema full names (dots allowed).
    The rule itself has one owner, shared with MySQL and the Avro converter: cdc.api.name_adjustment."""
    return name_adjustment.adjuster(mode, full_name=full_names)

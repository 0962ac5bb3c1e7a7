"""`column.propagate.source.type` / `datatype.propagate.source.type`: the source column's type in schema parameters.

Debezium's PropagateSourceMetadataToSchemaParameter adds `__debezium.source.column.type` (the type
name, upper-cased: a domain's or enum's own name, `_name` for arrays), `…length`, `…scale` and
`…name` (the column's name before any field.name.adjustment.mode) to the field's schema. Length and
scale are what pgjdbc's TypeInfoCache reports for the column's type modifier (Debezium's pgoutput
path): the precision, else the display size; a domain without a modifier of its own takes its base's.
Which columns get them is decided with the other column mappers (`column_mappers`).
"""

from __future__ import annotations

from cdc_postgres.types import PgType, TypeRegistry

TYPE_NAME = "__debezium.source.column.type"
TYPE_LENGTH = "__debezium.source.column.length"
TYPE_SCALE = "__debezium.source.column.scale"
COLUMN_NAME = "__debezium.source.column.name"

UNKNOWN_LENGTH = 2**31 - 1  # pgjdbc's unknownLength (Integer.MAX_VALUE)
_DATETIME = ("time", "timetz", "timestamp", "timestamptz")


def _precision(name: str, typmod: int) -> int:
    """pgjdbc TypeInfoCache.getPrecision for a base type name."""
    match name:
        case "int2":
            return 5
        case "int4" | "oid":
            return 10
        case "int8":
            return 19
        case "float4":
            return 8
        case "float8":
            return 17
        case "numeric":
            return 0 if typmod == -1 else ((typmod - 4) >> 16) & 0xFFFF
        case "char" | "bool":
            return 1
        case "bpchar" | "varchar":
            return UNKNOWN_LENGTH if typmod == -1 else typmod - 4
        case "date" | "time" | "timetz" | "interval" | "timestamp" | "timestamptz":
            return _display_size(name, typmod)
        case "bit":
            return typmod
        case "varbit":
            return UNKNOWN_LENGTH if typmod == -1 else typmod
    return UNKNOWN_LENGTH


def _display_size(name: str, typmod: int) -> int:
    """pgjdbc TypeInfoCache.getDisplaySize for a base type name."""
    if name == "date":
        return 13
    if name in _DATETIME:
        second = {-1: 7, 0: 0, 1: 3}.get(typmod, typmod + 1)
        return {"time": 8, "timetz": 14, "timestamp": 22, "timestamptz": 28}[name] + second
    if name == "interval":
        return 49
    if name in ("varchar", "bpchar", "varbit"):
        return UNKNOWN_LENGTH if typmod == -1 else (typmod - 4 if name != "varbit" else typmod)
    if name == "numeric":
        if typmod == -1:
            return 131089
        precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
        return 1 + precision + (1 if scale else 0)
    if name == "bit":
        return typmod
    return UNKNOWN_LENGTH


def _scale(name: str, typmod: int) -> int:
    """pgjdbc TypeInfoCache.getScale for a base type name."""
    match name:
        case "float4":
            return 8
        case "float8":
            return 17
        case "numeric":
            return 0 if typmod == -1 else (typmod - 4) & 0xFFFF
        case "time" | "timetz" | "timestamp" | "timestamptz":
            return 6 if typmod == -1 else typmod
        case "interval":
            return 6 if typmod == -1 else typmod & 0xFFFF
    return 0


def base_name(types: TypeRegistry, t: PgType) -> str:
    """The name pgjdbc keys its tables by: arrays by their element, domains by their base."""
    resolved = types.resolve(t.oid) or t
    if resolved.category == "A" and resolved.element_oid:
        element = types.resolve(resolved.element_oid)
        return element.name if element is not None else resolved.name
    return resolved.name


def length_and_scale(types: TypeRegistry, own: PgType, typmod: int) -> tuple[int, int]:
    """The column's length and scale as Debezium's pgoutput decoder computes them (ColumnMetaData)."""
    base = base_name(types, own)
    if typmod == -1:
        typmod = types.domain_modifier(own.oid)
    size = _precision(base, typmod)
    if size == 0:
        size = _display_size(base, typmod)
    return size, _scale(base, typmod)


def parameters(types: TypeRegistry, own: PgType, typmod: int, column: str) -> dict[str, str]:
    """The four parameters Debezium adds for a column (no comment: include.schema.comments is not supported)."""
    length, scale = length_and_scale(types, own, typmod)
    return {
        TYPE_NAME: own.name.upper(),
        TYPE_LENGTH: str(length),
        TYPE_SCALE: str(scale),
        COLUMN_NAME: column,
    }

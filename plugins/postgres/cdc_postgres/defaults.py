"""Column defaults in the schemas, as Debezium's PostgresDefaultValueConverter puts them there.

The catalog's default expression (`pg_get_expr(adbin, adrelid)`, what pgjdbc reports as COLUMN_DEF)
becomes a value only for the types Debezium has a mapper for, chosen by the column's own type name
(a domain's name has none): the literal inside the first quotes, or the bare text, with NULL::...
meaning no default. An expression that calls a function (`nextval(...)` of a SERIAL, `now()`) or is
CURRENT_TIMESTAMP and its kin stands for "generated": it maps to a placeholder, 0 for numbers, the
epoch for dates and times, '' for text, so SMALLSERIAL/SERIAL/BIGSERIAL columns carry `default 0`.
The text is then converted by the column's own converter, so a default has the field's type; one
that does not parse, or converts to a struct (variable-scale numeric, point), is left out with a
warning, as in Debezium. Key fields carry the default too (Debezium builds them the same way).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from cdc.api import Struct
from cdc_postgres.types import PgType

_LITERAL = re.compile(r"'(.*?)'")
_FUNCTION = re.compile(r"^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT = {"current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"}
_TRIMMED = {
    "bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4", "serial", "int8", "bigserial",
    "smallserial", "uuid", "date", "time", "timestamp", "timestamptz", "interval",
}  # fmt: skip
# A generated value's placeholder, in PostgreSQL's own text form so the column's converter reads it.
# None: no placeholder (Debezium's PGInterval("epoch") does not parse either).
_PLACEHOLDER = {
    "bit": "00",
    "varbit": "0",
    "bool": "false",
    "bpchar": "",
    "varchar": "",
    "text": "",
    "numeric": "0.0",
    "float4": "0.0",
    "float8": "0.0",
    "int2": "0",
    "int4": "0",
    "int8": "0",
    "serial": "0",
    "bigserial": "0",
    "smallserial": "0",
    "json": "{}",
    "jsonb": "{}",
    "xml": "",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "date": "1970-01-01",
    "time": "00:00:00",
    "timestamp": "1970-01-01 00:00:00",
    "timestamptz": "1970-01-01 00:00:00+00",
    "interval": None,
}
_NULLABLE = {"bool", "numeric", "float4", "float8", "int2", "int4", "serial", "int8", "bigserial", "smallserial"}


class UnparsableDefault(Exception):
    """The expression is not a literal Debezium can turn into a value of the column's type."""


def _literal(expression: str) -> str | None:
    """Debezium's extractDefault: the text inside the first quotes, or the bare text; None for NULL::…."""
    if "'" not in expression:
        return None if expression.startswith("NULL::") else expression
    m = _LITERAL.search(expression)
    if m is None:
        raise UnparsableDefault(expression)
    return m.group(1)


def _generated_or_literal(expression: str, placeholder: str | None) -> str | None:
    if _FUNCTION.search(expression) or expression.lower() in _CURRENT:
        if placeholder is None:
            raise UnparsableDefault(expression)
        return placeholder
    return _literal(expression)


def _enum_literal(type_name: str, expression: str) -> str | None:
    """`'V1'::mood` (or `::schema.mood`) → V1 when the cast names the column's enum; otherwise none."""
    value, sep, cast = expression.rpartition("::")
    if not sep or cast.strip('"').rsplit(".", 1)[-1].strip('"') != type_name:
        return None
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == "'" else None


def default_text(column_type: PgType, expression: str | None) -> tuple[bool, str | None]:
    """(has a mapper, the default as text for the column's converter, or None for no default).

    `column_type` is the column's own type (a domain, not its base); raises UnparsableDefault
    where Debezium's mapper throws.
    """
    if expression is None:
        return True, None
    name = column_type.name
    if column_type.kind == "e":
        return True, _enum_literal(name, expression)
    if name not in _PLACEHOLDER:
        return False, None
    if name in _TRIMMED:
        expression = expression.strip()
    if name in _NULLABLE and expression.startswith("NULL::"):
        return True, None
    text = _generated_or_literal(expression, _PLACEHOLDER[name])
    if text is None:
        return True, None
    if name == "bool":
        return True, "t" if text.lower() == "true" else "f"  # Java's Boolean.parseBoolean, as PostgreSQL text
    if name in ("int2", "int4", "int8", "serial", "smallserial", "bigserial"):
        int(text)  # Java's parseShort/parseInt/parseLong: plain integers only
    elif name in ("float4", "float8", "numeric"):
        float(text)
    elif name == "uuid":
        text = str(uuid.UUID(text))
    return True, text


def default_value(column_type: PgType, expression: str | None, convert: Callable[[str], Any]) -> Any:
    """The field's default (None: none), converted as a value of the column; UnparsableDefault if it fails."""
    known, text = default_text(column_type, expression)
    if not known or text is None:
        return None
    try:
        value = convert(text)
    except Exception as e:  # any parse error of the literal: Debezium's "Cannot parse column default value"
        raise UnparsableDefault(expression) from e
    if isinstance(value, Struct):
        return None  # Debezium: "Struct can't be used as default value" (KAFKA-12694)
    return value


def has_mapper(column_type: PgType) -> bool:
    return column_type.kind == "e" or column_type.name in _PLACEHOLDER

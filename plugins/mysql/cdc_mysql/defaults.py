"""Column defaults: information_schema's COLUMN_DEFAULT → Debezium's defaultValueExpression → a Connect value.

MariaDB writes COLUMN_DEFAULT as an SQL expression (`'text'`, `NULL`, `current_timestamp()`);
MySQL 8 writes the bare literal and flags expressions with `DEFAULT_GENERATED` in EXTRA. Both
become the literal, unquoted; CURRENT_TIMESTAMP on a NOT NULL column becomes the epoch, as
Debezium's DDL parser does. Other expressions have no literal and are left out.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import re
from typing import Any

from cdc_mysql.table import ColumnDef

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_BIT_LITERAL = re.compile(r"^b'([01]*)'$", re.I)
_NOW = re.compile(r"^(current_timestamp|now|localtime|localtimestamp)\s*(\(\s*\d*\s*\))?$", re.I)
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}
_EPOCH = "1970-01-01 00:00:00"


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        elif ch == "'" and body[i + 1 : i + 2] == "'":
            out.append("'")
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def default_expression(raw: Any, extra: str, nullable: bool, is_mariadb: bool) -> str | None:
    """Debezium's defaultValueExpression from COLUMN_DEFAULT; None when there is no literal default."""
    if raw is None:
        return None
    text = str(raw).strip()
    expression = "DEFAULT_GENERATED" in extra.upper()
    if is_mariadb:
        if text.upper() == "NULL":
            return None
        if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
            return _unescape(text[1:-1])
        expression = not (_NUMBER.match(text) or _BIT_LITERAL.match(text))
    bits = _BIT_LITERAL.match(text)
    if bits:
        return bits.group(1)
    if _NOW.match(text):
        return None if nullable else _EPOCH
    if expression:
        log.debug("column default %r is an expression: left out of the schema", text)
        return None
    return text


def _time(text: str) -> datetime.timedelta:
    negative = text.startswith("-")
    h, m, s = [*text.lstrip("-+").split(":"), "0", "0"][:3]
    delta = datetime.timedelta(hours=int(h), minutes=int(m), seconds=float(s))
    return -delta if negative else delta


def raw_default(col: ColumnDef, literal: str) -> Any:
    """The literal in the shape PyMySQL returns for the column, ready for the column's converter.

    Raises ValueError (or a decimal/parse error) when the literal does not fit the type.
    """
    t = col.type
    if t in ("tinyint", "smallint", "mediumint", "int", "bigint", "year"):
        low = literal.lower()
        return 1 if low == "true" else 0 if low == "false" else int(decimal.Decimal(literal))
    if t == "bool":
        return literal.lower() == "true" or (literal.lower() != "false" and int(literal) != 0)
    if t == "decimal":
        return decimal.Decimal(literal)
    if t in ("float", "double"):
        return float(literal)
    if t == "bit":
        return literal if set(literal) <= {"0", "1"} else int(literal)
    if t in ("binary", "varbinary", "blob"):
        return literal.encode("utf-8")
    if t == "date":
        return literal if literal.startswith("0000") or "-00" in literal else datetime.date.fromisoformat(literal[:10])
    if t in ("datetime", "timestamp"):
        if literal.startswith("0000") or "-00" in literal[:10]:
            return literal  # a zero date: the converters treat text as zero
        return datetime.datetime.fromisoformat(literal)
    if t == "time":
        return _time(literal.split(" ")[-1])
    if t in ("char", "varchar", "text", "enum", "set", "json"):
        return literal
    raise ValueError(f"no default value conversion for type {t}")

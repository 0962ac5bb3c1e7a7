"""`field.name.adjustment.mode` and `schema.name.adjustment.mode`: Debezium's SchemaNameAdjuster rules.

`none` keeps names as they are. `avro` replaces each character Avro does not allow with `_` (a
leading digit keeps the digit after the `_`, so `1a` and `2a` stay apart); `avro_unicode` replaces it
with `_uXXXX` (its UTF-16 code in hex, at least four digits) and, as Debezium, treats `_` itself as
invalid (it is the escape), so `a_b` becomes `a_u005fb`. Field names allow `[A-Za-z0-9_]`; schema
names (full names) also `.`. Characters are UTF-16 code units, as in Java.
"""

from __future__ import annotations

from collections.abc import Callable

MODES = ("none", "avro", "avro_unicode")
FIELD_KEY = "field.name.adjustment.mode"
SCHEMA_KEY = "schema.name.adjustment.mode"


def _letter(c: str) -> bool:
    return "a" <= c <= "z" or "A" <= c <= "Z"


def _digit(c: str) -> bool:
    return "0" <= c <= "9"


def _units(name: str) -> list[str]:
    """The name's UTF-16 code units, each as a one-character string."""
    data = name.encode("utf-16-le", "surrogatepass")
    return [chr(int.from_bytes(data[i : i + 2], "little")) for i in range(0, len(data), 2)]


def _unicode(c: str) -> str:
    code = f"{ord(c):x}"
    return "_u" + ("00" + code if len(code) <= 2 else code)


def _adjust(name: str, unicode: bool, dots: bool) -> str:
    units = _units(name)
    if not units:
        return name
    out: list[str] = []
    first = units[0]
    if _letter(first) or (first == "_" and not unicode):
        out.append(first)
    elif unicode:
        out.append(_unicode(first))
    else:
        out.append("_" + (first if _digit(first) else ""))
    for c in units[1:]:
        if _letter(c) or (c == "_" and not unicode) or _digit(c) or (dots and c == "."):
            out.append(c)
        else:
            out.append(_unicode(c) if unicode else "_")
    adjusted = "".join(out)
    return adjusted if adjusted != "".join(units) else name


def adjuster(mode: str, full_names: bool = False) -> Callable[[str], str]:
    """The adjuster of a mode: field names (`full_names=False`) or schema full names (dots allowed)."""
    if mode == "avro":
        return lambda name: _adjust(name, unicode=False, dots=full_names)
    if mode == "avro_unicode":
        return lambda name: _adjust(name, unicode=True, dots=full_names)
    return lambda name: name

"""Debezium's `field.name.adjustment.mode` and `schema.name.adjustment.mode`: the one owner of the rule.

Connectors name fields and schemas with it, and the Avro converter checks and adjusts names
with it, so one column gets one name whatever its source. It follows Debezium's
`SchemaNameAdjuster` with its replacement functions (`ReplacementFunction.UNDERSCORE_REPLACEMENT`,
`FieldNameUnderscoreReplacementFunction`, `UnicodeReplacementFunction`,
`FieldNameUnicodeReplacementFunction`), character for character:

- names are read as Java strings, in UTF-16 code units: a character outside the BMP (`😀`) is
  two units, each replaced on its own (`_ud83d_ude00`);
- `none` keeps every name;
- `avro`: a first character that is not a letter or `_` becomes `_` (a digit stays after it:
  `1a` becomes `_1a`, so `1a` and `2a` stay apart); any later character that is not a letter,
  digit or `_` (or `.` in a schema's full name) becomes `_`;
- `avro_unicode`: `_` is the escape, so it is replaced too (`a_b` becomes `a_u005fb`); a first
  character that is not a letter, and a later one that is not a letter or digit (or `.` in a
  full name), becomes `_u` and its code in lower-case hex, padded to four digits only when the
  code has one or two (`_u005f`, `_u101` for `ā`, `_ud83d`), as Java's `Integer.toHexString`
  with Debezium's padding gives.

A name that needs no change is returned as it is.
"""

from __future__ import annotations

from collections.abc import Callable

MODES = ("none", "avro", "avro_unicode")
"""The values of both keys."""


def _letter(c: str) -> bool:
    return "a" <= c <= "z" or "A" <= c <= "Z"


def _digit(c: str) -> bool:
    return "0" <= c <= "9"


def _units(name: str) -> list[str]:
    data = name.encode("utf-16-le", "surrogatepass")
    return [chr(int.from_bytes(data[i : i + 2], "little")) for i in range(0, len(data), 2)]


def _unicode(c: str) -> str:
    code = f"{ord(c):x}"
    return "_u" + ("00" + code if len(code) <= 2 else code)


def adjust(name: str, mode: str, *, full_name: bool = False) -> str:
    """`name` under `mode` (one of MODES): a field name, or with `full_name` a schema's full name
    (`.` allowed after the first character). Unknown modes are treated as `none`."""
    if mode not in ("avro", "avro_unicode") or not name:
        return name
    unicode = mode == "avro_unicode"
    units = _units(name)
    out: list[str] = []
    for i, c in enumerate(units):
        valid = _letter(c) or (c == "_" and not unicode)
        if i:
            valid = valid or _digit(c) or (full_name and c == ".")
        if valid:
            out.append(c)
        elif unicode:
            out.append(_unicode(c))
        else:
            out.append("_" + c if i == 0 and _digit(c) else "_")
    adjusted = "".join(out)
    return name if adjusted == "".join(units) else adjusted


def adjuster(mode: str, *, full_name: bool = False) -> Callable[[str], str]:
    """`adjust` bound to a mode: what a connector keeps for its field (or schema) names."""
    return lambda name: adjust(name, mode, full_name=full_name)

"""Avro names for Connect names: validation, Debezium's adjustment modes and Confluent's scrubbing.

Avro (spec "Names") allows `[A-Za-z_][A-Za-z0-9_]*` for a record's simple name, each part of a
namespace and a field name. Connect names can hold anything (a topic prefix with `-`, a column
called `order total`), so a name Avro refuses is, by the converter's settings:

- adjusted as Debezium's `SchemaNameAdjuster` does (`schema.name.adjustment.mode` for schema
  names, `field.name.adjustment.mode` for field names): `avro` replaces each invalid character
  with `_` (a leading digit keeps the digit after an inserted `_`: `24Col` -> `_24Col`);
  `avro_unicode` replaces it with `_u` + its UTF-16 code in hex (two-digit codes padded with
  `00`) and treats `_` itself as invalid, since it is the escape (`_` -> `_u005f`);
- or scrubbed as Confluent's AvroData does with `scrub.invalid.names=true` (URL-encode, then
  every other invalid character to `_`, a leading digit prefixed with `x`);
- or refused with a one-line error (`none`, the default of both, as in Debezium and Confluent).

The connectors apply the same Debezium modes at the source (cdc_mysql/schema_options.py,
cdc_postgres/names.py); the converter cannot import plugins, so the rule is re-expressed here
for records from any connector.
"""

from __future__ import annotations

import re

from cdc.api import name_adjustment
from cdc.api.errors import DataException

__all__ = ["MODES", "NameRules", "is_valid_name"]

MODES = name_adjustment.MODES

_VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_valid_name(name: str) -> bool:
    """True for a valid Avro simple name (one part of a full name, or a field name)."""
    return bool(_VALID.match(name))


def _is_letter(c: str) -> bool:
    return ("A" <= c <= "Z") or ("a" <= c <= "z")


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


def debezium_adjust(name: str, mode: str, allow_dots: bool) -> str:
    """`name` under Debezium's `avro` / `avro_unicode` adjustment (`none` returns it unchanged): the
    connectors' own rule, cdc.api.name_adjustment."""
    return name_adjustment.adjust(name, mode, full_name=allow_dots)


def _url_encode(text: str) -> str:
    # java.net.URLEncoder (UTF-8): letters, digits and `.-*_` stay, space is `+`, the rest `%XX`.
    out: list[str] = []
    for c in text:
        if _is_letter(c) or _is_digit(c) or c in ".-*_":
            out.append(c)
        elif c == " ":
            out.append("+")
        else:
            out.extend(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
    return "".join(out)


def confluent_scrub(name: str) -> str:
    """One name part under Confluent's `scrub.invalid.names` (AvroData.doScrubName)."""
    if not name or is_valid_name(name):
        return name
    encoded = _url_encode(name)
    if _is_digit(encoded[0]):
        encoded = "x" + encoded
    return "".join(c if (_is_letter(c) or _is_digit(c) or c == "_") else "_" for c in encoded)


class NameRules:
    """How this converter turns Connect schema and field names into Avro names."""

    __slots__ = ("_field", "_schema", "field_mode", "schema_mode", "scrub")

    def __init__(self, schema_mode: str = "none", field_mode: str = "none", scrub: bool = False) -> None:
        self.schema_mode = schema_mode
        self.field_mode = field_mode
        self.scrub = scrub
        self._schema: dict[str, tuple[str | None, str]] = {}
        self._field: dict[str, str] = {}

    def split(self, full_name: str) -> tuple[str | None, str]:
        """(namespace, name) of a Connect schema name, split at the last `.` (AvroData.splitName)."""
        cached = self._schema.get(full_name)
        if cached is not None:
            return cached
        adjusted = debezium_adjust(full_name, self.schema_mode, allow_dots=True)
        parts = adjusted.split(".")
        if self.scrub:
            parts = [confluent_scrub(p) for p in parts]
        for part in parts:
            if not is_valid_name(part):
                raise DataException(
                    f"AvroConverter: schema name {full_name!r} is not a valid Avro name ({part!r}); set"
                    " schema.name.adjustment.mode=avro on the connector (or on the converter), or"
                    " scrub.invalid.names=true on the converter"
                )
        result = (".".join(parts[:-1]) or None, parts[-1])
        self._schema[full_name] = result
        return result

    def field(self, name: str, record: str) -> str:
        """The Avro field name of Connect field `name` of `record` (named in errors)."""
        cached = self._field.get(name)
        if cached is not None:
            return cached
        adjusted = debezium_adjust(name, self.field_mode, allow_dots=False)
        if self.scrub:
            adjusted = confluent_scrub(adjusted)
        if not is_valid_name(adjusted):
            raise DataException(
                f"AvroConverter: field {name!r} of {record} is not a valid Avro name; set"
                " field.name.adjustment.mode=avro on the connector (or on the converter), or"
                " scrub.invalid.names=true on the converter"
            )
        self._field[name] = adjusted
        return adjusted

    @property
    def identity(self) -> bool:
        """True when no rule can change a name (names are only validated)."""
        return self.schema_mode == "none" and self.field_mode == "none" and not self.scrub

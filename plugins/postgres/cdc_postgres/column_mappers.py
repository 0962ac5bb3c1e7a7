"""Debezium's column mappers for the PostgreSQL connector (its ColumnMappers, rule for rule).

Keys, each a comma-separated list of anchored, case-insensitive regexes of `schema.table.column`
(`datatype.propagate.source.type`: of `schema.table.typename`):

- `column.truncate.to.<n>.chars`: string (and binary) values longer than n are cut to n; the field
  schema gets `truncateLength=n` (only where the column may be longer than n);
- `column.mask.with.<n>.chars`: a character column's value becomes n `*`, a null too (Debezium's
  MaskingValueConverter returns the mask whatever it is given);
- `column.mask.hash.<algorithm>.with.salt.<salt>` and `column.mask.hash.v2.<algorithm>...`: a
  character column's value becomes the hex digest of salt + value (v1: the Java-serialized String,
  v2: its bytes), cut to the column's length (a null stays null); masks add the schema parameter
  `masked=true`;
- `column.propagate.source.type` / `datatype.propagate.source.type`: see `source_type`.

As in Debezium a column takes the first rule that matches it, in that order: truncation rules, then
masks, then source-type propagation, then hashes. Masks apply to character columns (char, varchar,
text, name; not citext, json or others, which pgjdbc does not type as characters).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api import ConfigException

_TRUNCATE = re.compile(r"^column\.truncate\.to\.(\d+)\.chars$")
_MASK = re.compile(r"^column\.mask\.with\.(\d+)\.chars$")
_HASH = re.compile(r"^column\.mask\.hash\.(?P<v2>v2\.)?(?P<algorithm>[^.]+)\.with\.salt\.(?P<salt>.+)$")
PROPAGATE_COLUMN = "column.propagate.source.type"
PROPAGATE_DATATYPE = "datatype.propagate.source.type"
CHARACTER_TYPES = frozenset({"bpchar", "varchar", "text", "name", "char"})
# Java MessageDigest names → hashlib
_ALGORITHMS = {
    "md2": None,
    "md5": "md5",
    "sha": "sha1",
    "sha1": "sha1",
    "sha-1": "sha1",
    "sha-224": "sha224",
    "sha-256": "sha256",
    "sha-384": "sha384",
    "sha-512": "sha512",
    "sha-512/224": "sha512_224",
    "sha-512/256": "sha512_256",
    "sha3-224": "sha3_224",
    "sha3-256": "sha3_256",
    "sha3-384": "sha3_384",
    "sha3-512": "sha3_512",
}

# A column's value after its type conversion → the value emitted. As in Debezium's TableSchemaBuilder,
# it is applied to every value of the column, null included, in the snapshot and in streaming, in
# `before` and `after` alike (schema.ColumnInfo.null_value): each mapper decides what a null becomes.
Mapper = Callable[[Any], Any]


def is_mapper_key(name: str) -> bool:
    return bool(_TRUNCATE.match(name) or _MASK.match(name) or _HASH.match(name)) or name in (
        PROPAGATE_COLUMN,
        PROPAGATE_DATATYPE,
    )


def _patterns(key: str, value: Any) -> tuple[re.Pattern[str], ...]:
    items: Iterable[str] = value if isinstance(value, list) else str(value or "").split(",")
    out = []
    for item in (i.strip() for i in items):
        if item:
            try:
                out.append(re.compile(item, re.IGNORECASE))
            except re.error as e:
                raise ConfigException(
                    f"Invalid value {item!r} for configuration {key}: not a valid regular expression ({e})", key, value
                ) from e
    return tuple(out)


def java_serialized(text: str) -> bytes:
    """ObjectOutputStream.writeObject(String): stream header, TC_STRING or TC_LONGSTRING, modified UTF-8."""
    data = bytearray()
    raw = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(raw), 2):
        unit = raw[i] | raw[i + 1] << 8
        if 0 < unit < 0x80:
            data.append(unit)
        elif unit < 0x800:
            data += bytes((0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)))
        else:
            data += bytes((0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)))
    head = b"\xac\xed\x00\x05"
    if len(data) <= 0xFFFF:
        return head + b"\x74" + len(data).to_bytes(2, "big") + bytes(data)
    return head + b"\x7c" + len(data).to_bytes(8, "big") + bytes(data)


@dataclass(frozen=True)
class Rule:
    kind: str  # truncate | mask | propagate | hash
    key: str
    patterns: tuple[re.Pattern[str], ...]
    by_datatype: bool = False
    length: int = 0  # truncate, mask
    algorithm: str = ""  # hash: hashlib name
    salt: bytes = b""
    v2: bool = False

    def matches(self, table_id: str, column: str, type_name: str) -> bool:
        name = f"{table_id}.{type_name if self.by_datatype else column}"
        return any(p.fullmatch(name) for p in self.patterns)


@dataclass(frozen=True)
class ColumnMapping:
    """What a rule does to one column: schema parameters and a value mapper (None: values unchanged)."""

    parameters: dict[str, str]
    mapper: Mapper | None
    propagate: bool = False


class ColumnMappers:
    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules

    @classmethod
    def from_config(cls, props: Mapping[str, Any]) -> ColumnMappers:
        truncate, mask, propagate, hashes = [], [], [], []
        for key, value in props.items():
            if m := _TRUNCATE.match(key):
                truncate.append(Rule("truncate", key, _patterns(key, value), length=int(m.group(1))))
            elif m := _MASK.match(key):
                mask.append(Rule("mask", key, _patterns(key, value), length=int(m.group(1))))
            elif key in (PROPAGATE_COLUMN, PROPAGATE_DATATYPE):
                propagate.append(Rule("propagate", key, _patterns(key, value), by_datatype=key == PROPAGATE_DATATYPE))
            elif m := _HASH.match(key):
                algorithm = _ALGORITHMS.get(m.group("algorithm").lower())
                if algorithm is None:
                    raise ConfigException(
                        f"{key}: {m.group('algorithm')} is not a hash algorithm this connector knows; use one of "
                        "MD5, SHA-1, SHA-256, SHA-384, SHA-512 (Java MessageDigest names)",
                        key,
                        value,
                    )
                salt = m.group("salt").encode()
                hashes.append(
                    Rule("hash", key, _patterns(key, value), algorithm=algorithm, salt=salt, v2=bool(m.group("v2")))
                )
        return cls([*truncate, *mask, *propagate, *hashes])

    def __bool__(self) -> bool:
        return bool(self.rules)

    def mapping(self, table_id: str, column: str, type_name: str, base_name: str, length: int) -> ColumnMapping | None:
        """The first rule's effect on `table_id.column` of type `type_name` (domains: `base_name`), or None."""
        rule = next((r for r in self.rules if r.matches(table_id, column, type_name)), None)
        if rule is None:
            return None
        characters = base_name in CHARACTER_TYPES
        if rule.kind == "propagate":
            return ColumnMapping({}, None, propagate=True)
        if rule.kind == "truncate":
            if not (length < 0 or length > rule.length):
                return ColumnMapping({}, None)
            return ColumnMapping({"truncateLength": str(rule.length)}, _truncator(rule.length))
        if rule.kind == "mask":
            mask = "*" * rule.length
            # Every value, null included, becomes the mask (Debezium's MaskStrings.MaskingValueConverter).
            return ColumnMapping({"masked": "true"}, (lambda _v: mask) if characters else None)
        return ColumnMapping({"masked": "true"}, _hasher(rule, length) if characters else None)


def _truncator(n: int) -> Mapper:
    # Only strings and binary values are cut; a null stays null (Debezium's TruncatingValueConverter).
    def apply(value: Any) -> Any:
        if isinstance(value, (str, bytes)) and len(value) > n:
            return value[:n]
        return value

    return apply


def _hasher(rule: Rule, length: int) -> Mapper:
    def apply(value: Any) -> Any:
        if value is None:
            return None  # Debezium's HashValueConverter: a null is not Serializable, so no hash
        data = str(value).encode() if rule.v2 else java_serialized(str(value))
        digest = hashlib.new(rule.algorithm, rule.salt + data).hexdigest()
        return digest[:length] if length > 0 else digest

    return apply

"""`column.mask.hash.<algorithm>.with.salt.<salt>` (and `column.mask.hash.v2.…`): Debezium's MaskStrings hashing.

The matching columns (regexes of `db.table.column`, comma-separated) of a character type (CHAR,
VARCHAR, TEXT, ENUM, SET) hold the hex digest of the salt followed by the value, cut to the column's
length where it has one; every matching field gets the schema parameter `masked=true`, as Debezium's
mapper adds it. The value is hashed as Debezium's hashing strategies give it:

- v1 (`column.mask.hash.…`): the value's Java serialization (ObjectOutputStream of a String: the
  stream header, TC_STRING or TC_LONGSTRING, the length and the modified UTF-8 bytes);
- v2 (`column.mask.hash.v2.…`): the value's UTF-8 bytes.

Algorithms are Java's MessageDigest names (MD5, SHA-1, SHA-256, SHA-512, SHA3-256, …).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc.api import ConfigException, ConfigValue
from cdc_debezium.filters import compile_list

HASH_KEY = re.compile(r"^column\.mask\.hash\.(?:(v2)\.)?([^.]+)\.with\.salt\.(.+)$")
STRING_TYPES = {"char", "varchar", "text", "enum", "set"}

_JAVA_NAMES = {
    "MD5": "md5",
    "SHA": "sha1",
    "SHA1": "sha1",
    "SHA-1": "sha1",
    "SHA-224": "sha224",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
    "SHA-512/224": "sha512_224",
    "SHA-512/256": "sha512_256",
    "SHA3-224": "sha3_224",
    "SHA3-256": "sha3_256",
    "SHA3-384": "sha3_384",
    "SHA3-512": "sha3_512",
}


def _modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8: each UTF-16 unit on its own, NUL as two bytes."""
    out = bytearray()
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0 < c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    return bytes(out)


def java_serialized(text: str) -> bytes:
    """ObjectOutputStream.writeObject(text) (Debezium's v1 hashing input)."""
    body = _modified_utf8(text)
    head = b"\xac\xed\x00\x05"
    if len(body) <= 0xFFFF:
        return head + b"\x74" + len(body).to_bytes(2, "big") + body
    return head + b"\x7c" + len(body).to_bytes(8, "big") + body


@dataclass(frozen=True)
class HashRule:
    key: str
    patterns: list[re.Pattern[str]]
    algorithm: str  # hashlib name
    salt: bytes
    v2: bool

    def hasher(self, length: int | None) -> Callable[[Any], Any]:
        algorithm, salt, v2 = self.algorithm, self.salt, self.v2

        def apply(value: Any) -> Any:
            if value is None:
                return None
            text = str(value)
            digest = hashlib.new(algorithm, salt + (text.encode("utf-8") if v2 else java_serialized(text)))
            out = digest.hexdigest()
            return out[:length] if length and length > 0 else out

        return apply


def _rule(key: str, raw: Any) -> HashRule | None:
    m = HASH_KEY.match(key)
    if m is None:
        return None
    v2, java_name, salt = m.groups()
    algorithm = _JAVA_NAMES.get(java_name.upper())
    if algorithm is None:
        raise ConfigException(
            f"{key}: {java_name} is not a hash algorithm this connector knows; use one of " + ", ".join(_JAVA_NAMES),
            key,
            raw,
        )
    text = ",".join(raw) if isinstance(raw, list | tuple) else str(raw or "")
    return HashRule(key, compile_list(key, [p.strip() for p in text.split(",") if p.strip()]), algorithm,
                    salt.encode("utf-8"), v2 is not None)  # fmt: skip


@dataclass(frozen=True)
class HashMasks:
    rules: list[HashRule] = field(default_factory=list)

    @classmethod
    def from_config(cls, props: Mapping[str, Any]) -> HashMasks:
        return cls([r for key, raw in props.items() if (r := _rule(key, raw)) is not None])

    def rule_for(self, column_id: str) -> HashRule | None:
        for rule in self.rules:
            if any(p.fullmatch(column_id) for p in rule.patterns):
                return rule
        return None


def errors(props: Mapping[str, Any]) -> list[ConfigValue]:
    """One ConfigValue per hash key (so the worker counts it as read), with an error for an unknown
    algorithm or a bad regex, naming the key."""
    out = []
    for key, raw in props.items():
        if not HASH_KEY.match(key):
            continue
        cv = ConfigValue(key, raw)
        try:
            _rule(key, raw)
        except ConfigException as e:
            cv.add_error_message(str(e))
        out.append(cv)
    return out

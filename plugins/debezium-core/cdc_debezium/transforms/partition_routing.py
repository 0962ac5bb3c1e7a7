"""io.debezium.transforms.partitions.PartitionRouting: the Kafka partition from change event fields.

Debezium's PartitionRouting: the values of `partition.payload.fields` (dotted paths into the
envelope; `change.x` means `after.x`, or `before.x` for deletes; fields absent from the event are
skipped) are hashed with `partition.hash.function` (`java`: Java's hashCode, the default, or
`murmur`: Debezium's MurmurHash3 x64 32-bit, seed 9001), summed as Java ints and taken modulo
`partition.topic.num`. The hashes are Java's, so a record lands on the partition Debezium would
choose. Tombstones, non-envelope records, truncate and message events, and events with none of the
fields pass through unchanged.
"""

from __future__ import annotations

import struct as binary
from collections.abc import Mapping
from typing import Any

from cdc.api import (
    NO_DEFAULT_VALUE,
    AbstractConfig,
    ConfigDef,
    ConfigType,
    DataException,
    Importance,
    Schema,
    Struct,
    Transformation,
)
from cdc.api.data import Type
from cdc_debezium.transforms._support import R, config_error, is_envelope

PAYLOAD_FIELDS = "partition.payload.fields"
TOPIC_PARTITION_NUM = "partition.topic.num"
HASH_FUNCTION = "partition.hash.function"
CHANGE = "change"
_MASK64 = (1 << 64) - 1


def _fields(name: str, value: Any) -> None:
    if value is None:
        raise config_error(name, None, f"The '{name}' value is invalid: A value is required")
    if not value or any(not str(v).strip() for v in value):
        raise config_error(
            name, ",".join(value), f"The '{name}' value is invalid: Empty string element(s) not permitted"
        )


def _positive(name: str, value: Any) -> None:
    if value is None:
        raise config_error(name, None, f"The '{name}' value is invalid: A value is required")
    if value <= 0:
        raise config_error(name, value, f"The '{name}' value is invalid: A positive integer is expected")


def _hash_function(name: str, value: Any) -> None:
    if value is not None and str(value).strip().lower() not in ("java", "murmur"):
        raise config_error(name, value, "must be java or murmur")


CONFIG_DEF = (
    ConfigDef()
    .define(PAYLOAD_FIELDS, ConfigType.LIST, NO_DEFAULT_VALUE, _fields, Importance.HIGH,
            "Envelope fields whose values choose the partition, nested with dots: after.name, source.table, "
            "change.name (change is after, or before for deletes).", group="partitions")
    .define(TOPIC_PARTITION_NUM, ConfigType.INT, NO_DEFAULT_VALUE, _positive, Importance.HIGH,
            "The number of partitions of the topics this SMT routes (select them with a TopicNameMatches "
            "predicate).", group="partitions")
    .define(HASH_FUNCTION, ConfigType.STRING, "java", _hash_function, Importance.LOW,
            "java (Java's hashCode, the default) or murmur (MurmurHash3).", group="partitions")
)  # fmt: skip


# -- Java's hashCode ------------------------------------------------------------------------
def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _string_hash(s: str) -> int:
    h = 0
    for unit in binary.unpack(f"<{len(s.encode('utf-16-le')) // 2}H", s.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return _int32(h)


def _long_hash(v: int) -> int:
    v &= _MASK64
    return _int32(v ^ (v >> 32))


def java_hash(value: Any, schema: Schema | None) -> int:
    """Java's `hashCode()` of the boxed value Kafka Connect would hold for `schema`."""
    t = schema.type if schema is not None else None
    if isinstance(value, bool):
        return 1231 if value else 1237
    if isinstance(value, str):
        return _string_hash(value)
    if isinstance(value, int):
        if t is Type.INT64 or (t is None and not -(2**31) <= value < 2**31):
            return _long_hash(value)
        return _int32(value)
    if isinstance(value, float):
        if t is Type.FLOAT32:
            return _int32(binary.unpack("<i", binary.pack("<f", value))[0])
        return _long_hash(binary.unpack("<q", binary.pack("<d", value))[0])
    raise DataException(
        f"PartitionRouting cannot hash a {type(value).__name__} the way Java does; use string, number or boolean fields"
    )


# -- Debezium's MurmurHash3 (x64, 64-bit state, upper 32 bits, seed 9001) --------------------
def _rotl(v: int, n: int) -> int:
    return ((v << n) | (v >> (64 - n))) & _MASK64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _MASK64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _MASK64
    return k ^ (k >> 33)


def murmur3_x64_32(data: bytes, seed: int = 9001) -> int:
    h1, h2 = 0x9368E53C2F6AF274 ^ seed, 0x586DCD208F7CD3FD ^ seed
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F

    def bmix(k1: int, k2: int) -> None:
        nonlocal h1, h2, c1, c2
        k1 = (_rotl((k1 * c1) & _MASK64, 23) * c2) & _MASK64
        h1 = ((h1 ^ k1) + h2) & _MASK64
        h2 = _rotl(h2, 41)
        k2 = (_rotl((k2 * c2) & _MASK64, 23) * c1) & _MASK64
        h2 = ((h2 ^ k2) + h1) & _MASK64
        h1 = (h1 * 3 + 0x52DCE729) & _MASK64
        h2 = (h2 * 3 + 0x38495AB5) & _MASK64
        c1 = (c1 * 5 + 0x7B7D159C) & _MASK64
        c2 = (c2 * 5 + 0x6BCE6396) & _MASK64

    blocks = len(data) // 16
    for i in range(blocks):
        k1, k2 = binary.unpack_from("<QQ", data, i * 16)
        bmix(k1, k2)
    tail = data[blocks * 16 :]
    if tail:
        k1 = k2 = 0
        for i, byte in enumerate(tail):  # Java's bytes are signed: each one is sign-extended
            signed = (byte - 256 if byte > 127 else byte) & _MASK64
            if i < 8:
                k1 ^= (signed << (8 * i)) & _MASK64
            else:
                k2 ^= (signed << (8 * (i - 8))) & _MASK64
        bmix(k1, k2)
    h2 ^= len(data)
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _MASK64
    return _int32(h1 >> 32)


def murmur_hash(value: Any, schema: Schema | None) -> int:
    """Debezium's MurmurHash3.hash(Object): strings by their UTF-8 bytes, bytes as they are,
    anything else by the hash of its Java hashCode's four bytes."""
    if isinstance(value, str):
        return murmur3_x64_32(value.encode("utf-8", "replace"))
    if isinstance(value, bytes | bytearray):
        return murmur3_x64_32(bytes(value))
    return murmur3_x64_32(binary.pack("<i", java_hash(value, schema)))


class PartitionRouting(Transformation[R]):
    """io.debezium.transforms.partitions.PartitionRouting"""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._paths = [tuple(p.strip() for p in f.split(".")) for f in config.get_list(PAYLOAD_FIELDS) or []]
        self._partitions = int(config.get_int(TOPIC_PARTITION_NUM) or 1)
        murmur = str(config.get_string(HASH_FUNCTION)).strip().lower() == "murmur"
        self._hash = murmur_hash if murmur else java_hash

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def apply(self, record: R) -> R | None:
        if record.value is None or not is_envelope(record.value_schema) or not isinstance(record.value, Struct):
            return record
        envelope = record.value
        op = envelope.get_without_default("op") if envelope.schema.field("op") else None
        if op in ("t", "m"):
            return record
        found = [v for v in (self._lookup(envelope, path, op) for path in self._paths) if v is not None]
        if not found:
            return record
        total = 0
        for value, schema in found:
            total = _int32(total + self._hash(value, schema))
        normalized = total & 0x7FFFFFFF
        if normalized == 0x7FFFFFFF:
            normalized = 0
        partition = normalized % self._partitions
        return record.new_record(
            record.topic, partition, record.key_schema, record.key, record.value_schema, record.value, record.timestamp
        )

    @staticmethod
    def _lookup(envelope: Struct, path: tuple[str, ...], op: Any) -> tuple[Any, Schema] | None:
        current: Any = envelope
        for i, name in enumerate(path):
            if i < len(path) - 1 and name == CHANGE:
                name = "before" if op == "d" else "after"
            if not isinstance(current, Struct):
                return None
            field = current.schema.field(name)
            if field is None:
                return None
            current = current.get(field)
            if current is None:
                return None
            if i == len(path) - 1:
                return current, field.schema
        return None
